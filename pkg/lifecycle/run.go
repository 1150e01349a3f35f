package lifecycle

import (
	"context"
	"fmt"
	"time"

	"github.com/richt/services/pkg/ansible"
	"github.com/richt/services/pkg/contract"
	"github.com/richt/services/pkg/lock"
	"github.com/richt/services/pkg/reaction"
	"github.com/richt/services/pkg/timeout"
)

// Handler returns systemd_lifecycle's behaviour over the given side effects: under the
// unit's lock, Plan (reads only, decides everything), then Apply unless check mode. The
// result's `plan` is the plan Apply carried out, or would have in check mode.
func Handler(d Deps) ansible.Handler {
	return func(ctx context.Context, req *ansible.Request) (any, error) {
		var p Params
		if err := req.Decode(&p); err != nil {
			return nil, err
		}
		w := wantFrom(p)
		trig, _ := reaction.Parse(p.RestartOn, p.ReloadOn)
		limit := p.Timeout
		ctx, cancel := timeout.Deadline(ctx, limit)
		defer cancel()
		res := newResult(w.Unit)
		// One run per unit at a time, from the first read of its records to the end of
		// its verification: a run's reaction is never merged into a job another run
		// started, and no run reads or clears another's pending reaction half-way.
		if d.Lock != nil {
			release, err := d.Lock(ctx, lock.Unit(w.Unit))
			if err != nil {
				return res, fmt.Errorf("another run for %s did not finish within the timeout of %s: %w", w.Unit, limit, err)
			}
			defer release()
		}
		err := d.run(ctx, Request{Want: w, Triggers: trig, Limit: limit}, res, req)
		if err != nil && timeout.Expired(err) {
			err = fmt.Errorf("%w (timeout %s)", err, limit)
		}
		res.Changed = len(res.Actions) > 0
		if res.Changed && !req.CheckMode {
			res.Stamp(time.Now())
		}
		if res.Before != nil && res.After != nil {
			res.Diff = &ansible.Diff{
				Before: res.Before.text(), After: res.After.text(),
				BeforeHeader: w.Unit + " (before)", AfterHeader: w.Unit + " (after)",
			}
		}
		return res, err
	}
}

// newResult is the result before anything is known: empty lists, no reaction.
func newResult(unit string) *Result {
	return &Result{Unit: unit, Actions: []string{}, Plan: []string{}, Reaction: reaction.None, Triggers: []string{}}
}

// run is Plan, then Apply unless check mode; check mode reports the plan instead.
func (d Deps) run(ctx context.Context, r Request, res *Result, req *ansible.Request) error {
	p, err := d.Plan(ctx, r)
	if err != nil {
		return err
	}
	Describe(p, res)
	if req.CheckMode {
		Predict(p, res, req.Warn)
		return p.Refusal
	}
	return d.Apply(ctx, p, res, req.Warn)
}

// Describe fills in what the result says of a plan in both modes: the unit before, the
// pending record, a restart already served, the triggers, the reload capability the plan
// read, and the plan's steps (`plan`).
func Describe(p Plan, res *Result) {
	o := p.Observed
	res.Before, res.After = stateOf(o.Unit), stateOf(o.Unit)
	if o.Pending != nil {
		res.Pending = fmt.Sprintf("%s due since %s", o.Pending.Reaction, o.Pending.Since.Format(time.RFC3339))
		if p.Prep.Served {
			res.Pending += "; already served: the unit became active after it was recorded"
		}
	}
	if p.Prep.RestartServed != "" {
		res.RestartServed = fmt.Sprintf("the restart %s asked for was already done: the unit became active after the change had put its files in place (a package transaction restarts its units in its scriptlets)", p.Prep.RestartServed)
	}
	res.Triggers = labels(p.Triggers, p.Prep.Pending)
	if p.Known && o.Unit.LoadState == "loaded" {
		// After a sync, a real run reports what the manager then names (Apply).
		res.ReloadCapable = p.Capability
	}
	res.Plan = append(res.Plan, p.Names()...)
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
			res.DaemonReload = contract.ReloadPerformed // as the real run reports it
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
