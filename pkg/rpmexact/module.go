package rpmexact

import (
	"context"
	"time"

	"github.com/richt/services/pkg/ansible"
	"github.com/richt/services/pkg/contract"
	"github.com/richt/services/pkg/timeout"
)

// Handler returns rpm_exact's behaviour over the given side effects: Plan (reads only),
// then, unless in check mode, Apply of exactly that plan. Check mode reports the same plan
// and what it predicts (DNF's --assumeno summary, the unit-file change).
func Handler(d Deps) ansible.Handler {
	return func(ctx context.Context, req *ansible.Request) (any, error) {
		task, err := ansible.Parsed[Task](req)
		if err != nil {
			return nil, err
		}
		ctx, cancel := timeout.Deadline(ctx, task.Want.Timeout)
		defer cancel()
		r := &run{Deps: d, check: req.CheckMode, limit: task.Want.Timeout, want: task.Want, res: &Report{Moved: []Move{}, Plan: []string{}}}
		err = r.run(ctx)
		if task.Set {
			return r.setResult(), err
		}
		return r.singleResult(), err
	}
}

// run is one module run: the request, its plan, and its outcome.
type run struct {
	Deps
	check bool
	limit time.Duration // the timeout parameter
	want  Want
	res   *Report
	plan  Plan
	// before and after per requested name; after is the prediction until a transaction
	// settled.
	before, after map[string][]string
	// commands are the transactions started (or, in check mode, that would be).
	commands [][]string
}

func (r *run) run(ctx context.Context) error {
	// Wait for a transaction an earlier run left under way before looking: its outcome
	// is what this run must observe.
	release, earlier, err := r.Txn.Begin(ctx, r.check, r.want.Names())
	if err != nil {
		return err
	}
	defer release()
	// Reported when this run returns its result, failed or not, and while it still holds
	// the lock: a run killed before that leaves the report to the next one.
	if !r.check {
		defer MarkReported(earlier)
	}
	r.res.EarlierTransaction = earlier
	plan, err := r.Plan(ctx, r.want)
	r.planned(plan)
	if err != nil {
		r.res.Changed = false
		return err
	}
	if !plan.Changes() {
		if !r.check { // check mode writes nothing
			r.remember(plan.observed)
		}
		r.carry(earlier)
		return nil
	}
	if r.check {
		r.predictChange(true)
		return r.predict(ctx)
	}
	return r.apply(ctx)
}

// planned folds the plan, as far as Plan got, into the result: what was observed, the
// operations, the transactions, the predicted builds and the diff.
func (r *run) planned(p Plan) {
	r.plan = p
	r.res.Observed = p.Observed
	r.res.ManagerVersion = p.ManagerVersion
	r.res.Plan = p.Names()
	if p.observed.have == nil {
		return // nothing observed
	}
	r.before, r.after = map[string][]string{}, map[string][]string{}
	for _, n := range r.want.Names() {
		r.before[n] = nonNil(p.observed.have[n].NEVRAs)
		r.after[n] = r.before[n]
	}
	if !p.Changes() {
		return
	}
	r.res.Changed = true
	r.commands = p.Commands()
	for _, ep := range p.Entries {
		r.after[ep.Name] = ep.Expect
	}
	r.res.Diff = r.diff(nil)
}

// predictChange is check mode's package contract: what a real run that carries out the
// plan reports (or, with false, nothing, when the check fails).
func (r *run) predictChange(yes bool) {
	r.res.Changed, r.res.PackageChanged = yes, yes
	r.res.UnitFilesChanged, r.res.DaemonReload = false, contract.ReloadNone
	if yes && r.plan.UnitFilesChange() {
		r.res.UnitFilesChanged, r.res.DaemonReload = true, contract.ReloadNeeded
	}
}

// carry reports the change of an earlier transaction of these packages whose own run
// failed before it could (its deadline passed, it was killed): the task is changed, so a
// restart_on wired to it still fires once, and only in the run that reports it.
func (r *run) carry(e *Earlier) {
	if e == nil || !e.packageChanged {
		return
	}
	r.res.Changed, r.res.PackageChanged = true, true
	if e.unitFilesChanged {
		r.res.UnitFilesChanged, r.res.DaemonReload = true, contract.ReloadNeeded
	}
	r.res.Moved = mergeMoves(r.res.Moved, e.Moves)
	r.res.Stamp(e.ended)
	r.res.Placed(e.filesPlaced)
}
