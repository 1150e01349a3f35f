package testenv

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
)

// moduleDir is where InstallModule puts module binaries in a target.
const moduleDir = "/usr/local/libexec/richt"

var builds sync.Map // buildKey -> *buildOnce

type buildKey struct {
	pkg, goarch, name string
	// defaults is the JSON of Defaults' arguments: binaries with other defaults are other
	// files, since RunModule finds a binary's defaults by its path.
	defaults string
}

type buildOnce struct {
	once sync.Once
	path string
	err  error
}

// builtDefaults remembers the arguments of [Defaults] for every binary built with them
// (path -> map[string]any).
var builtDefaults sync.Map

// builtArch remembers the GOARCH of every binary BuildModule made for another
// architecture than the host's (path -> GOARCH), so RunModule runs it under QEMU.
var builtArch sync.Map

// BuildOption changes what BuildModule builds.
type BuildOption func(*buildKey)

// Arch cross-compiles for GOARCH goarch (arm64, ppc64le, s390x, ...). RunModule runs such
// a binary in the target under QEMU's user-mode emulator ([EmulatorPath], copied into the
// target); its child processes (rpm, dnf, systemctl) run natively.
func Arch(goarch string) BuildOption { return func(k *buildKey) { k.goarch = goarch } }

// Named gives the binary the file name name: a multi-call binary (one program holding
// several modules) picks the module to run by its file name.
func Named(name string) BuildOption { return func(k *buildKey) { k.name = name } }

// defaultModuleTimeout is ModuleTimeout without TESTENV_MODULE_TIMEOUT: twelve times the
// 5 s a systemd module may default to. On the 2-core machine this suite is measured on, a
// manager reload took 2.6 s under the suite's own load (issue 29), so a 5 s deadline
// meant for an idle host passed in a test that was not about deadlines.
const defaultModuleTimeout = "60s"

// ModuleTimeout is the deadline a test gives module runs that are not about a deadline:
// TESTENV_MODULE_TIMEOUT (a positive Go duration, such as 90s or 2m) or 60s. It fits a
// test machine running several targets at once; a module's own default is meant for a
// host doing one thing. Use it with [Defaults]:
//
//	testenv.BuildModule(t, "./cmd/NAME", testenv.Defaults(map[string]any{"timeout": testenv.ModuleTimeout()}))
//
// An invalid TESTENV_MODULE_TIMEOUT panics, naming the variable: every run would
// otherwise fail on it with a message about the module's parameter.
func ModuleTimeout() string {
	v := os.Getenv("TESTENV_MODULE_TIMEOUT")
	if v == "" {
		return defaultModuleTimeout
	}
	if d, err := time.ParseDuration(v); err != nil || d <= 0 {
		panic(fmt.Sprintf("TESTENV_MODULE_TIMEOUT=%q is not a positive Go duration (such as 90s or 2m)", v))
	}
	return v
}

// Defaults gives the binary arguments that every run of it gets where the run's own
// arguments do not set the key, as Ansible's module_defaults does for a play: for
// example a deadline that fits a loaded test machine, {"timeout": [ModuleTimeout]()}, for
// a module whose own default is meant for an idle host. Only top-level keys are filled;
// a run that sets the key keeps its value, so a test about the module's own default or
// about a deadline passing sets "timeout" itself. A key set to nil in args removes the
// default for that run, and the module sees its own default.
func Defaults(args map[string]any) BuildOption {
	data, err := json.Marshal(args)
	if err != nil {
		// The arguments are a test's literal; one that JSON cannot encode is a bug in it.
		panic(fmt.Sprintf("testenv.Defaults: %v", err))
	}
	return func(k *buildKey) { k.defaults = string(data) }
}

// BuildModule builds the Go package pkg as a static Linux binary (CGO_ENABLED=0,
// GOOS=linux), once per test process and options, and returns its path on the host. pkg
// is what go build takes, resolved in the main module's root: a relative path such as
// "./cmd/my_module" or an import path. A failed build fails the test.
func BuildModule(tb testing.TB, pkg string, opts ...BuildOption) string {
	tb.Helper()
	key := buildKey{pkg: pkg, goarch: runtime.GOARCH}
	for _, o := range opts {
		o(&key)
	}
	v, _ := builds.LoadOrStore(key, &buildOnce{})
	b := v.(*buildOnce)
	b.once.Do(func() { b.path, b.err = buildModule(key) })
	if b.err != nil {
		tb.Fatalf("%v", b.err)
	}
	return b.path
}

// linked holds one go build per package and architecture: the binaries of one package
// under other names or with other defaults are links to it, since a name and defaults
// change nothing in the build (a multi-call binary picks its module by its file name),
// and a link of a static binary costs a test process seconds of CPU each time.
var linked sync.Map // buildKey{pkg, goarch} -> *buildOnce

