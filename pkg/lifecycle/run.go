package lifecycle

import (
	"context"
	"fmt"
	"time"

	"github.com/richt/services/pkg/ansible"
	"github.com/richt/services/pkg/contract"
	"github.com/richt/services/pkg/invocation"
	"github.com/richt/services/pkg/lock"
	"github.com/richt/services/pkg/reaction"
	"github.com/richt/services/pkg/systemd"
	"github.com/richt/services/pkg/timeout"
)

// Handler returns systemd_lifecycle's behaviour over the given side effects: Hold (the
// unit's lock, then Plan, which reads only and decides everything), then Finish: Apply
// unless check mode. The result's `plan` is the plan Apply carried out, or would have in
// check mode. One deadline, the task's timeout, covers both.
func Handler(d Deps) ansible.Handler {
	return func(ctx context.Context, req *ansible.Request) (any, error) {
		task, err := ansible.Parsed[Task](req)
		if err != nil {
			return nil, err
		}
		ctx, cancel := timeout.Deadline(ctx, task.Limit)
		defer cancel()
		return d.Hold(ctx, task.Request).Finish(ctx, req.CheckMode, req.Warn)
	}
}

// Held is one run held open from its plan to its result, under the unit's lock: one run
// per unit at a time, from the first read of its records to the end of its verification,
// so a run's reaction is never merged into a job another run started, and no run reads or
// clears another's pending reaction half-way. Finish carries out the held plan and
// nothing else.
type Held struct {
	d       Deps
	req     Request
	res     *Result
	plan    Plan
	release func()
	// lockErr is why the lock could not be had; err why the plan could not be made;
	// resetErr why the failed state asked to be cleared (Request.ResetFailed) was not:
	// a warning, the plan is made all the same.
	lockErr, err, resetErr error
}

// Hold takes the unit's lock (Deps.Lock; waiting within ctx) and plans under it. It always
// returns a Held; Err says whether the plan could be made.
func (d Deps) Hold(ctx context.Context, r Request) *Held {
	unit := r.Want.Unit
	h := &Held{d: d, req: r, res: newResult(unit), release: func() {}}
	if d.Lock != nil {
		release, err := d.Lock(ctx, lock.Unit(unit))
		if err != nil {
			h.lockErr = fmt.Errorf("another run for %s did not finish within the timeout of %s: %w", unit, r.Limit, err)
			return h
		}
		h.release = release
	}
	if rf, ok := d.Systemd.(systemd.FailedResetter); ok && r.ResetFailed {
		h.resetErr = rf.ResetFailed(ctx, unit)
	}
	h.plan, h.err = d.Plan(ctx, r)
	if h.err == nil {
		Describe(h.plan, h.res)
	}
	return h
}

// Plan is the held plan (as far as it got: Err says why not further).
func (h *Held) Plan() Plan { return h.plan }

// Err is why the held plan could not be made (the lock, an observation); nil when it was.
func (h *Held) Err() error {
	if h.lockErr != nil {
		return h.lockErr
	}
	return h.err
}

// Finish carries out exactly the held plan (Apply; in check mode, Predict reports it
// instead), returns the run's result and releases the unit's lock.
func (h *Held) Finish(ctx context.Context, check bool, warn func(format string, args ...any)) (*Result, error) {
	defer h.Release()
	res, p := h.res, h.plan
	if h.lockErr != nil {
		return res, h.lockErr
	}
	if h.resetErr != nil {
		warn("reset-failed: %v", h.resetErr)
	}
	err := h.err
	if err == nil {
		libraryWarnings(p, warn)
		if check {
			p.Refusal = unseen(p)
			Predict(p, res, warn)
			err = p.Refusal
		} else {
			err = h.d.Apply(ctx, p, res, warn)
		}
	}
	if err != nil && timeout.Expired(err) {
		err = fmt.Errorf("%w (timeout %s)", err, h.req.Limit)
	}
	res.Changed = len(res.Actions) > 0
	res.Summary = Summary(res, check, err != nil)
	if res.Changed && !check {
		res.Stamp(time.Now())
	}
	if res.Before != nil && res.After != nil {
		unit := h.req.Want.Unit
		res.Diff = &ansible.Diff{
			Before: res.Before.text(), After: res.After.text(),
			BeforeHeader: unit + " (before)", AfterHeader: unit + " (after)",
		}
	}
	return res, err
}

