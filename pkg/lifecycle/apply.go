package lifecycle

import (
	"context"
	"fmt"
	"github.com/richt/services/pkg/systemd"
	"strings"

	"github.com/richt/services/pkg/reaction"
	"github.com/richt/services/pkg/stamp"
)

// apply carries out a plan step by step. After a step that changes what the rest was
// decided from (unmask, enable, disable), it observes again and decides again, so the
// run-state action always comes from the state observed immediately before acting.
func (r *run) apply(ctx context.Context, p Plan, f Facts) error {
	for _, w := range p.Warnings {
		r.req.Warn("%s", w)
	}
	r.res.Reaction = p.Reaction
	for rounds := 0; len(p.Steps) > 0; rounds++ {
		if rounds > len(allSteps) {
			return fmt.Errorf("%s: the plan did not converge after %v (a bug: please report it)", r.want.Unit, r.res.Actions)
		}
		step := p.Steps[0]
		if !runStepAt(p.Steps, 0) {
			// Configuration steps (and the stop before a mask) are verified one by one.
			obs, err := r.configure(ctx, step)
			if err != nil {
				return err
			}
			f.Unit = obs
			if step == StepStop || step == StepMask {
				p.Steps = p.Steps[1:]
				continue
			}
			want := r.want
			if step == StepUnmask {
				want.Masked = nil
			}
			if f.Capability == nil && want.ReloadOn && obs.LoadState == "loaded" {
				c, err := r.capability(obs, true)
				if err != nil {
					return err
				}
				r.res.ReloadCapable, f.Capability = &c, &c
			}
			next, err := Decide(want, f)
			if err != nil {
				return err
			}
			if step == StepUnmask { // the unit's warnings were not known before it was loaded
				for _, w := range next.Warnings {
					r.req.Warn("%s", w)
				}
			}
			r.res.Reaction = next.Reaction
			p = next
			continue
		}
		return r.runState(ctx, p, f, step)
	}
	return r.converged(ctx, p)
}

var allSteps = []Step{StepStop, StepMask, StepUnmask, StepEnable, StepDisable, StepStart, StepRestart, StepReload}

func isRunStep(s Step) bool {
	return s == StepStart || s == StepStop || s == StepRestart || s == StepReload
}

// configure carries out one configuration step (or the stop before a mask) and verifies it.
func (r *run) configure(ctx context.Context, step Step) (systemd.Props, error) {
	r.act(step)
	unit := r.want.Unit
	var err error
	switch step {
	case StepEnable, StepDisable:
		err = r.Systemd.SetEnabled(ctx, unit, step == StepEnable)
	case StepMask, StepUnmask:
		err = r.Systemd.SetMasked(ctx, unit, step == StepMask)
	case StepStop:
		if err = r.Systemd.Job(ctx, string(StepStop), unit); err == nil {
			var final systemd.Props
			if final, err = r.verify(ctx, reaction.Stop, 0); err == nil {
				return final, nil
			}
			return final, r.failure(reaction.Stop, reaction.None, nil, err)
		}
		return systemd.Props{}, r.failure(reaction.Stop, reaction.None, err, nil)
	}
	if err != nil {
		hint := ""
		if step == StepMask && strings.HasPrefix(r.res.Before.fragment, "/etc/systemd/system/") {
			hint = fmt.Sprintf("; a mask is a link to /dev/null at /etc/systemd/system/%s, where this unit's own file %s is: a unit defined there cannot be masked, remove its file instead", unit, r.res.Before.fragment)
		}
		return systemd.Props{}, fmt.Errorf("%s %s: %w%s", step, unit, err, hint)
	}
	obs, err := r.Systemd.Show(ctx, unit)
	if err != nil {
		return obs, err
	}
	r.res.After = stateOf(obs)
	switch step {
	case StepEnable, StepDisable:
		if got := obs.Enabled(); got == nil || *got != (step == StepEnable) {
			return obs, fmt.Errorf("%s %s: systemd accepted it but UnitFileState is %q", step, unit, obs.UnitFileState)
		}
	case StepMask:
		if obs.LoadState != "masked" {
			return obs, fmt.Errorf("mask %s: systemd accepted it but LoadState is %q", unit, obs.LoadState)
		}
	case StepUnmask:
		if obs.LoadState == "masked" {
			return obs, fmt.Errorf("unmask %s: systemd accepted it but the unit is still masked (a mask in /run or /usr is not the administrator's to remove)", unit)
		}
	}
	return obs, nil
}