func buildModule(k buildKey) (string, error) {
	v, _ := linked.LoadOrStore(buildKey{pkg: k.pkg, goarch: k.goarch}, &buildOnce{})
	raw := v.(*buildOnce)
	raw.once.Do(func() { raw.path, raw.err = goBuild(k.pkg, k.goarch) })
	if raw.err != nil {
		return "", raw.err
	}
	dir, err := newBuildDir("bin")
	if err != nil {
		return "", err
	}
	name := k.name
	if name == "" {
		name = filepath.Base(k.pkg)
	}
	out := filepath.Join(dir, name)
	if err := os.Link(raw.path, out); err != nil {
		return "", fmt.Errorf("module %s for %s as %s: %w", k.pkg, k.goarch, name, err)
	}
	if k.goarch != runtime.GOARCH {
		builtArch.Store(out, k.goarch)
	}
	if k.defaults != "" {
		var d map[string]any
		if err := json.Unmarshal([]byte(k.defaults), &d); err != nil {
			return "", fmt.Errorf("module defaults of %s: %w", k.pkg, err)
		}
		builtDefaults.Store(out, d)
	}
	return out, nil
}

// Emulator is the name of QEMU's user-mode emulator for GOARCH goarch (qemu-aarch64,
// qemu-s390x, ...), as QEMU names the program.
func Emulator(goarch string) string {
	arch := map[string]string{"amd64": "x86_64", "arm64": "aarch64", "386": "i386", "arm": "arm"}[goarch]
	if arch == "" {
		arch = goarch // ppc64le, s390x, riscv64: the same names
	}
	return "qemu-" + arch
}

// qemuDirEnv names a directory of QEMU user-mode emulators (qemu-ARCH) to run foreign
// builds with, instead of defaultQEMUDir.
const qemuDirEnv = "TESTENV_QEMU_DIR"

// defaultQEMUDir is where make setup (.ci/setup-host) unpacks Debian trixie's emulators
// (QEMU 10). Debian 12's own (qemu-user-static, QEMU 7.2) is the fallback: under it a
// child the emulated program forks now and then deadlocks before it executes anything,
// and the program waits for it for ever (CI lost a run of modules/arch_test.go to one:
// the s390x supervisor's rpm never started, so it never opened DNF's gate).
const defaultQEMUDir = "/opt/richt/qemu-user/bin"

// EmulatorPath is the host's QEMU user-mode emulator for goarch: qemu-ARCH in
// TESTENV_QEMU_DIR when that is set, else in /opt/richt/qemu-user/bin (make setup puts
// QEMU 10 there), else Debian 12's /usr/bin/qemu-ARCH-static.
func EmulatorPath(goarch string) (string, error) {
	name := Emulator(goarch)
	if dir := os.Getenv(qemuDirEnv); dir != "" {
		p := filepath.Join(dir, name)
		if _, err := os.Stat(p); err != nil {
			return "", fmt.Errorf("%s=%s has no emulator for %s: %w", qemuDirEnv, dir, goarch, err)
		}
		return p, nil
	}
	p := filepath.Join(defaultQEMUDir, name)
	if _, err := os.Stat(p); err == nil {
		return p, nil
	}
	p = "/usr/bin/" + name + "-static"
	if _, err := os.Stat(p); err != nil {
		return "", fmt.Errorf("no QEMU user-mode emulator for %s in %s or /usr/bin (make setup unpacks one): %w", goarch, defaultQEMUDir, err)
	}
	return p, nil
}

// goBuild builds pkg for goarch into a directory of its own.
func goBuild(pkg, goarch string) (string, error) {
	dir, err := newBuildDir("build")
	if err != nil {
		return "", err
	}
	out := filepath.Join(dir, filepath.Base(pkg))
	return out, goBuildTo(pkg, goarch, out)
}

// goBuildTo builds pkg for linux/goarch into out.
func goBuildTo(pkg, goarch, out string) error {
	root, err := moduleRoot()
	if err != nil {
		return err
	}
	cmd := exec.Command("go", "build", "-trimpath", "-ldflags=-s -w", "-o", out, pkg)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH="+goarch)
	if msg, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("build module %s for %s: %w\n%s", pkg, goarch, err, msg)
	}
	return nil
}

func moduleRoot() (string, error) {
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("find main module: %w", err)
	}
	gomod := strings.TrimSpace(string(out))
	if gomod == "" || gomod == os.DevNull {
		return "", fmt.Errorf("find main module: not inside a Go module")
	}
	return filepath.Dir(gomod), nil
}

// Result is a module's parsed JSON result.
type Result map[string]any

// Changed is the result's "changed".
func (r Result) Changed() bool { b, _ := r["changed"].(bool); return b }

// Failed is the result's "failed".
func (r Result) Failed() bool { b, _ := r["failed"].(bool); return b }

// Msg is the result's "msg".
func (r Result) Msg() string { s, _ := r["msg"].(string); return s }

// String is a top-level string fact.
func (r Result) String(key string) string { s, _ := r[key].(string); return s }

// Strings is a top-level list-of-strings fact.
func (r Result) Strings(key string) []string {
	l, _ := r[key].([]any)
	out := make([]string, 0, len(l))
	for _, v := range l {
		s, _ := v.(string)
		out = append(out, s)
	}
	return out
}

// Map is a top-level object fact.
func (r Result) Map(key string) map[string]any { m, _ := r[key].(map[string]any); return m }

