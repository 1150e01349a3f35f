package testenv

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/moby/moby/api/pkg/stdcopy"
	"github.com/moby/moby/api/types/container"
	"github.com/testcontainers/testcontainers-go"
	tcexec "github.com/testcontainers/testcontainers-go/exec"
)

// Target is one running systemd container. Its methods may be called from several
// goroutines at once.
type Target struct {
	// Image is the image the target was started from.
	Image     string
	container *testcontainers.DockerContainer

	mu         sync.Mutex
	installed  map[string]bool // module binaries already copied in
	seq        int
	terminated bool
	name       string // container name, looked up once
	ssh        *SSHAccess
	agent      *agent // nil: commands go through Docker's API
}

// cgroupBind picks the host hierarchy to give systemd: on a hybrid host the pure cgroup2
// tree under "unified", so a current systemd sees a clean unified hierarchy.
func cgroupBind() string {
	if fi, err := os.Stat("/sys/fs/cgroup/unified"); err == nil && fi.IsDir() {
		return "/sys/fs/cgroup/unified:/sys/fs/cgroup:rw"
	}
	return "/sys/fs/cgroup:/sys/fs/cgroup:rw"
}

// Start boots a target and removes it when the test ends (t.Cleanup); when the test has
// failed by then, it first logs the target's [Target.Diagnostics]. It fails the test if an
// option is refused or systemd does not come up.
func Start(tb testing.TB, opts ...Option) *Target {
	tb.Helper()
	t, err := StartContext(context.Background(), opts...)
	if t != nil {
		tb.Cleanup(func() {
			t.mu.Lock()
			gone := t.terminated
			t.mu.Unlock()
			if tb.Failed() && !gone {
				tb.Logf("target %s state at failure:\n%s", t.ID(), t.Diagnostics(context.Background()))
			}
			if err := t.Terminate(context.Background()); err != nil {
				tb.Logf("remove target: %v", err)
			}
		})
	}
	if err != nil {
		tb.Fatalf("start target: %v", err)
	}
	return t
}

// StartContext boots a target, for code that has no testing.TB (a command, TestMain); the
// caller must Terminate it, also when an error is returned with a non-nil target. A
// refused option returns its error before anything starts.
//
// The image is WithImage's, else TESTENV_IMAGE, else testenv's own image for
// TESTENV_SUITE and WithPackages, built by [EnsureImage] when missing. A target is ready
// when `systemctl is-system-running` says running or degraded; when it never gets there,
// the error names the failed units and queued jobs it waited on, and ends with the
// journal.
//
// In a test binary, the first start takes one of the machine's target slots for the whole
// process (TESTENV_MAX_TARGET_PROCESSES test processes at once, default one per CPU and
// one more, 0 for no limit), waiting while other test processes hold them all: `go test ./...` runs
// GOMAXPROCS packages at once, and several packages' targets on a small machine made
// deadlines pass that fit it alone. Other programs (a benchmark, a command) take no slot.
func StartContext(ctx context.Context, opts ...Option) (*Target, error) {
	o, err := newConfig(opts)
	if err != nil {
		return nil, err
	}
	if _, err := agentUsed(); err != nil {
		return nil, err
	}
	// The slot comes before everything that loads the machine (an image build, the boot),
	// and the time waiting for it counts against no deadline of the target's.
	if waited, err := holdSlot(ctx); err != nil {
		return nil, fmt.Errorf("start target: %w", err)
	} else if waited > time.Second {
		o.logger.Printf("waited %s for a target slot (%s)", waited.Round(time.Millisecond), slotsEnv)
	}
	if o.image == "" {
		suite := o.suite
		if suite == "" {
			suite = Suite()
		}
		img, err := EnsureSuiteImage(ctx, suite, o.packages...)
		if err != nil {
			return nil, err
		}
		o.image = img
	}
	if t, ok, err := takeSpare(ctx, o); ok {
		return t, err
	}
	return boot(ctx, o)
}

