// Package runner runs external commands as argv vectors, never through a shell, under the
// caller's deadline. It is the one place where modules start processes.
package runner

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"time"
)

// Result is a finished command. A non-zero exit is a result, not an error: callers
// decide what an exit code means for their command.
type Result struct {
	Argv     []string `json:"argv"`
	ExitCode int      `json:"rc"`
	Stdout   string   `json:"stdout"`
	Stderr   string   `json:"stderr"`
}

// Output joins stdout and stderr for messages.
func (r Result) Output() string {
	return strings.TrimSpace(strings.TrimSpace(r.Stdout) + "\n" + strings.TrimSpace(r.Stderr))
}

// Runner runs one command.
type Runner interface {
	Run(ctx context.Context, argv ...string) (Result, error)
}

// ErrDeadline is returned when the context ended before the command did.
var ErrDeadline = errors.New("deadline exceeded")

// Env is the environment of every command the modules start: the module's own, in the C
// locale, so that what modules parse does not depend on the target's language settings.
func Env() []string { return append(os.Environ(), "LC_ALL=C.UTF-8", "LANG=C.UTF-8") }

// Exec runs commands on this machine, in Env.
type Exec struct{}

// Run implements Runner.
func (Exec) Run(ctx context.Context, argv ...string) (Result, error) {
	res := Result{Argv: argv}
	if len(argv) == 0 {
		return res, errors.New("run: empty command")
	}
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Env = Env()
	cmd.Stdin = nil
	// A child that keeps our pipes open must not outlive the deadline by much.
	cmd.WaitDelay = 2 * time.Second
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	res.Stdout, res.Stderr = stdout.String(), stderr.String()
	if ctxErr := ctx.Err(); ctxErr != nil {
		return res, fmt.Errorf("%s: %w (%w)", argv[0], ErrDeadline, ctxErr)
	}
	var exitErr *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &exitErr):
		res.ExitCode = exitErr.ExitCode()
	default:
		return res, fmt.Errorf("run %s: %w", argv[0], err)
	}
	return res, nil
}
