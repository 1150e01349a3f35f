package ee

import (
	"bytes"
	"context"
	_ "embed"
	"fmt"
	"os/exec"
	"runtime"
	"strings"
	"syscall"
	"time"
)

// runDocker runs docker and returns its standard output; an error carries its standard
// error.
func runDocker(ctx context.Context, args ...string) ([]byte, error) {
	var stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, "docker", args...)
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return out, fmt.Errorf("docker %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return out, nil
}

// runDockerInput is runDocker with input on docker's standard input. It runs the layer's
// docker build, so it also ends with a caller that dies (Pdeathsig, locked to the thread as
// in runScript): docker build stops when its client goes.
func runDockerInput(ctx context.Context, input []byte, args ...string) ([]byte, error) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, "docker", args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
	cmd.Stdin = bytes.NewReader(input)
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return out, fmt.Errorf("docker %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return out, nil
}

// runBuild runs build.sh with the arguments. The script goes to bash as `bash -c SCRIPT
// build.sh ARGS...` rather than as a file: a temporary file would be left behind by a
// caller that is killed.
func runBuild(ctx context.Context, args ...string) ([]byte, error) {
	return runScript(ctx, append([]string{"-c", string(buildScript), "build.sh"}, args...)...)
}

// scriptWaitDelay is how long a cancelled build has after SIGTERM to clean up (build.sh
// removes its ~200 MB work directory; mmdebstrap and docker build stop) before it is
// killed.
const scriptWaitDelay = 60 * time.Second

// runScript runs bash with the arguments (a script and its arguments) in a process group
// of its own and returns its combined output. Cancelling ctx sends SIGTERM to the whole
// group, not only to bash: mmdebstrap and docker build are its children and would
// otherwise run on as orphans, and bash's TERM trap (its cleanup) would never run under
// SIGKILL. Whatever is left after scriptWaitDelay is killed.
//
// A caller that dies without cancelling (^C in a program that does not turn it into a
// cancel, a go test timeout, SIGKILL) cannot signal the group; Pdeathsig has the kernel
// send bash SIGTERM then, and build.sh's trap passes it on to the group. Pdeathsig fires
// when the OS thread that started the child ends, not the process: the Go runtime ends a
// thread when a goroutine locked to it exits, so the goroutine stays locked to its thread
// from Start to Wait, and that thread ends only with the process (or after Wait).
func runScript(ctx context.Context, bashArgs ...string) ([]byte, error) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	cmd := exec.CommandContext(ctx, "bash", bashArgs...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM) }
	cmd.WaitDelay = scriptWaitDelay
	out, err := cmd.CombinedOutput()
	if ctx.Err() != nil && cmd.Process != nil {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) // ESRCH when all ended as asked
	}
	return out, err
}

func tail(s string, n int) string {
	l := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(l) > n {
		l = l[len(l)-n:]
	}
	return strings.Join(l, "\n")
}
