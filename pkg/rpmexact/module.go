package rpmexact

import (
	"context"
	"time"

	"github.com/richt/services/pkg/ansible"
	"github.com/richt/services/pkg/contract"
	"github.com/richt/services/pkg/timeout"
)

// Handler returns rpm_exact's behaviour over the given side effects: Hold (the wait for
// an earlier transaction, the transaction lock, and Plan, which reads only), then Finish,
// which carries out exactly that plan unless in check mode. Check mode reports the same
// plan and what it predicts (DNF's --assumeno summary, the unit-file change). One deadline,
// the task's timeout, covers both.
func Handler(d Deps) ansible.Handler {
	return func(ctx context.Context, req *ansible.Request) (any, error) {
		task, err := ansible.Parsed[Task](req)
		if err != nil {
			return nil, err
		}
		ctx, cancel := timeout.Deadline(ctx, task.Want.Timeout)
		defer cancel()
		return d.Hold(ctx, task, req.CheckMode).Finish(ctx)
	}
}

// Held is one rpm_exact run held open from its plan to its result. Hold waits for a
// transaction an earlier run left under way and takes the transaction lock
// (Transactor.Begin) before it plans, and the lock is held until Finish or Release: no
// other run's transaction can move the RPM database between the plan and its
// transactions, so Finish carries out the plan as it was made, without reading again.
// A caller that holds the plan across other work (the service module, from composing its
// plan to its packages step) keeps other package transactions waiting that long.
type Held struct {
	r       *run
	task    Task
	release func()
	earlier *Earlier
	// err is why the plan is not complete (the wait, a read, Decide): Finish reports it
	// and changes nothing.
	err error
}

// Hold begins a run of task: the wait for an earlier transaction, the transaction lock,
// and the plan (Plan: reads only). It always returns a Held; Err says whether the plan
// could be made. ctx bounds the wait and the reads.
func (d Deps) Hold(ctx context.Context, task Task, check bool) *Held {
	h := &Held{task: task, release: func() {}}
	h.r = &run{Deps: d, check: check, limit: task.Want.Timeout, want: task.Want, res: &Report{Moved: []Move{}, Plan: []string{}}}
	// Wait for a transaction an earlier run left under way before looking: its outcome
	// is what this run must observe.
	release, earlier, err := d.Txn.Begin(ctx, check, task.Want.Names())
	if err != nil {
		h.err = err
		return h
	}
	h.release, h.earlier = release, earlier
	h.r.res.EarlierTransaction = earlier
	plan, err := d.Plan(ctx, task.Want)
	h.r.planned(plan)
	if err != nil {
		h.r.res.Changed = false
		h.err = err
	}
	return h
}

// Plan is the held plan, as far as Hold got (Err says why not further).
func (h *Held) Plan() Plan { return h.r.plan }

// Err is why the held plan could not be made; nil when it was.
func (h *Held) Err() error { return h.err }

// Finish carries out exactly the held plan (in check mode: reports it and predicts what
// DNF would move), returns the step's result (a Result, or a SetResult for `packages`),
// and releases the lock. ctx bounds the transactions.
func (h *Held) Finish(ctx context.Context) (any, error) {
	defer h.Release()
	err := h.err
	if err == nil {
		err = h.r.finish(ctx, h.earlier)
		// Reported when this run returns its result, failed or not, and while it still
		// holds the lock: a run killed before that leaves the report to the next one. A
		// run whose plan failed leaves it too (docs/reliability.md: reported again rather
		// than lost).
		if !h.r.check {
			MarkReported(h.earlier)
		}
	}
	if h.task.Set {
		return h.r.setResult(), err
	}
	return h.r.singleResult(), err
}

// Release lets go of the transaction lock without carrying out the plan (an earlier
// transaction's outcome stays unreported, for the next run); after Finish it does nothing.
func (h *Held) Release() {
	h.release()
	h.release = func() {}
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

// finish is what follows the plan: a converged run remembers what it read and reports an
// earlier transaction's change; check mode predicts; a real run applies.
func (r *run) finish(ctx context.Context, earlier *Earlier) error {
	if !r.plan.Changes() {
		if !r.check { // check mode writes nothing
			r.remember(r.plan.observed)
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