// boot creates and starts the container of a resolved configuration (its image set) and
// waits until systemd is up.
func boot(ctx context.Context, o config) (*Target, error) {
	ready := &bootWait{timeout: o.readyAfter, logger: o.logger}
	custom := []testcontainers.ContainerCustomizer{
		testcontainers.WithLogger(o.logger), // first: the other customizers may log
		testcontainers.WithCmd("/sbin/init"),
		testcontainers.WithEnv(o.env),
		testcontainers.WithLabels(labels(o.labels)),
		testcontainers.WithTmpfs(map[string]string{"/run": "rw,exec", "/run/lock": "rw"}),
		testcontainers.WithHostConfigModifier(func(hc *container.HostConfig) {
			hc.CapAdd = []string{"ALL"}
			hc.CapDrop = []string{"SYS_RESOURCE"}
			hc.SecurityOpt = []string{"seccomp=unconfined", "apparmor=unconfined"}
			hc.CgroupnsMode = container.CgroupnsModeHost
			hc.Binds = append(append(hc.Binds, cgroupBind()), o.binds...)
			if b := agentBind(); b != "" {
				hc.Binds = append(hc.Binds, b)
			}
		}),
		testcontainers.WithWaitStrategy(ready),
	}
	if o.name != "" {
		custom = append(custom, testcontainers.WithName(o.name))
	}
	if len(o.files) > 0 {
		custom = append(custom, testcontainers.WithFiles(o.files...))
	}
	disableReaperUnlessChosen()
	// The agent's build (once per process) overlaps the first boot instead of following it.
	if use, _ := agentUsed(); use {
		go func() { _, _ = agentBinary() }()
	}
	c, err := testcontainers.Run(ctx, o.image, custom...)
	var t *Target
	if c != nil {
		t = &Target{Image: o.image, container: c, installed: map[string]bool{}, agent: ready.agent}
	}
	if err != nil {
		if t != nil {
			dctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
			defer cancel()
			return t, fmt.Errorf("systemd in %s did not reach running or degraded within %s%s: %w\n%s", o.image, o.readyAfter, t.stuck(dctx), err, t.Diagnostics(dctx))
		}
		return nil, fmt.Errorf("start %s: %w", o.image, err)
	}
	return t, nil
}

// LabelKey marks every target container, so leftovers can be found and counted.
const LabelKey = "org.richt.testenv"

func labels(extra map[string]string) map[string]string {
	l := map[string]string{LabelKey: "target"}
	for k, v := range extra {
		l[k] = v
	}
	return l
}

// stuck names the units that kept systemd from being ready: failed units and units
// with jobs still queued.
func (t *Target) stuck(ctx context.Context) string {
	var names []string
	for _, argv := range [][]string{
		{"systemctl", "list-units", "--state=failed", "--no-legend", "--plain"},
		{"systemctl", "list-jobs", "--no-legend"},
	} {
		res, err := t.Exec(ctx, argv...)
		if err != nil {
			continue
		}
		for _, line := range strings.Split(res.Stdout, "\n") {
			f := strings.Fields(line)
			if len(f) == 0 {
				continue
			}
			if argv[1] == "list-jobs" && len(f) > 1 {
				names = append(names, f[1]+" (job "+strings.Join(f[2:], " ")+")")
			} else if argv[1] == "list-units" {
				names = append(names, f[0]+" (failed)")
			}
		}
	}
	if len(names) == 0 {
		return ""
	}
	return "; waiting on: " + strings.Join(names, ", ")
}

// ID is the container's ID.
func (t *Target) ID() string { return t.container.GetContainerID() }

// Container is the underlying testcontainers container, for what this API lacks.
func (t *Target) Container() *testcontainers.DockerContainer { return t.container }

// Terminate kills and removes the target; a second call does nothing. A target is
// disposable, so its systemd is not halted first: a halt stops every unit and runs
// systemd-shutdown, about 0.1 s of wall and CPU per target that no test's check needs
// (docs/testenv.md, "Where the CPU goes, and removing a target").
func (t *Target) Terminate(ctx context.Context) error {
	t.mu.Lock()
	done := t.terminated
	t.terminated = true
	t.mu.Unlock()
	if done {
		return nil
	}
	return testcontainers.TerminateContainer(t.container, testcontainers.StopContext(ctx), testcontainers.StopTimeout(0))
}

// ExecResult is a finished command in the target.
type ExecResult struct {
	ExitCode int
	Stdout   string
	Stderr   string
}

