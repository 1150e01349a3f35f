// Package runnertest provides a scripted runner.Runner for tests: each expected argv is
// answered with a canned result, and any unexpected, extra or missing call fails the test.
package runnertest

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/richt/services/pkg/runner"
)

// Call is one expected command and its canned answer.
type Call struct {
	Argv     []string
	ExitCode int
	Stdout   string
	Stderr   string
	Err      error // returned as the run error (e.g. runner.ErrDeadline)
	// Do, when set, runs as the command does: the command's side effects on files the
	// code under test reads afterwards.
	Do func()
}

// Script is a runner.Runner that plays Calls in order.
type Script struct {
	t     testing.TB
	mu    sync.Mutex
	calls []Call
	next  int
}

// New returns a Script that verifies at test end that every call was made.
func New(t testing.TB, calls ...Call) *Script {
	s := &Script{t: t, calls: calls}
	t.Cleanup(func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.next < len(s.calls) {
			t.Errorf("runnertest: %d expected command(s) not run, next: %q", len(s.calls)-s.next, s.calls[s.next].Argv)
		}
	})
	return s
}

// Run implements runner.Runner.
func (s *Script) Run(_ context.Context, argv ...string) (runner.Result, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.t.Helper()
	if s.next >= len(s.calls) {
		s.t.Errorf("runnertest: unexpected extra command %q", argv)
		return runner.Result{Argv: argv, ExitCode: 127}, nil
	}
	c := s.calls[s.next]
	s.next++
	if strings.Join(c.Argv, "\x00") != strings.Join(argv, "\x00") {
		s.t.Errorf("runnertest: command %d:\n got  %q\n want %q", s.next, argv, c.Argv)
	}
	if c.Do != nil {
		c.Do()
	}
	return runner.Result{Argv: argv, ExitCode: c.ExitCode, Stdout: c.Stdout, Stderr: c.Stderr}, c.Err
}

// Count is how many commands ran.
func (s *Script) Count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.next
}