// InstallModule copies a module binary (from [BuildModule]) into the target, once per
// target, and returns its path there. RunModule calls it; call it yourself to run the
// binary in a way RunModule does not, for example as another user or in the background
// to kill it midway.
func (t *Target) InstallModule(ctx context.Context, binary string) (string, error) {
	// The lock is not held during the copy (CopyFile takes it for its staging name); two
	// first runs at once both copy, harmlessly.
	dest := moduleDir + "/" + filepath.Base(binary)
	if goarch, ok := builtArch.Load(binary); ok {
		dest = moduleDir + "/" + goarch.(string) + "/" + filepath.Base(binary)
	}
	t.mu.Lock()
	done := t.installed[binary]
	t.mu.Unlock()
	if done {
		return dest, nil
	}
	if err := t.CopyFile(ctx, binary, dest, 0o755); err != nil {
		return "", err
	}
	t.mu.Lock()
	t.installed[binary] = true
	t.mu.Unlock()
	return dest, nil
}

// installEmulator copies the host's QEMU user-mode emulator for goarch ([EmulatorPath])
// into the target, once per target, and returns its path there. It is a static binary, so
// it runs in any target; without binfmt_misc it runs only the program it is given, and
// that program's children run natively.
func (t *Target) installEmulator(ctx context.Context, goarch string) (string, error) {
	host, err := EmulatorPath(goarch)
	if err != nil {
		return "", fmt.Errorf("run a %s build: %w", goarch, err)
	}
	return t.InstallModule(ctx, host)
}

// ModuleArgs is what a run of binary with args gets: args with the binary's [Defaults]
// filled in where args has no such key (a key args sets to nil is dropped, so the module
// applies its own default). RunModule applies it; use it when you run a binary from
// [Target.InstallModule] yourself.
func ModuleArgs(binary string, args map[string]any) map[string]any {
	v, ok := builtDefaults.Load(binary)
	if !ok {
		return args
	}
	out := map[string]any{}
	for k, val := range v.(map[string]any) {
		out[k] = val
	}
	for k, val := range args {
		if val == nil {
			if _, isDefault := out[k]; isDefault {
				delete(out, k)
				continue
			}
		}
		out[k] = val
	}
	return out
}

// RunModuleRaw runs a module binary in the target the way Ansible does (MODULE ARGS_FILE,
// working directory /) and returns its raw stdout. A binary built for another architecture
// ([Arch]) runs under QEMU (EMULATOR MODULE ARGS_FILE). A binary built with [Defaults]
// gets them where args does not set the key.
func (t *Target) RunModuleRaw(ctx context.Context, binary string, args map[string]any, env ...string) (string, error) {
	dest, err := t.InstallModule(ctx, binary)
	if err != nil {
		return "", err
	}
	data, err := json.Marshal(ModuleArgs(binary, args))
	if err != nil {
		return "", fmt.Errorf("encode module args: %w", err)
	}
	argsFile := t.stagePath() + ".json"
	// The agent writes the file; without one, Docker's copy API reaches /var/tmp directly
	// (it is on the container's own filesystem, no staging). Running the module and
	// removing its args file is one exec.
	if ok, err := t.agentWrite(ctx, argsFile, data, 0o600); err != nil {
		return "", fmt.Errorf("write module args: %w", err)
	} else if !ok {
		if err := t.container.CopyToContainer(ctx, data, argsFile, 0o600); err != nil {
			return "", fmt.Errorf("write module args: %w", err)
		}
	}
	argv := []string{"/bin/sh", "-c", `"$0" "$1"; rc=$?; rm -f "$1"; exit $rc`, dest, argsFile}
	if goarch, ok := builtArch.Load(binary); ok {
		emu, err := t.installEmulator(ctx, goarch.(string))
		if err != nil {
			return "", err
		}
		argv = []string{"/bin/sh", "-c", `"$2" "$0" "$1"; rc=$?; rm -f "$1"; exit $rc`, dest, argsFile, emu}
	}
	res, err := t.ExecEnv(ctx, env, argv...)
	if err != nil {
		return "", err
	}
	if res.Stderr != "" {
		return res.Stdout, fmt.Errorf("module %s wrote to stderr (exit %d): %s", filepath.Base(binary), res.ExitCode, res.Stderr)
	}
	return res.Stdout, nil
}

// RunModule runs a module binary with args and returns its parsed result. Ansible's check
// and diff switches are keys of args: "_ansible_check_mode", "_ansible_diff".
func (t *Target) RunModule(tb testing.TB, binary string, args map[string]any) Result {
	tb.Helper()
	return t.RunModuleEnv(tb, binary, args)
}

// RunModuleEnv is RunModule with extra environment variables (KEY=VALUE) for the module.
func (t *Target) RunModuleEnv(tb testing.TB, binary string, args map[string]any, env ...string) Result {
	tb.Helper()
	out, err := t.RunModuleRaw(context.Background(), binary, args, env...)
	if err != nil {
		tb.Fatalf("run module: %v\nstdout: %s", err, out)
	}
	var r Result
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		tb.Fatalf("module output is not one JSON object: %v\n%s", err, out)
	}
	return r
}