// Exec runs argv in the target (no shell) and returns its output; a non-zero exit is not
// an error.
func (t *Target) Exec(ctx context.Context, argv ...string) (ExecResult, error) {
	return t.ExecEnv(ctx, nil, argv...)
}

// ExecEnv is Exec with extra environment variables (KEY=VALUE).
//
// The command runs as with docker exec: as root, argv executed directly, the container's
// environment with env merged in (KEY=VALUE replaces or adds, a bare KEY removes), working
// directory /, stdin empty, stdout and stderr apart, in a session of its own; a command
// killed by a signal exits 128+signal, one that cannot be started exits 126 with the
// runtime's message on stdout; when something it started keeps its output open, the
// call returns about 2 s after the command exits. It goes through the target's agent,
// or Docker's API when the target has none.
func (t *Target) ExecEnv(ctx context.Context, env []string, argv ...string) (ExecResult, error) {
	res, ok, err := t.agentExec(ctx, env, argv)
	if err != nil {
		return res, fmt.Errorf("exec %q: %w", argv, err)
	}
	if ok {
		return res, nil
	}
	return t.dockerExec(ctx, env, argv...)
}

// dockerExec runs argv in the target through Docker's exec API.
func (t *Target) dockerExec(ctx context.Context, env []string, argv ...string) (ExecResult, error) {
	var res ExecResult
	split := tcexec.ProcessOptionFunc(func(po *tcexec.ProcessOptions) {
		if po.Reader == nil {
			return
		}
		var out, errb bytes.Buffer
		_, _ = stdcopy.StdCopy(&out, &errb, po.Reader)
		res.Stdout, res.Stderr = out.String(), errb.String()
		po.Reader = nil
	})
	opts := []tcexec.ProcessOption{split}
	if len(env) > 0 {
		opts = []tcexec.ProcessOption{tcexec.WithEnv(env), split}
	}
	code, _, err := t.container.Exec(ctx, argv, opts...)
	if err != nil {
		return res, fmt.Errorf("exec %q: %w", argv, err)
	}
	res.ExitCode = code
	return res, nil
}

// MustExec runs argv and fails the test unless it exits 0; it returns stdout.
func (t *Target) MustExec(tb testing.TB, argv ...string) string {
	tb.Helper()
	res, err := t.Exec(context.Background(), argv...)
	if err != nil {
		tb.Fatalf("%v", err)
	}
	if res.ExitCode != 0 {
		tb.Fatalf("%q exited %d:\n%s\n%s", argv, res.ExitCode, res.Stdout, res.Stderr)
	}
	return res.Stdout
}

// Shell runs a script with /bin/sh -c, for test set-up that needs pipes or redirections.
func (t *Target) Shell(tb testing.TB, script string) string {
	tb.Helper()
	return t.MustExec(tb, "/bin/sh", "-c", script)
}

// WriteFile writes content to path in the target with mode, owned by root, creating parent
// directories, by a rename of a new file over path, with the current time as its mtime
// (systemd's NeedDaemonReload relies on it). The target's agent writes it directly.
// Without an agent, the file is staged under /var/tmp and installed with install(1):
// Docker's copy API cannot reach tmpfs mounts such as /run or trixie's /tmp, and it
// leaves the mtime at 1970.
func (t *Target) WriteFile(ctx context.Context, path string, content []byte, mode int64) error {
	if ok, err := t.agentWrite(ctx, path, content, mode); ok {
		return err
	}
	stage := t.stagePath()
	if err := t.container.CopyToContainer(ctx, content, stage, 0o600); err != nil {
		return fmt.Errorf("write %s in target: %w", path, err)
	}
	return t.install(ctx, stage, path, mode)
}

// CopyFile copies a host file into the target, staged like WriteFile.
func (t *Target) CopyFile(ctx context.Context, hostPath, path string, mode int64) error {
	if t.currentAgent() != nil {
		content, err := os.ReadFile(hostPath)
		if err != nil {
			return fmt.Errorf("copy %s to %s in target: %w", hostPath, path, err)
		}
		if ok, err := t.agentWrite(ctx, path, content, mode); ok {
			return err
		}
	}
	stage := t.stagePath()
	if err := t.container.CopyFileToContainer(ctx, hostPath, stage, 0o600); err != nil {
		return fmt.Errorf("copy %s to %s in target: %w", hostPath, path, err)
	}
	return t.install(ctx, stage, path, mode)
}

