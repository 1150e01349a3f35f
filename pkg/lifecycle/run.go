package lifecycle

import (
	"context"
	"fmt"
	"time"

	"github.com/richt/services/pkg/ansible"
	"github.com/richt/services/pkg/durable"
	"github.com/richt/services/pkg/lock"
	"github.com/richt/services/pkg/reaction"
	"github.com/richt/services/pkg/stamp"
	"github.com/richt/services/pkg/timeout"
)

// Handler returns systemd_lifecycle's behaviour over the given side effects:
// prepare (lock, records, observation, manager sync, reload capability) → Decide (pure)
// → check mode reports the plan, or Apply carries it out and verifies it.
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
		res := &Result{Unit: w.Unit, Actions: []string{}, Plan: []string{}, Reaction: reaction.None, Triggers: []string{}}
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
		r := &run{Deps: d, req: req, want: w, trig: trig, limit: limit, res: res}
		err := r.do(ctx)
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

type run struct {
	Deps
	req     *ansible.Request
	want    Want
	trig    reaction.Triggers
	limit   time.Duration
	res     *Result
	synced  durable.Sync     // the manager-sync record as read, cleared after a reload
	now     stamp.Stamp      // systemd's clock, read when a pending reaction is involved
	pending *durable.Pending // the record of a reaction still due (this run's, once written)
	earlier *durable.Pending // an earlier run's record that is not served yet
}

func (r *run) check() bool { return r.req.CheckMode }

func (r *run) act(s Step) { r.res.Actions = append(r.res.Actions, string(s)) }

// do is one run: Observe (reads only), Prepare (pure: what comes before the run state),
// carry out or, in check mode, report those steps, Decide (pure: the run state), and
// Apply. Check mode reports the steps a real run takes, in the same order.
func (r *run) do(ctx context.Context) error {
	o, err := r.observe(ctx)
	if err != nil {
		return err
	}
	prep := Prepare(r.want, r.trig, o)
	f, err := r.prepare(ctx, o, prep)
	if err != nil {
		return err
	}
	p, err := Decide(r.want, f)
	if err != nil {
		return err
	}
	r.res.Plan = append(r.res.Plan, p.Names()...)
	if r.check() {
		r.report(p)
		return nil
	}
	return r.apply(ctx, p, f)
}

// report is check mode's answer: the plan's steps and the state they lead to.
func (r *run) report(p Plan) {
	for _, s := range p.Steps {
		r.act(s)
	}
	r.res.Reaction = p.Reaction
	for _, w := range p.Warnings {
		r.req.Warn("%s", w)
	}
	r.res.After.State = map[bool]string{true: "running", false: "stopped"}[p.After.Running]
	r.res.After.Enabled = p.After.Enabled
	if p.After.Masked {
		r.res.After.LoadState, r.res.After.UnitFileState = "masked", "masked"
	}
	if p.Reobserve {
		r.req.Warn("%s: check mode shows the unmask only; what follows it is decided once the unit is loaded", r.want.Unit)
	}
}
