package service

import (
	"context"
	"time"

	"github.com/richt/services/pkg/ansible"
	"github.com/richt/services/pkg/lifecycle"
	"github.com/richt/services/pkg/override"
	"github.com/richt/services/pkg/rpmexact"
	"github.com/richt/services/pkg/timeout"
)

// budget is one step's timeout: the one deadline SPEC 1 promises for an action and the
// wait that verifies it, here spent by the step's plan (with its waits: a transaction
// under way, the unit's lock) and its run together; the run gets what the plan left. A
// wall-clock deadline from the plan would not do: the service holds a file's plan across
// the package transaction, and the packages plan across composing the rest; that time is
// the service's, not the step's, and is not spent from it.
type budget struct {
	limit, spent time.Duration
}

// plan runs f, the step's planning, under the whole timeout and keeps what it spent.
func (b *budget) plan(ctx context.Context, f func(context.Context)) {
	start := time.Now()
	ctx, cancel := timeout.Deadline(ctx, b.limit)
	defer cancel()
	f(ctx)
	b.spent = time.Since(start)
}

// run is the context of the step's run: what the plan left of the timeout (nothing, when
// the plan spent it all).
func (b budget) run(ctx context.Context) (context.Context, context.CancelFunc) {
	return timeout.Deadline(ctx, b.limit-b.spent)
}

// Packages is rpm_exact as the service's packages step: its plan is made under the
// transaction lock, after the wait for a transaction an earlier run left under way
// (rpmexact.Deps.Hold), and the lock is held until the step runs, so the plan the service
// composed from is the one carried out (rpmexact.Held.Finish). The wait, the reads and
// the transaction share the step's timeout (budget).
func Packages(d rpmexact.Deps) Module {
	return Module{Spec: rpmexact.Spec(), Plan: func(ctx context.Context, req *ansible.Request) Step {
		task, err := ansible.Parsed[rpmexact.Task](req)
		if err != nil {
			return failed{err: err}
		}
		s := packagesStep{budget: budget{limit: task.Want.Timeout}}
		s.budget.plan(ctx, func(ctx context.Context) { s.held = d.Hold(ctx, task, req.CheckMode) })
		return s
	}}
}

type packagesStep struct {
	plain
	held   *rpmexact.Held
	budget budget
}

func (s packagesStep) Names() []string { return s.held.Plan().Names() }
func (s packagesStep) Changes() bool   { return s.held.Plan().Changes() }
func (s packagesStep) UnitFiles() bool { return s.held.Plan().UnitFilesChange() }
func (s packagesStep) Err() error      { return s.held.Err() }
func (s packagesStep) Release()        { s.held.Release() }

// Moves are the packages the plan moves (its entries' operations), for the wiring of
// processes that name them (mover).
func (s packagesStep) Moves() ([]string, bool) {
	var out []string
	for _, e := range s.held.Plan().Entries {
		if e.Operation != rpmexact.OpNone {
			out = append(out, e.Name)
		}
	}
	return out, true
}

func (s packagesStep) Run(ctx context.Context, _ *ansible.Request) (any, error) {
	ctx, cancel := s.budget.run(ctx)
	defer cancel()
	return s.held.Finish(ctx)
}

// Files is unit_override as the service's files step: its plan (override.Deps.Plan) is
// made before the packages step and applied after it (override.Deps.Apply), which takes the
// unit's lock and decides again only if another run changed the file in between. The
// plan and the write share the step's timeout (budget).
func Files(d override.Deps) Module {
	return Module{Spec: override.Spec(), Plan: func(ctx context.Context, req *ansible.Request) Step {
		task, err := ansible.Parsed[override.Task](req)
		if err != nil {
			return failed{err: err}
		}
		s := &filesStep{d: d, budget: budget{limit: task.Params.Timeout}}
		s.budget.plan(ctx, func(ctx context.Context) { s.plan, s.err = d.Plan(ctx, task) })
		return s
	}}
}

type filesStep struct {
	plain
	d      override.Deps
	plan   override.Plan
	err    error
	budget budget
}

func (s *filesStep) Names() []string {
	out := make([]string, len(s.plan.Steps))
	for i, st := range s.plan.Steps {
		out[i] = string(st)
	}
	return out
}
func (s *filesStep) Changes() bool   { return s.plan.Changed() }
func (s *filesStep) UnitFiles() bool { return s.plan.Change.UnitFilesChanged }
func (s *filesStep) Err() error      { return s.err }
func (s *filesStep) Release()        {}

func (s *filesStep) Run(ctx context.Context, req *ansible.Request) (any, error) {
	ctx, cancel := s.budget.run(ctx)
	defer cancel()
	var res *override.Result
	err := s.err
	switch {
	case err != nil:
		res = s.plan.Result()
	case req.CheckMode:
		res = s.d.Check(s.plan)
	default:
		res, err = s.d.Apply(ctx, s.plan)
	}
	for _, w := range res.Warnings() {
		req.Warn("%s", w)
	}
	return res, err
}

// Processes is systemd_lifecycle as the service's process steps: open gives the side
// effects of a scope (its systemd connection, closed by the func it returns; its records
// and locks). The plan is made under the unit's lock (lifecycle.Deps.Hold), which is held
// until the step runs (lifecycle.Held.Finish). The wait for the lock, the plan, the action
// and its verification share the step's timeout (budget), as in systemd_lifecycle's own
// runs.
func Processes(open func(ctx context.Context, scope string) (lifecycle.Deps, func(), error)) Module {
	return Module{Spec: lifecycle.Spec(), Plan: func(ctx context.Context, req *ansible.Request) Step {
		task, err := ansible.Parsed[lifecycle.Task](req)
		if err != nil {
			return failed{err: err}
		}
		d, closeFn, err := open(ctx, task.Scope)
		if err != nil {
			return failed{err: err}
		}
		s := &processStep{budget: budget{limit: task.Limit}, close: closeFn}
		s.budget.plan(ctx, func(ctx context.Context) { s.held = d.Hold(ctx, task.Request) })
		return s
	}}
}

type processStep struct {
	plain
	held   *lifecycle.Held
	budget budget
	close  func()
}

func (s *processStep) Names() []string { return s.held.Plan().Names() }
func (s *processStep) Changes() bool   { return len(s.Names()) > 0 }
func (s *processStep) UnitFiles() bool { return false }
func (s *processStep) Err() error      { return s.held.Err() }

func (s *processStep) Release() {
	s.held.Release()
	s.close()
	s.close = func() {}
}

func (s *processStep) Run(ctx context.Context, req *ansible.Request) (any, error) {
	defer s.Release()
	ctx, cancel := s.budget.run(ctx)
	defer cancel()
	return s.held.Finish(ctx, req.CheckMode, req.Warn)
}

// failed is a step whose arguments did not parse into its request (never, past its
// Spec) or whose side effects could not be opened: it plans nothing and fails with err.
type failed struct {
	plain
	err error
}

func (f failed) Names() []string                                    { return nil }
func (f failed) Changes() bool                                      { return false }
func (f failed) UnitFiles() bool                                    { return false }
func (f failed) Err() error                                         { return f.err }
func (f failed) Release()                                           {}
func (f failed) Run(context.Context, *ansible.Request) (any, error) { return nil, f.err }
