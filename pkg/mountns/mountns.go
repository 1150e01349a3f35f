package mountns

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/richt/services/pkg/runner"
)

// File is one new content and where the command must find it.
type File struct {
	// Path is absolute and clean.
	Path    string      `json:"path"`
	Content []byte      `json:"content"`
	Mode    os.FileMode `json:"mode"`
	UID     int         `json:"uid"`
	GID     int         `json:"gid"`
}

// ErrSetup is in the chain of an error that kept the command from running: the namespace
// or a file in it could not be set up (the command's own failure is its exit code).
var ErrSetup = errors.New("the validator's private mount namespace could not be set up")

// helperName is argv[0] of the re-executed module when it is the helper (init).
const helperName = "richt-mountns-helper"

// setupFailed is the helper's exit code when it could not set the namespace up; its
// stderr then starts with setupMarker.
const (
	setupFailed = 121
	setupMarker = "richt-mountns: "
)

// spec is what the helper reads from its stdin.
type spec struct {
	Files []File   `json:"files"`
	Argv  []string `json:"argv"`
}

// Runner runs commands in a private mount namespace (Run). Exe is the binary re-executed
// as the helper; "" is /proc/self/exe (the running module, which imports this package).
type Runner struct {
	Exe string
}

// Run runs argv (argv[0] looked up in PATH inside the namespace) with files at their
// paths, and returns its exit code and output as runner.Runner does. An error wrapping
// ErrSetup says the command did not run; one wrapping runner.ErrDeadline, that ctx ended
// first (the helper's process group is killed then).
func (r Runner) Run(ctx context.Context, files []File, argv ...string) (runner.Result, error) {
	res := runner.Result{Argv: argv}
	if len(argv) == 0 {
		return res, errors.New("run: empty command")
	}
	for _, f := range files {
		if err := checkPath(f.Path); err != nil {
			return res, fmt.Errorf("%w: %w", ErrSetup, err)
		}
	}
	input, err := json.Marshal(spec{Files: files, Argv: argv})
	if err != nil {
		return res, fmt.Errorf("%w: encode: %w", ErrSetup, err)
	}
	exe := r.Exe
	if exe == "" {
		exe = "/proc/self/exe"
	}
	cmd := exec.Command(exe)
	cmd.Args = []string{helperName}
	cmd.Env = runner.Env()
	cmd.Stdin = strings.NewReader(string(input))
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.WaitDelay = 2 * time.Second
	cmd.SysProcAttr = &syscall.SysProcAttr{
		// A mount namespace of its own (the helper makes its mounts private first), and a
		// PID namespace of its own whose first process it is: when the command it becomes
		// ends or is killed, the kernel kills every process it left behind, so nothing
		// outlives it holding the namespace.
		Cloneflags: syscall.CLONE_NEWNS | syscall.CLONE_NEWPID,
		// The helper, and the command it becomes, die with the module.
		Pdeathsig: syscall.SIGKILL,
		Setpgid:   true,
	}
	// PR_SET_PDEATHSIG fires when the thread that started the child ends, not the
	// process: the thread is kept for the child's life.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if err := cmd.Start(); err != nil {
		return res, fmt.Errorf("%w: start %s: %w", ErrSetup, exe, err)
	}
	done := make(chan struct{})
	go func() {
		select {
		case <-ctx.Done():
			_ = unix.Kill(-cmd.Process.Pid, unix.SIGKILL)
		case <-done:
		}
	}()
	err = cmd.Wait()
	close(done)
	res.Stdout, res.Stderr = stdout.String(), stderr.String()
	if ctxErr := ctx.Err(); ctxErr != nil {
		return res, fmt.Errorf("%s: %w (%w)", argv[0], runner.ErrDeadline, ctxErr)
	}
	var exitErr *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &exitErr):
		res.ExitCode = exitErr.ExitCode()
	default:
		return res, fmt.Errorf("run %s: %w", argv[0], err)
	}
	if res.ExitCode == setupFailed && strings.HasPrefix(res.Stderr, setupMarker) {
		return res, fmt.Errorf("%w: %s", ErrSetup, strings.TrimSpace(strings.TrimPrefix(res.Stderr, setupMarker)))
	}
	return res, nil
}

// checkPath refuses a path the helper could not place: not absolute and clean, or with a
// character an overlay's options cannot carry.
func checkPath(p string) error {
	switch {
	case !strings.HasPrefix(p, "/") || p == "/":
		return fmt.Errorf("%q is not an absolute path to a file", p)
	case strings.ContainsAny(p, ",:\\\x00\n"):
		return fmt.Errorf("%q has a character (, : \\ NUL or newline) a mount option cannot carry", p)
	case p == "/tmp" || strings.HasPrefix(p, "/tmp/"):
		return fmt.Errorf("%q is under /tmp, which the validator sees as a fresh, empty tmpfs", p)
	}
	for _, part := range strings.Split(p[1:], "/") {
		if part == "" || part == "." || part == ".." {
			return fmt.Errorf("%q is not clean", p)
		}
	}
	return nil
}
