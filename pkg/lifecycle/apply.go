package lifecycle

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/richt/services/pkg/contract"
	"github.com/richt/services/pkg/durable"
	"github.com/richt/services/pkg/reaction"
	"github.com/richt/services/pkg/stamp"
	"github.com/richt/services/pkg/systemd"
)

// Apply carries out exactly the plan's steps, in the plan's order, and verifies each; res
// is the result Describe began, and its actions are the plan's steps. It decides nothing:
// where the plan predicted the unit after a step (a daemon-reload, an unmask), Apply
// observes the unit after it and fails with Decide's own refusal when the prediction does
// not hold. A boot-state step is carried out also when the unit turns out to show its
// outcome already (after an unmask the plan cannot see the boot state): enabling an
// enabled unit changes nothing.
func (d Deps) Apply(ctx context.Context, p Plan, res *Result, warn func(format string, args ...any)) error {
	a := &applier{
		Deps: d, plan: p, unit: p.Want.Unit, res: res, warn: warn, last: p.Observed.Unit,
		book:  newLedger(d, p, res.Triggers),
		watch: newWatcher(d, p.Want.Unit, p.Limit, res),
	}
	if err := a.prep(ctx); err != nil {
		return err
	}
	if p.Observed.PredictedInstall && !p.Synced() {
		// The manager was reloaded after the package change (an earlier process step of
		// the service), yet did not find the unit: the plan's prediction is checked as
		// after a sync, so the task fails with Decide's words, not a job for no unit.
		if err := a.reobserve(ctx); err != nil {
			return a.refused(err)
		}
	}
	if p.Refusal != nil {
		return p.Refusal
	}
	return a.decision(ctx)
}

// applier carries out one plan: the steps ahead of the run state, the configuration
// steps, the run-state step with its verification and probe, and the pending record.
type applier struct {
	Deps
	plan  Plan
	unit  string
	res   *Result
	warn  func(format string, args ...any)
	book  *ledger
	watch *watcher
	last  systemd.Props // the unit as last observed
}

func (a *applier) act(s Step) { a.res.Actions = append(a.res.Actions, string(s)) }

// prep carries out the steps ahead of the run state: the due reaction recorded before
// anything can fail, an enable ahead of the sync, and the sync.
func (a *applier) prep(ctx context.Context) error {
	if served := a.plan.Prep.SyncServed; served.Due() && !a.plan.Synced() {
		// The manager's last load served these entries: settled without a reload (a sync
		// settles every entry the plan read).
		if err := a.Store.ClearManagerSync(ctx, served); err != nil {
			return err
		}
	}
	for _, step := range a.plan.Prep.Steps {
		switch step {
		case StepReportPending:
			if err := a.book.report(); err != nil {
				return err
			}
		case StepRecordPending:
			if err := a.book.record(a.plan.Prep.Due, false); err != nil {
				return err
			}
		case StepEnable, StepDisable:
			// The plan read the boot state from disk (Observation.FileState), which is what
			// EnableFiles changes: the step is an action whatever it reports.
			a.act(step)
			if _, err := a.Systemd.(systemd.UnitFileEnabler).EnableFiles(ctx, a.unit, step == StepEnable); err != nil {
				return fmt.Errorf("%s %s: %w", step, a.unit, err)
			}
		case StepDaemonReload:
			if err := a.sync(ctx); err != nil {
				return err
			}
		}
	}
	return nil
}

// refused is err, the refusal of the unit as the manager shows it after a step ahead of
// the run state (a sync, a predicted install), with the reload this run recorded ahead
// withdrawn: a reaction refused before acting leaves no record (Plan does the same for a
// refusal it knows). A restart stays recorded: any later run can carry it out.
func (a *applier) refused(err error) error {
	if err != nil && a.plan.Prep.RecordPending && a.plan.Prep.Due != reaction.Restart {
		if werr := a.book.withdraw(); werr != nil {
			return fmt.Errorf("%w; withdrawing the reload recorded ahead failed: %w", err, werr)
		}
	}
	return err
}

// sync reloads systemd's manager (a change, reported as the daemon-reload action),
// settling the manager-sync records the plan read, observes the unit again and checks
// it against the plan's prediction.
func (a *applier) sync(ctx context.Context) error {
	a.res.SyncReasons = append(a.res.SyncReasons, a.plan.Prep.SyncReasons...)
	a.act(StepDaemonReload)
	a.res.DaemonReload = contract.ReloadPerformed
	if err := systemd.ReloadManager(ctx, a.Systemd, a.Store, a.plan.Observed.Synced); err != nil {
		return err
	}
	return a.refused(a.reobserve(ctx))
}

