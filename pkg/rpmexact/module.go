package rpmexact

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/richt/services/pkg/ansible"
	"github.com/richt/services/pkg/contract"
	"github.com/richt/services/pkg/timeout"
)

// Handler returns rpm_exact's behaviour over the given side effects.
func Handler(d Deps) ansible.Handler {
	return func(ctx context.Context, req *ansible.Request) (any, error) {
		task, err := ansible.Parsed[Task](req)
		if err != nil {
			return nil, err
		}
		ctx, cancel := timeout.Deadline(ctx, task.Timeout)
		defer cancel()
		r := &run{Deps: d, req: req, limit: task.Timeout, want: task.Want, res: &Report{Moved: []Move{}}}
		err = r.run(ctx)
		if task.Set {
			return r.setResult(), err
		}
		return r.singleResult(), err
	}
}

// run is one module run: the request, what it observed and decided, and its outcome.
type run struct {
	Deps
	req   *ansible.Request
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
	names := r.want.Names()
	// Wait for a transaction an earlier run left under way before looking: its outcome
	// is what this run must observe.
	release, earlier, err := r.Txn.Begin(ctx, r.req.CheckMode, names)
	if err != nil {
		return err
	}
	defer release()
	// Reported when this run returns its result, failed or not, and while it still holds
	// the lock: a run killed before that leaves the report to the next one.
	if !r.req.CheckMode {
		defer MarkReported(earlier)
	}
	r.res.EarlierTransaction = earlier
	obs, err := r.observe(ctx, names)
	r.res.Observed = obs.source
	if err != nil {
		return err
	}
	r.before, r.after = map[string][]string{}, map[string][]string{}
	for _, n := range names {
		r.before[n] = nonNil(obs.have[n].NEVRAs)
		r.after[n] = r.before[n]
	}
	if r.plan, err = Decide(r.want, obs.have); err != nil {
		return err
	}
	if !r.plan.Changes() {
		if !r.req.CheckMode { // check mode writes nothing
			r.remember(obs)
		}
		r.carry(earlier)
		return nil
	}
	r.res.Changed = true
	r.commands = r.plan.Commands()
	for _, ep := range r.plan.Entries {
		r.after[ep.Name] = ep.Expect
	}
	r.res.Diff = r.diff(nil)

	// DNF 4 is checked before any transaction, and before check mode reports one; a
	// converged run never gets here and does not pay for it.
	if r.res.ManagerVersion, err = r.checkManager(ctx, r.want.Manager, !r.req.CheckMode); err != nil {
		r.res.Changed = false
		return err
	}
	if r.req.CheckMode {
		r.res.PackageChanged = true // as the real run would report
		return r.predict(ctx)
	}
	for i, argv := range r.commands {
		if err := r.transact(ctx, argv); err != nil {
			r.commands = r.commands[:i+1]
			return err
		}
	}
	for _, e := range r.want.Entries {
		if err := Holds(e, r.after[e.Name]); err != nil {
			return fmt.Errorf("%s exited 0 but the RPM database does not show the requested state: %w", strings.Join(r.commands[len(r.commands)-1], " "), err)
		}
	}
	return nil
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
