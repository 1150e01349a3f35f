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

// Packages is rpm_exact as the service's packages step: its plan is made under the
// transaction lock, after the wait for a transaction an earlier run left under way
// (rpmexact.Deps.Hold), and the lock is held until the step runs, so the plan the service
// composed from is the one carried out (rpmexact.Held.Finish). The wait and the reads
// have the step's timeout, and so does the transaction.
func Packages(d rpmexact.Deps) Module {
	return Module{Spec: rpmexact.Spec(), Plan: func(ctx context.Context, req *ansible.Request) Step {
		task, err := ansible.Parsed[rpmexact.Task](req)
		if err != nil {
			return failed{err}
		}
		ctx, cancel := timeout.Deadline(ctx, task.Want.Timeout)
		defer cancel()
		return packagesStep{held: d.Hold(ctx, task, req.CheckMode), limit: task.Want.Timeout}
	}}
}

type packagesStep struct {
	held  *rpmexact.Held
	limit time.Duration
}

func (s packagesStep) Names() []string { return s.held.Plan().Names() }
func (s packagesStep) Changes() bool   { return s.held.Plan().Changes() }
func (s packagesStep) UnitFiles() bool { return s.held.Plan().UnitFilesChange() }
func (s packagesStep) Err() error      { return s.held.Err() }
func (s packagesStep) Release()        { s.held.Release() }

func (s packagesStep) Run(ctx context.Context, _ *ansible.Request) (any, error) {
	ctx, cancel := timeout.Deadline(ctx, s.limit)
	defer cancel()
	return s.held.Finish(ctx)
}

// Files is unit_override as the service's files step: its plan (override.Deps.Plan) is
// made before the packages step and applied after it (override.Deps.Apply), which takes the
// unit's lock and decides again only if another run changed the file in between.
func Files(d override.Deps) Module {
	return Module{Spec: override.Spec(), Plan: func(ctx context.Context, req *ansible.Request) Step {
		task, err := ansible.Parsed[override.Task](req)
		if err != nil {
			return failed{err}
		}
		ctx, cancel := timeout.Deadline(ctx, task.Params.Timeout)
		defer cancel()
		p, err := d.Plan(ctx, task)
		return &filesStep{d: d, plan: p, err: err}
	}}
}

type filesStep struct {
	d    override.Deps
	plan override.Plan
	err  error
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
	ctx, cancel := timeout.Deadline(ctx, s.plan.Timeout)
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
// until the step runs (lifecycle.Held.Finish).
func Processes(open func(ctx context.Context, scope string) (lifecycle.Deps, func(), error)) Module {
	return Module{Spec: lifecycle.Spec(), Plan: func(ctx context.Context, req *ansible.Request) Step {
		task, err := ansible.Parsed[lifecycle.Task](req)
		if err != nil {
			return failed{err}
		}
		d, closeFn, err := open(ctx, task.Scope)
		if err != nil {
			return failed{err}
		}
		ctx, cancel := timeout.Deadline(ctx, task.Limit)
		defer cancel()
		return &processStep{held: d.Hold(ctx, task.Request), limit: task.Limit, close: closeFn}
	}}
}

type processStep struct {
	held  *lifecycle.Held
	limit time.Duration
	close func()
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
	ctx, cancel := timeout.Deadline(ctx, s.limit)
	defer cancel()
	return s.held.Finish(ctx, req.CheckMode, req.Warn)
}

// failed is a step whose arguments did not parse into its request (never, past its
// Spec) or whose side effects could not be opened: it plans nothing and fails with err.
type failed struct{ err error }

func (f failed) Names() []string                                    { return nil }
func (f failed) Changes() bool                                      { return false }
func (f failed) UnitFiles() bool                                    { return false }
func (f failed) Err() error                                         { return f.err }
func (f failed) Release()                                           {}
func (f failed) Run(context.Context, *ansible.Request) (any, error) { return nil, f.err }