// reobserve observes the unit again where the plan predicted it (after a sync, or a
// predicted install the manager was reloaded for before this run) and checks it against
// the prediction.
func (a *applier) reobserve(ctx context.Context) error {
	obs, err := a.Systemd.Show(ctx, a.unit)
	if err != nil {
		return err
	}
	a.last = obs
	a.res.After = stateOf(obs)
	return a.loaded(a.plan.Want)
}

// loaded checks that the unit as the manager now shows it is one the plan holds for:
// Decide's refusal of it (a unit still not found, reload_on on files that cannot
// reload), with the reload capability read from the files the manager now names.
func (a *applier) loaded(w Want) error {
	f := Facts{Unit: a.last}
	if w.ReloadOn && a.last.LoadState == "loaded" {
		c, err := capabilityOf(a.Root, a.unit, a.last.FragmentPath, a.last.DropInPaths)
		if err != nil {
			return err
		}
		a.res.ReloadCapable, f.Capability = &c, &c
	}
	return refusal(w, f)
}

// decision carries out the run state's decision: the configuration steps one by one,
// then the run-state step, or, without one, what a converged unit still owes.
func (a *applier) decision(ctx context.Context) error {
	p := a.plan.Decision
	for _, w := range p.Warnings {
		a.warn("%s", w)
	}
	a.res.Reaction = p.Reaction
	for i, step := range p.Steps {
		if runStepAt(p.Steps, i) {
			return a.runState(ctx, step)
		}
		if err := a.configure(ctx, step); err != nil {
			return err
		}
	}
	return a.converged(ctx)
}

func isRunStep(s Step) bool {
	return s == StepStart || s == StepStop || s == StepRestart || s == StepReload
}

// configure carries out one configuration step (or the stop before a mask) and verifies it.
func (a *applier) configure(ctx context.Context, step Step) error {
	unit := a.unit
	var err error
	switch step {
	case StepEnable, StepDisable:
		a.act(step)
		err = a.Systemd.SetEnabled(ctx, unit, step == StepEnable)
	case StepMask, StepUnmask:
		a.act(step)
		err = a.Systemd.SetMasked(ctx, unit, step == StepMask)
	case StepStop:
		a.act(step)
		if err = a.Systemd.Job(ctx, string(StepStop), unit); err != nil {
			return a.watch.failure(ctx, reaction.Stop, reaction.None, err, nil)
		}
		final, err := a.watch.verify(ctx, reaction.Stop, 0)
		a.last = final
		if err != nil {
			return a.watch.failure(ctx, reaction.Stop, reaction.None, nil, err)
		}
		return nil
	}
	if err != nil {
		hint := ""
		if step == StepMask && strings.HasPrefix(a.res.Before.fragment, "/etc/systemd/system/") {
			hint = fmt.Sprintf("; a mask is a link to /dev/null at /etc/systemd/system/%s, where this unit's own file %s is: a unit defined there cannot be masked, remove its file instead", unit, a.res.Before.fragment)
		}
		return fmt.Errorf("%s %s: %w%s", step, unit, err, hint)
	}
	obs, err := a.Systemd.Show(ctx, unit)
	if err != nil {
		return err
	}
	a.last = obs
	a.res.After = stateOf(obs)
	switch step {
	case StepEnable, StepDisable:
		switch got := obs.Enabled(); {
		case got == nil:
			// Only a boot state the plan could not read (after an unmask) ends here: the
			// unit has no enablement of its own, as Decide would have warned.
			a.warn("%s", bootWarning(unit, step == StepEnable, obs.UnitFileState))
		case *got != (step == StepEnable):
			return fmt.Errorf("%s %s: systemd accepted it but UnitFileState is %q", step, unit, obs.UnitFileState)
		}
	case StepMask:
		if obs.LoadState != "masked" {
			return fmt.Errorf("mask %s: systemd accepted it but LoadState is %q", unit, obs.LoadState)
		}
	case StepUnmask:
		if obs.LoadState == "masked" {
			return fmt.Errorf("unmask %s: systemd accepted it but the unit is still masked (a mask in /run or /usr is not the administrator's to remove)", unit)
		}
		// The plan decided what follows for the unit the unmask loads; it must hold.
		rest := a.plan.Want
		rest.Masked = nil
		return a.loaded(rest)
	}
	return nil
}