func (t *Target) stagePath() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.seq++
	return fmt.Sprintf("/var/tmp/richt-stage-%d", t.seq)
}

// install puts stage at path with mode by a rename, so concurrent installs of the same
// path (the first runs of a module started together) each succeed, and a running binary is
// replaced, not rewritten.
func (t *Target) install(ctx context.Context, stage, path string, mode int64) error {
	res, err := t.Exec(ctx, "/bin/sh", "-c", `install -D -m "$2" -T -- "$0" "$1.richt-$$" && mv -f -- "$1.richt-$$" "$1"; rc=$?; rm -f -- "$0" "$1.richt-$$"; exit $rc`,
		stage, path, fmt.Sprintf("%04o", mode))
	if err == nil && res.ExitCode != 0 {
		err = fmt.Errorf("install %s in target: %s", path, strings.TrimSpace(res.Stderr))
	}
	return err
}

// CopyDir copies the files below a host directory to dir in the target, keeping their
// relative paths and permission bits; the copies get current mtimes. The tree travels as
// one archive into a staging directory and is installed with one command, so a
// repository of thousands of packages costs about as much as a small one.
func (t *Target) CopyDir(ctx context.Context, hostDir, dir string) error {
	if t.currentAgent() != nil {
		if ok, err := t.agentCopyDir(ctx, hostDir, dir); ok {
			return err
		}
	}
	// Docker's copy gives every entry one mode; files whose bits differ from 0644 get
	// theirs back from this list afterwards.
	var odd strings.Builder
	err := filepath.WalkDir(hostDir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		if perm := fi.Mode().Perm(); perm != 0o644 {
			rel, err := filepath.Rel(hostDir, p)
			if err != nil {
				return err
			}
			fmt.Fprintf(&odd, "chmod %04o -- %s\n", perm, shellQuote(filepath.ToSlash(rel)))
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("read %s: %w", hostDir, err)
	}
	stage := t.stagePath()
	if res, err := t.Exec(ctx, "mkdir", "-m", "700", "--", stage); err != nil || res.ExitCode != 0 {
		return fmt.Errorf("staging directory in target: %v %s", err, res.Stderr)
	}
	// testcontainers unpacks the tree (named by its base name) into the parent of the
	// path it is given: stage/x → stage/BASENAME.
	if err := t.container.CopyDirToContainer(ctx, hostDir, path.Join(stage, "x"), 0o755); err != nil {
		_, _ = t.Exec(ctx, "rm", "-rf", "--", stage)
		return fmt.Errorf("copy %s to %s in target: %w", hostDir, dir, err)
	}
	src := path.Join(stage, filepath.Base(hostDir))
	script := `set -e; trap 'rm -rf -- "$0"' EXIT
mkdir -p -- "$2"
cp -R -- "$1/." "$2/"
cd -- "$2"
find "$1" -type f -printf '%P\0' | xargs -0r chmod 0644 --
` + odd.String()
	res, err := t.Exec(ctx, "/bin/sh", "-c", script, stage, src, dir)
	if err == nil && res.ExitCode != 0 {
		err = fmt.Errorf("install %s in target: %s", dir, strings.TrimSpace(res.Stderr))
	}
	return err
}

// agentCopyMax bounds the trees CopyDir sends as one archive through the agent, held in
// memory on the way; a larger one goes through Docker's copy.
const agentCopyMax = 256 << 20

// agentCopyDir is CopyDir through the agent: the tree as one archive written to a staging
// file, unpacked with one command. ok is false when the target has no agent (any more),
// the tree holds anything but directories and regular files, or it is larger than
// agentCopyMax; the caller copies through Docker then, which treats those as it always did.
func (t *Target) agentCopyDir(ctx context.Context, hostDir, dir string) (ok bool, err error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	now := time.Now().Truncate(time.Second) // tar -m sets the time anyway
	errFallBack := errors.New("fall back")
	err = filepath.WalkDir(hostDir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(hostDir, p)
		if err != nil || rel == "." {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		h := &tar.Header{Name: filepath.ToSlash(rel), ModTime: now}
		switch {
		case fi.IsDir():
			// Docker's copy made every directory 0755; so does this.
			h.Typeflag, h.Name, h.Mode = tar.TypeDir, h.Name+"/", 0o755
			return tw.WriteHeader(h)
		case !fi.Mode().IsRegular() || buf.Len()+int(fi.Size()) > agentCopyMax:
			return errFallBack
		}
		h.Typeflag, h.Mode, h.Size = tar.TypeReg, int64(fi.Mode().Perm()), fi.Size()
		if err := tw.WriteHeader(h); err != nil {
			return err
		}
		f, err := os.Open(p)
		if err != nil {
			return err
		}
		defer f.Close()
		if _, err := io.Copy(tw, f); err != nil {
			return fmt.Errorf("read %s: %w", p, err)
		}
		return nil
	})
	if errors.Is(err, errFallBack) {
		return false, nil
	}
	if err == nil {
		err = tw.Close()
	}
	if err != nil {
		return true, fmt.Errorf("read %s: %w", hostDir, err)
	}
	stage := t.stagePath()
	if ok, err := t.agentWrite(ctx, stage, buf.Bytes(), 0o600); !ok || err != nil {
		return ok, err
	}
	// -m: the copies get the current time, as Docker's copy and cp gave them; root's tar
	// keeps the archive's permission bits, and --no-same-owner makes root the owner. A
	// directory that is already there keeps its mode, and a link to one stays a link, as
	// cp -R left them (--no-overwrite-dir, --keep-directory-symlink).
	res, err := t.Exec(ctx, "/bin/sh", "-c", `trap 'rm -f -- "$0"' EXIT; mkdir -p -- "$1" && tar -x -m --no-same-owner --no-overwrite-dir --keep-directory-symlink -f "$0" -C "$1"`, stage, dir)
	if err == nil && res.ExitCode == 127 {
		return false, nil // no tar in this image: Docker's copy needs only cp, find and xargs
	}
	if err == nil && res.ExitCode != 0 {
		err = fmt.Errorf("install %s in target: %s", dir, strings.TrimSpace(res.Stderr))
	}
	if err != nil {
		return true, fmt.Errorf("copy %s to %s in target: %w", hostDir, dir, err)
	}
	return true, nil
}

// systemUpCommand asks systemd for its state once its start-up jobs are done: one command
// that waits inside the target instead of one every poll interval until systemd is up (a
// boot took five to ten polls, each a process in the target and, without the agent, a
// docker exec). Until systemd answers on its bus at all, it fails at once and the caller
// polls again.
var systemUpCommand = []string{"systemctl", "is-system-running", "--wait"}

// systemUp reads `systemctl is-system-running`: the boot is over, every unit started or
// failed ("degraded" is a target whose units are not all fine, still a booted one).
func systemUp(out string) bool {
	return strings.Contains(out, "running") || strings.Contains(out, "degraded")
}

// shellQuote makes s one word for /bin/sh.
func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// Diagnostics describes the target for a failure report: systemd's overall state, failed
// units, the processes (with what each waits in) and the journal's end.
func (t *Target) Diagnostics(ctx context.Context) string {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	return t.transcript(ctx,
		[]string{"systemctl", "is-system-running"},
		[]string{"systemctl", "--failed", "--no-legend", "--no-pager"},
		// What still runs, and where it waits: a hung child (a module's supervisor, DNF)
		// shows here and nowhere else.
		[]string{"ps", "-eo", "pid,ppid,stat,wchan:20,etime,args"},
		[]string{"journalctl", "--no-pager", "-n", "25"})
}

// transcript runs commands in the target and returns them with their output, as a person
// would read them in a terminal.
func (t *Target) transcript(ctx context.Context, cmds ...[]string) string {
	var b strings.Builder
	for _, argv := range cmds {
		res, err := t.Exec(ctx, argv...)
		fmt.Fprintf(&b, "$ %s\n", strings.Join(argv, " "))
		if err != nil {
			fmt.Fprintf(&b, "(%v)\n", err)
			continue
		}
		b.WriteString(res.Stdout + res.Stderr)
	}
	return b.String()
}