// unseen is check mode's refusal of a unit the plan takes as loaded by a sync it cannot
// perform (Plan.Unseen), in the words a real run fails with after its sync; the plan's
// own refusal when it has one.
func unseen(p Plan) error {
	if p.Refusal != nil || !p.Unseen {
		return p.Refusal
	}
	if err := refusal(p.Want, Facts{Unit: p.Observed.Unit}); err != nil {
		return fmt.Errorf("%w; in check mode the daemon-reload that might load it was not performed, and no file of it is on disk", err)
	}
	return nil
}

// Release gives the unit's lock back without carrying out the plan; after Finish it does
// nothing.
func (h *Held) Release() {
	h.release()
	h.release = func() {}
}

// newResult is the result before anything is known: empty lists, no reaction.
func newResult(unit string) *Result {
	return &Result{Unit: unit, Actions: []string{}, Plan: []string{}, Reaction: reaction.None, Triggers: []string{}}
}

// Describe fills in what the result says of a plan in both modes: the unit before, the
// pending record, a restart already served, the triggers, the reload capability the plan
// read, and the plan's steps (`plan`).
func Describe(p Plan, res *Result) {
	o := p.Observed
	res.Before, res.After = stateOf(o.Unit), stateOf(o.Unit)
	if o.Pending != nil && !invocation.Since(o.Pending.Since) {
		res.Pending = fmt.Sprintf("%s due since %s", o.Pending.Reaction, o.Pending.Since.Format(time.RFC3339))
		if p.Prep.Served {
			res.Pending += "; already served: the unit became active after it was recorded"
		}
	}
	if p.Prep.RestartServed != "" {
		res.RestartServed = fmt.Sprintf("the restart %s asked for was already done: the unit became active after the change had put its files in place (a package transaction restarts its units in its scriptlets)", p.Prep.RestartServed)
	}
	if p.Prep.ReloadServed != "" {
		res.ReloadServed = fmt.Sprintf("the reload %s asked for was already done: a verified reload of the unit (another run's) was sent, or the unit became active, after the change had put its files in place", p.Prep.ReloadServed)
	}
	if p.Prep.LoadServed && !p.Synced() {
		res.SyncServed = loadServedNote
	}
	res.Triggers = labels(p.Triggers, p.Prep.Pending)
	if p.Known && o.Unit.LoadState == "loaded" {
		// After a sync, a real run reports what the manager then names (Apply).
		res.ReloadCapable = p.Capability
	}
	res.Plan = append(res.Plan, p.Names()...)
	res.Libraries = librariesResult(p)
}

// Predict is check mode's answer: the plan's changes as the actions a real run reports,
// and the state they lead to.
func Predict(p Plan, res *Result, warn func(format string, args ...any)) {
	for _, s := range p.Prep.Steps {
		switch s {
		case StepEnable, StepDisable:
			res.Actions = append(res.Actions, string(s))
		case StepDaemonReload:
			res.SyncReasons = append(res.SyncReasons, p.Prep.SyncReasons...)
			res.Actions = append(res.Actions, string(s))
			res.DaemonReload = contract.ReloadPlanned
		}
	}
	if p.Observed.PredictedInstall {
		warn("%s: not installed yet; check mode plans for the unit the predicted package change installs (loaded, stopped, disabled)", p.Want.Unit)
	}
	if p.Refusal != nil {
		return
	}
	d := p.Decision
	for _, s := range d.Steps {
		res.Actions = append(res.Actions, string(s))
	}
	res.Reaction = d.Reaction
	for _, w := range d.Warnings {
		warn("%s", w)
	}
	res.After.State = map[bool]string{true: "running", false: "stopped"}[d.After.Running]
	res.After.Enabled = d.After.Enabled
	if d.After.Masked {
		res.After.LoadState, res.After.UnitFileState = "masked", "masked"
	}
}