// runState carries out the run-state step: the reaction is recorded first, so nothing is
// lost if this run fails or stops; then the job, its verification, and the probe.
func (r *run) runState(ctx context.Context, p Plan, f Facts, step Step) error {
	action := reaction.Action(step)
	if p.RecordPending {
		// Stamped again just before the job: a later activation proves this very job ran.
		r.now = stamp.Stamp{}
		if _, err := r.recordPending(f.Due); err != nil {
			return err
		}
	}
	r.act(step) // only now is the job sent
	var before systemd.Props
	if action == reaction.ReloadIt {
		before = f.Unit
	}
	jobErr := r.Systemd.Job(ctx, string(action), r.want.Unit)
	var final systemd.Props
	var err error
	var probing *probeRun
	if jobErr == nil {
		// The probe runs while the settle time passes: both must hold, and a service
		// usually answers within that window, so neither waits for the other.
		probing = r.startProbe(ctx, p)
		final, err = r.verify(ctx, action, p.Settle)
	}
	if err == nil && jobErr == nil && action == reaction.ReloadIt && before.InvocationID != "" && final.InvocationID != before.InvocationID {
		// A reload keeps the unit's process: a new invocation means it died and came back
		// (Restart=), which is no successful reload.
		err = fmt.Errorf("%s was started anew during its reload (invocation %s, then %s): the reload did not keep the process", r.want.Unit, before.InvocationID, final.InvocationID)
	}
	if jobErr != nil || err != nil {
		probing.abandon()
		due := reaction.None
		if p.RecordPending {
			due = f.Due
		}
		return r.failure(action, due, jobErr, err)
	}
	// verify already recorded the final state in r.res.After. main_pid is the process a
	// start or restart left running; a stop leaves none and a reload keeps the old one.
	if action == reaction.Start || action == reaction.RestartIt {
		r.res.MainPID = final.MainPID
		if pr, ok := r.Systemd.(systemd.PIDReader); ok {
			if pid, err := pr.MainPID(ctx, r.want.Unit); err == nil {
				r.res.MainPID = pid
			}
		}
	}
	// The reaction is carried out: clear it before probing, since a failing probe never
	// restarts anything by itself.
	if p.RecordPending || p.ClearPending {
		if err := r.Store.ClearPending(r.want.Unit); err != nil {
			probing.abandon()
			return err
		}
	}
	if err := r.health(p, probing); err != nil {
		return err
	}
	if probing != nil && p.Settle == 0 && (action == reaction.Start || action == reaction.RestartIt) {
		// The probe stood in for the settle time: the process that answered must be the
		// start's, still active.
		now, err := r.Systemd.Show(ctx, r.want.Unit)
		if err != nil {
			return err
		}
		if !now.Running() || now.InvocationID != final.InvocationID {
			return fmt.Errorf("%s answered its health probe after its %s but did not stay up: it is %s (invocation %s, then %s)", r.want.Unit, action, now.ActiveState, final.InvocationID, now.InvocationID)
		}
		r.res.After = stateOf(now)
	}
	return nil
}

// converged finishes a plan without a run-state step: pending records it settled are
// cleared, and a unit that should run is probed.
func (r *run) converged(ctx context.Context, p Plan) error {
	if p.ClearPending {
		if err := r.Store.ClearPending(r.want.Unit); err != nil {
			return err
		}
	}
	return r.probe(ctx, p)
}
