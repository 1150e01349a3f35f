package testenv

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"
)

// Step is one phase of a Scenario: a playbook run against the scenario's targets, or a Go
// function. A converge step reports what it changed: a playbook's changed tasks, or the
// names a Func returns.
type Step struct {
	// Playbook is a playbook path; ExtraVars and Args go with it.
	Playbook  string
	ExtraVars map[string]any
	Args      []string
	// Func runs instead of a playbook.
	Func func(tb testing.TB, targets []*Target) (changed []string)
}

func (s Step) empty() bool { return s.Playbook == "" && s.Func == nil }

// Scenario is Molecule's test sequence in Go: create → prepare → converge → idempotence
// (a second converge must change nothing) → verify → destroy.
type Scenario struct {
	Name string
	// Targets is how many targets to create (default 1), each with Options.
	Targets int
	Options []Option
	// CollectionsPath and RolesPath are used by playbook steps.
	CollectionsPath string
	RolesPath       string

	Prepare  Step
	Converge Step
	Verify   Step
	// SkipIdempotence turns off the second converge, for scenarios that must change.
	SkipIdempotence bool
	// Log receives one line per phase with its duration (default: tb.Logf).
	Log func(format string, args ...any)
}

// Run executes the scenario; a failing phase fails the test and names the phase.
// Targets are destroyed at the end, and also when a phase fails.
func (s Scenario) Run(tb testing.TB) {
	tb.Helper()
	logf := s.Log
	if logf == nil {
		logf = tb.Logf
	}
	n := s.Targets
	if n == 0 {
		n = 1
	}
	phase := func(name string, f func()) {
		began := time.Now()
		f()
		logf("scenario %s: %s took %s", s.Name, name, time.Since(began).Round(time.Millisecond))
	}
	var targets []*Target
	phase("create", func() {
		for i := 0; i < n; i++ {
			targets = append(targets, Start(tb, s.Options...))
		}
	})
	if !s.Prepare.empty() {
		phase("prepare", func() { s.run(tb, "prepare", s.Prepare, targets) })
	}
	if !s.Converge.empty() {
		phase("converge", func() { s.run(tb, "converge", s.Converge, targets) })
		if !s.SkipIdempotence {
			phase("idempotence", func() {
				if err := CheckIdempotent(s.run(tb, "idempotence", s.Converge, targets)); err != nil {
					tb.Fatalf("scenario %s: idempotence: %v", s.Name, err)
				}
			})
		}
	}
	if !s.Verify.empty() {
		phase("verify", func() { s.run(tb, "verify", s.Verify, targets) })
	}
	phase("destroy", func() {
		for _, t := range targets {
			if err := t.Terminate(context.Background()); err != nil {
				tb.Errorf("scenario %s: destroy: %v", s.Name, err)
			}
		}
	})
}

func (s Scenario) run(tb testing.TB, phase string, st Step, targets []*Target) []string {
	tb.Helper()
	if st.Func != nil {
		return st.Func(tb, targets)
	}
	p := Playbook{Path: st.Playbook, Targets: targets, ExtraVars: st.ExtraVars, Args: st.Args,
		CollectionsPath: s.CollectionsPath, RolesPath: s.RolesPath}
	r := p.Run(tb)
	if r.ExitCode != 0 || r.Failed() > 0 || len(r.Recap) == 0 {
		tb.Fatalf("scenario %s: %s: %s failed (exit %d):\n%s", s.Name, phase, st.Playbook, r.ExitCode, tail(r.Output, 60))
	}
	return r.ChangedTasks
}

// CheckIdempotent fails when a second converge changed anything, naming what changed.
func CheckIdempotent(changed []string) error {
	if len(changed) == 0 {
		return nil
	}
	return fmt.Errorf("the second converge changed %d task result(s), expected none: %s", len(changed), strings.Join(changed, "; "))
}
