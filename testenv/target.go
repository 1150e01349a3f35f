package testenv

import (
	"bytes"
	"context"
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
	tclog "github.com/testcontainers/testcontainers-go/log"
	"github.com/testcontainers/testcontainers-go/wait"
)

// Target is one running systemd container.
type Target struct {
	Image     string
	container *testcontainers.DockerContainer

	mu        sync.Mutex
	installed map[string]bool // module binaries already copied in
	seq       int
}

// Option changes how a target starts.
type Option func(*options)

type options struct {
	name       string
	image      string
	readyAfter time.Duration
	env        map[string]string
}

// WithImage starts the target from image instead of the default.
func WithImage(image string) Option { return func(o *options) { o.image = image } }

// WithName gives the container a fixed name (default: a random one, so parallel targets
// never clash).
func WithName(name string) Option { return func(o *options) { o.name = name } }

// WithReadyTimeout bounds the wait for systemd to reach running or degraded (default 60s).
func WithReadyTimeout(d time.Duration) Option { return func(o *options) { o.readyAfter = d } }

// WithEnv sets environment variables of PID 1 (systemd passes them to no service).
func WithEnv(env map[string]string) Option { return func(o *options) { o.env = env } }

func init() {
	// The reaper image cannot be pulled offline; targets are removed by t.Cleanup.
	if os.Getenv("TESTCONTAINERS_RYUK_DISABLED") == "" {
		_ = os.Setenv("TESTCONTAINERS_RYUK_DISABLED", "true")
	}
	// Container lifecycle lines drown test output; failures carry Diagnostics instead.
	if os.Getenv("TESTENV_VERBOSE") == "" {
		tclog.SetDefault(quietLogger{})
	}
}

type quietLogger struct{}

func (quietLogger) Printf(string, ...any) {}

// cgroupBind picks the host hierarchy to give systemd: on a hybrid host the pure cgroup2
// tree under "unified", so a current systemd sees a clean unified hierarchy.
func cgroupBind() string {
	if fi, err := os.Stat("/sys/fs/cgroup/unified"); err == nil && fi.IsDir() {
		return "/sys/fs/cgroup/unified:/sys/fs/cgroup:rw"
	}
	return "/sys/fs/cgroup:/sys/fs/cgroup:rw"
}

// Start boots a target and removes it when the test ends. It fails the test if systemd
// does not come up.
func Start(tb testing.TB, opts ...Option) *Target {
	tb.Helper()
	t, err := StartContext(context.Background(), opts...)
	if t != nil {
		tb.Cleanup(func() {
			if tb.Failed() {
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

// StartContext boots a target; the caller must Terminate it (also when an error is
// returned with a non-nil target).
func StartContext(ctx context.Context, opts ...Option) (*Target, error) {
	o := options{readyAfter: 60 * time.Second}
	for _, f := range opts {
		f(&o)
	}
	if o.image == "" {
		img, err := EnsureImage(ctx)
		if err != nil {
			return nil, err
		}
		o.image = img
	}
	ready := wait.ForExec([]string{"systemctl", "is-system-running"}).
		WithExitCodeMatcher(func(int) bool { return true }).
		WithResponseMatcher(func(body io.Reader) bool {
			var b bytes.Buffer
			_, _ = b.ReadFrom(body)
			s := b.String()
			return strings.Contains(s, "running") || strings.Contains(s, "degraded")
		}).
		WithPollInterval(200 * time.Millisecond).
		WithStartupTimeout(o.readyAfter)
	custom := []testcontainers.ContainerCustomizer{
		testcontainers.WithCmd("/sbin/init"),
		testcontainers.WithEnv(o.env),
		testcontainers.WithLabels(map[string]string{"org.richt.testenv": "target"}),
		testcontainers.WithTmpfs(map[string]string{"/run": "rw,exec", "/run/lock": "rw"}),
		testcontainers.WithHostConfigModifier(func(hc *container.HostConfig) {
			hc.CapAdd = []string{"ALL"}
			hc.CapDrop = []string{"SYS_RESOURCE"}
			hc.SecurityOpt = []string{"seccomp=unconfined", "apparmor=unconfined"}
			hc.CgroupnsMode = container.CgroupnsModeHost
			hc.Binds = append(hc.Binds, cgroupBind())
		}),
		testcontainers.WithWaitStrategy(ready),
	}
	if o.name != "" {
		custom = append(custom, testcontainers.WithName(o.name))
	}
	c, err := testcontainers.Run(ctx, o.image, custom...)
	var t *Target
	if c != nil {
		t = &Target{Image: o.image, container: c, installed: map[string]bool{}}
	}
	if err != nil {
		if t != nil {
			return t, fmt.Errorf("systemd in %s did not reach running or degraded within %s: %w\n%s", o.image, o.readyAfter, err, t.Diagnostics(ctx))
		}
		return nil, fmt.Errorf("start %s: %w", o.image, err)
	}
	return t, nil
}

// ID is the container's ID.
func (t *Target) ID() string { return t.container.GetContainerID() }

// Container is the underlying testcontainers container, for what this API lacks.
func (t *Target) Container() *testcontainers.DockerContainer { return t.container }

// Terminate stops and removes the target.
func (t *Target) Terminate(ctx context.Context) error {
	return testcontainers.TerminateContainer(t.container, testcontainers.StopContext(ctx))
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
func (t *Target) ExecEnv(ctx context.Context, env []string, argv ...string) (ExecResult, error) {
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

// WriteFile writes content to path in the target with mode, creating parent directories.
// The file is staged under /var/tmp and installed with install(1): Docker's copy API
// cannot reach tmpfs mounts such as /run or trixie's /tmp, and it leaves the mtime at
// 1970, where a normal write gives the current time (systemd's NeedDaemonReload relies on it).
func (t *Target) WriteFile(ctx context.Context, path string, content []byte, mode int64) error {
	stage := t.stagePath()
	if err := t.container.CopyToContainer(ctx, content, stage, 0o600); err != nil {
		return fmt.Errorf("write %s in target: %w", path, err)
	}
	return t.install(ctx, stage, path, mode)
}

// CopyFile copies a host file into the target, staged like WriteFile.
func (t *Target) CopyFile(ctx context.Context, hostPath, path string, mode int64) error {
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

func (t *Target) install(ctx context.Context, stage, path string, mode int64) error {
	res, err := t.Exec(ctx, "/bin/sh", "-c", `install -D -m "$2" -T -- "$0" "$1"; rc=$?; rm -f -- "$0"; exit $rc`,
		stage, path, fmt.Sprintf("%04o", mode))
	if err == nil && res.ExitCode != 0 {
		err = fmt.Errorf("install %s in target: %s", path, strings.TrimSpace(res.Stderr))
	}
	return err
}

// CopyDir copies the files below a host directory to dir in the target, keeping their
// relative paths and modes. It is meant for small trees such as fixture repositories.
func (t *Target) CopyDir(ctx context.Context, hostDir, dir string) error {
	return filepath.WalkDir(hostDir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, err := filepath.Rel(hostDir, p)
		if err != nil {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		return t.CopyFile(ctx, p, path.Join(dir, filepath.ToSlash(rel)), int64(fi.Mode().Perm()))
	})
}

// Diagnostics describes the target's systemd for a failure report: overall state, failed
// units and the journal's end.
func (t *Target) Diagnostics(ctx context.Context) string {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	var b strings.Builder
	for _, argv := range [][]string{
		{"systemctl", "is-system-running"},
		{"systemctl", "--failed", "--no-legend", "--no-pager"},
		{"journalctl", "--no-pager", "-n", "25"},
	} {
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