// runState carries out the run-state step: the reaction is recorded first, so nothing is
// lost if this run fails or stops; then the job, its verification, and the probe.
func (a *applier) runState(ctx context.Context, step Step) error {
	p := a.plan.Decision
	due := a.plan.Prep.Due
	action := reaction.Action(step)
	if p.RecordPending {
		// Stamped again just before the job: a later activation proves this very job ran.
		if err := a.book.record(due, true); err != nil {
			return err
		}
	}
	var old map[int]bool
	if p.Quiet > 0 {
		// A signalled reload is proven by its processes (proof.go): the ones before it.
		old = a.watch.before(ctx)
	}
	var sent *stamp.Stamp
	if action == reaction.ReloadIt {
		// Every file in place now is read by this reload: the record of it says so.
		if at, err := a.clock(); err == nil {
			sent = &at
		}
	}
	a.act(step) // only now is the job sent
	before := a.last
	jobErr := a.Systemd.Job(ctx, string(action), a.unit)
	var final systemd.Props
	var err error
	var probing *probeRun
	if jobErr == nil && p.Quiet > 0 {
		// Active once the job ended; the settle comes with the proof, after the quiet.
		final, err = a.watch.verify(ctx, action, 0)
	} else if jobErr == nil {
		// The probe runs while the settle time passes: both must hold, and a service
		// usually answers within that window, so neither waits for the other.
		probing = a.watch.startProbe(ctx, p)
		final, err = a.watch.verify(ctx, action, p.Settle)
	}
	if err == nil && jobErr == nil && action == reaction.ReloadIt && before.InvocationID != "" && final.InvocationID != before.InvocationID {
		// A reload keeps the unit's process: a new invocation means it died and came back
		// (Restart=), which is no successful reload.
		err = fmt.Errorf("%s was started anew during its reload (invocation %s, then %s): the reload did not keep the process", a.unit, before.InvocationID, final.InvocationID)
	}
	if jobErr != nil || err != nil {
		probing.abandon()
		owed := reaction.None
		if p.RecordPending {
			owed = due
		}
		return a.watch.failure(ctx, action, owed, jobErr, err)
	}
	// verify already recorded the final state in res.After. main_pid is the process a
	// start or restart left running; a stop leaves none and a reload keeps the old one.
	if action == reaction.Start || action == reaction.RestartIt {
		a.res.MainPID = final.MainPID
		if pr, ok := a.Systemd.(systemd.PIDReader); ok {
			if pid, err := pr.MainPID(ctx, a.unit); err == nil {
				a.res.MainPID = pid
			}
		}
	}
	// The reaction is carried out: clear it before probing, since a failing probe never
	// restarts anything by itself.
	if p.RecordPending || p.ClearPending {
		if err := a.book.clear(); err != nil {
			probing.abandon()
			return err
		}
	}
	if p.Quiet > 0 {
		if err := a.watch.prove(ctx, p, old, final.InvocationID); err != nil {
			return err
		}
	} else if err := a.watch.health(ctx, p, probing); err != nil {
		return err
	}
	if action == reaction.ReloadIt && sent != nil {
		a.reloaded(*sent, final.InvocationID)
	}
	if probing != nil && p.Settle == 0 && (action == reaction.Start || action == reaction.RestartIt) {
		// The probe stood in for the settle time: the process that answered must be the
		// start's, still active.
		now, err := a.Systemd.Show(ctx, a.unit)
		if err != nil {
			return err
		}
		if !now.Running() || now.InvocationID != final.InvocationID {
			return fmt.Errorf("%s answered its health probe after its %s but did not stay up: it is %s (invocation %s, then %s)", a.unit, action, now.ActiveState, final.InvocationID, now.InvocationID)
		}
		a.res.After = stateOf(now)
	}
	return nil
}

// converged finishes a plan without a run-state step: pending records it settled are
// cleared, and a unit that should run is probed.
func (a *applier) converged(ctx context.Context) error {
	if a.plan.Decision.ClearPending {
		if err := a.book.clear(); err != nil {
			return err
		}
	}
	return a.watch.probe(ctx, a.plan.Decision)
}

// reloaded records the unit's verified reload, sent at: a run that owes a reload for
// files placed before it finds it served (Prepare). A record that cannot be written costs
// at most one more reload, so it warns and does not fail the run.
func (a *applier) reloaded(at stamp.Stamp, inv string) {
	r := durable.Reloaded{At: at, Invocation: inv, Triggers: a.res.Triggers, Time: time.Now().UTC()}
	if err := a.Store.SetReloaded(a.unit, r); err != nil {
		a.warn("%s: the reload was verified, but its record could not be written (a run waiting for this one may reload once more): %v", a.unit, err)
	}
}
