package lifecycle

import (
	"fmt"
	"github.com/richt/services/pkg/systemd"
	"time"

	"github.com/richt/services/pkg/health"
	"github.com/richt/services/pkg/reaction"
	"github.com/richt/services/pkg/unitfile"
)

// Want is what a task asks of one unit, from its parameters.
type Want struct {
	Unit         string
	Running      bool  // state: running (else stopped)
	Enabled      *bool // nil: leave as is
	Masked       *bool // nil: leave as is
	AllowMissing bool
	ReloadOn     bool           // reload_on is declared (the unit must be reload-capable)
	Settle       *time.Duration // nil: the defaults per action (DefaultSettle)
	Health       *health.Probe  // nil: no probe
}

// Facts are what the run state is decided from: the unit as the steps ahead of the run
// state leave it (observed, or predicted after a sync or an unmask) and what Prepare
// derived from the triggers and the pending record.
type Facts struct {
	Unit systemd.Props
	// Due is the reaction triggers and a pending record ask for (reaction.Due).
	Due reaction.Kind
	// Pending: a record of a reaction still due exists (and was not served since).
	Pending bool
	// Served: a pending record exists that a later activation of the unit served.
	Served bool
	// RestartServed: the restart triggers' restart already happened after their change;
	// Due leaves them out. ReloadServed: the same for the reload triggers' reload.
	RestartServed, ReloadServed bool
	// Capability is the merged unit's reload capability; set when Want.ReloadOn.
	Capability *unitfile.Capability
	// Keep: the pending record is a debt this run does not serve (Prep.Kept): it is
	// neither recorded on nor cleared.
	Keep bool
}

// Step is one change Apply makes, in the order of Decision.Steps. Its name is what results
// report in `actions`.
type Step string

// Steps a plan can hold.
const (
	StepStop    Step = "stop"
	StepMask    Step = "mask"
	StepUnmask  Step = "unmask"
	StepEnable  Step = "enable"
	StepDisable Step = "disable"
	StepStart   Step = "start"
	StepRestart Step = "restart"
	StepReload  Step = "reload"
)

// Decision is the run state's decision for one unit: what comes after the steps ahead of
// the run state (Prep) in a Plan.
type Decision struct {
	Steps []Step
	// Reaction is how the due reaction is handled (reported as `reaction`).
	Reaction reaction.Kind
	// Settle is how long the unit must stay active, with the same invocation, after the
	// run-state step; after a signalled reload (Quiet) the probe must also keep passing
	// for that long.
	Settle time.Duration
	// Quiet is set for a signalled reload with a probe: a reload whose end systemd
	// cannot see (anything but Type=notify-reload). Apply then waits until the processes
	// the unit had before the reload have stopped exiting for Quiet, and the probe must
	// pass every attempt during Settle after that (docs/rollback.md, "A reload is proven").
	Quiet time.Duration
	// Probe runs after a start, restart or reload, and on a converged unit that should
	// run; never after a stop.
	Probe *health.Probe
	// RecordPending: record Facts.Due as pending before the run-state step, so a failure
	// or a stopped play leaves it for the next run.
	RecordPending bool
	// ClearPending: remove the pending record once the plan succeeded.
	ClearPending bool
	// Reobserve: the steps change what the rest depends on (an unmask loads the unit);
	// the rest is decided for the unit as the unmask leaves it (Plan composes both).
	Reobserve bool
	// Warnings for the task's result.
	Warnings []string
	// After is the state the plan leads to, for check mode's `after`.
	After PlanState
}

// Names of the plan entries that are not changes of the unit: the durable pending record
// and the checks after a run-state step. They appear in the result's `plan` (never in
// `actions`, which lists what systemd was asked to do).
const (
	// EntryStampPending stamps the pending record again just before the job (the record
	// Prepare wrote ahead may be older), so a later activation proves this very job ran.
	EntryStampPending = "stamp-pending"
	EntrySettle       = "settle"
	EntryQuiet        = "quiet"
	EntryProbe        = "probe"
	EntryClearPending = "clear-pending"
)

// Names is the plan as Apply carries it out, every side effect and check in its order:
// the configuration steps, the pending record stamped before the run-state step, the run-state
// step, its settle time, the health probe (also on a converged unit that should run), and
// the removal of the pending record.
func (p Decision) Names() []string {
	out := make([]string, 0, len(p.Steps)+3)
	run := false
	for i, s := range p.Steps {
		if runStepAt(p.Steps, i) {
			run = true
			if p.RecordPending {
				out = append(out, EntryStampPending)
			}
			out = append(out, string(s))
			if p.Quiet > 0 {
				out = append(out, EntryQuiet+" "+p.Quiet.String())
			}
			if p.Settle > 0 {
				out = append(out, EntrySettle+" "+p.Settle.String())
			}
			continue
		}
		out = append(out, string(s))
	}
	if p.ClearPending || p.RecordPending && run {
		out = append(out, EntryClearPending)
	}
	if p.Probe != nil {
		out = append(out, EntryProbe)
	}
	return out
}

// runStepAt: steps[i] is the run-state step, carried out with its job, verification,
// settle and probe. A stop with steps after it is the stop before a mask, carried out and
// verified like a configuration step.
func runStepAt(steps []Step, i int) bool {
	s := steps[i]
	return isRunStep(s) && !(s == StepStop && i < len(steps)-1)
}

// PlanState is the predicted state after a plan.
type PlanState struct {
	Running bool
	Enabled *bool
	Masked  bool
}

// Default settle times: a started process must survive a moment (a Type=simple service
// whose program exits at once is "active" until it does); a reload keeps its process, so
// without a probe the job's result is all there is to check.
//
// A signalled reload with a probe is proven in two waits, since the job ends when the
// signal was sent, before the daemon acted on it: nginx -s reload returns while the old
// workers still answer on the old configuration, and a probe passing then proves nothing.
// First its processes must be quiet (QuietAfterReload: none of those it had before the
// reload exited for that long; the old workers going is what takes the old configuration
// away), then the probe must keep passing for DefaultSignalledReloadSettle.
const (
	DefaultStartSettle                = 300 * time.Millisecond
	DefaultReloadSettle time.Duration = 0
	// DefaultSignalledReloadSettle is the settle after a signalled reload when a probe
	// is set and the task gives no settle: every probe attempt in it must pass.
	DefaultSignalledReloadSettle = time.Second
	// QuietAfterReload is how long none of the processes the unit had before a
	// signalled reload may have exited before its probe counts.
	QuietAfterReload = 250 * time.Millisecond
)

// runStep is the step for a run-state action.
var runStep = map[reaction.Action]Step{
	reaction.Start: StepStart, reaction.Stop: StepStop, reaction.RestartIt: StepRestart, reaction.ReloadIt: StepReload,
}

// Decide is the pure decision: the same want and facts always give the same plan.
func Decide(w Want, f Facts) (Decision, error) {
	if f.Due == "" {
		f.Due = reaction.None
	}
	p := Decision{Reaction: reaction.None, ClearPending: (f.Pending || f.Served) && !f.Keep}
	u := f.Unit
	p.After = PlanState{Running: u.Running(), Enabled: u.Enabled(), Masked: u.LoadState == "masked"}

	if err := refusal(w, f); err != nil {
		return p, err
	}
	switch u.LoadState {
	case "not-found":
		if w.Masked != nil && *w.Masked {
			// Masking a unit that does not exist is what `systemctl mask` allows: it
			// keeps a unit that a package may install later from being started.
			return masking(p, w, f), nil
		}
		// allow_missing, and nothing asks for the unit (refusal let it through).
		if f.Due != reaction.None {
			p.Reaction = reaction.Ignored
		}
		return p, nil
	case "masked":
		if w.Masked != nil && !*w.Masked {
			p.Steps = []Step{StepUnmask}
			p.Reobserve = true
			p.After.Masked = false
			return p, nil
		}
		return masking(p, w, f), nil
	}

	if w.Masked != nil && *w.Masked {
		return masking(p, w, f), nil
	}

	// Boot state: independent of the run state, never starts or stops anything.
	if w.Enabled != nil {
		switch cur := u.Enabled(); {
		case cur == nil:
			p.Warnings = append(p.Warnings, bootWarning(w.Unit, *w.Enabled, u.UnitFileState))
		case *cur != *w.Enabled:
			p.Steps = append(p.Steps, enableStep(*w.Enabled))
			p.After.Enabled = w.Enabled
		}
	}

	// Run state and reaction, from the state observed immediately before acting.
	action, kind := reaction.Decide(w.Running, u.Running(), f.Due)
	if kind == reaction.None && (f.RestartServed || f.ReloadServed) && w.Running {
		kind = reaction.Served
	}
	p.Reaction = kind
	if action != reaction.NoAction {
		p.Steps = append(p.Steps, runStep[action])
		p.After.Running = action != reaction.Stop
		p.Settle = settleFor(w, action, signalled(w, f))
		if action == reaction.ReloadIt && signalled(w, f) {
			p.Quiet = QuietAfterReload
		}
		p.RecordPending = f.Due != reaction.None && w.Running && !f.Keep
	}
	if w.Health != nil && w.Running {
		p.Probe = w.Health
	}
	return p, nil
}

// refusal is why the unit cannot be brought into the wanted state as it is, nil when it
// can: a load state that rules the want out, or reload_on on a unit that cannot reload.
// Decide refuses with it; Apply checks it again where the plan predicted the unit (after a
// daemon-reload or an unmask), so both say the same thing in the same words.
func refusal(w Want, f Facts) error {
	u := f.Unit
	masking := w.Masked != nil && *w.Masked
	switch u.LoadState {
	case "loaded":
	case "not-found":
		if masking || w.AllowMissing && !w.Running && (w.Enabled == nil || !*w.Enabled) {
			return nil
		}
		hint := ""
		if !w.Running && (w.Enabled == nil || !*w.Enabled) {
			hint = " (set allow_missing: true if a missing unit is fine here)"
		}
		return fmt.Errorf("unit %s not found (LoadState=not-found): expected a unit file for it%s", w.Unit, hint)
	case "masked":
		if w.Masked != nil && !*w.Masked {
			return nil
		}
		if w.Running {
			return fmt.Errorf("unit %s is masked: it cannot be running; unmask it (masked: false) or ask for state: stopped", w.Unit)
		}
		if w.Enabled != nil && *w.Enabled {
			return fmt.Errorf("unit %s is masked: it cannot be enabled; unmask it first (masked: false)", w.Unit)
		}
		return nil
	default:
		return fmt.Errorf("unit %s has LoadState=%s: systemd could not load it; check the unit file (systemctl status %s, journalctl -u %s)", w.Unit, u.LoadState, w.Unit, w.Unit)
	}
	if masking || !w.ReloadOn {
		return nil
	}
	if f.Capability == nil {
		return fmt.Errorf("reload capability of %s was not determined", w.Unit)
	}
	if !f.Capability.Capable {
		return fmt.Errorf("reload_on needs %s to be reload-capable, and it is not: %s. Add ExecReload= (for example with a unit_override drop-in) or use restart_on; a reload is never turned into a restart", w.Unit, f.Capability.Reason)
	}
	return nil
}

// masking is the plan for masked: true (or a masked unit left masked): stop it first when
// it runs (a masked unit can still run), then mask it unless it is; reactions are ignored.
func masking(p Decision, w Want, f Facts) Decision {
	if f.Due != reaction.None {
		p.Reaction = reaction.Ignored
	}
	if f.Unit.Running() {
		p.Steps = append(p.Steps, StepStop)
		p.After.Running = false
		p.Settle = settleFor(w, reaction.Stop, false)
	}
	if w.Masked != nil && *w.Masked && f.Unit.LoadState != "masked" {
		p.Steps = append(p.Steps, StepMask)
		p.After.Masked = true
		p.After.Enabled = nil
	}
	return p
}

// settleFor is the settle time of an action: the task's `settle` for every action when
// given, else the defaults (a stop has nothing to settle). With a health probe a start has
// no default settle: a process that answers the probe has proved more than one that stayed
// active for 300 ms (Apply checks once more, after the probe, that the start's invocation
// is still the active one).
//
// A reload with a probe whose end systemd cannot see (signalled) settles for
// DefaultSignalledReloadSettle, during which every probe attempt must pass.
func settleFor(w Want, a reaction.Action, signalled bool) time.Duration {
	if w.Settle != nil {
		return *w.Settle
	}
	switch a {
	case reaction.Start, reaction.RestartIt:
		if w.Health != nil {
			return 0
		}
		return DefaultStartSettle
	case reaction.ReloadIt:
		if signalled {
			return DefaultSignalledReloadSettle
		}
		return DefaultReloadSettle
	}
	return 0
}

// signalled reports whether a reload of the unit is proven by waiting (Decision.Quiet):
// a probe is set and the unit is not Type=notify-reload, whose reload job systemd ends
// only once the service reported it done. A unit whose files were not read (no reload_on:
// a reload owed by an earlier run's record) counts as signalled, the safe side: most
// reloads signal and return.
func signalled(w Want, f Facts) bool {
	return w.Health != nil && (f.Capability == nil || !f.Capability.NotifyReload)
}

// unobservable unit file states: enablement there is not the unit's own (static,
// generated, …), so `enabled` is not drift.
var unobservable = map[string]bool{"static": true, "indirect": true, "generated": true, "transient": true, "alias": true}

// bootWarning says why `enabled` is not applied to a unit whose unit file state has no
// enablement of its own (Decide, and Apply for a boot state it predicted).
func bootWarning(unit string, enabled bool, fileState string) string {
	st := fileState
	if st == "" {
		st = "empty"
	}
	if unobservable[st] {
		return fmt.Sprintf("%s: enabled=%v has no effect: its unit file state is %s, so enablement is not observable and not drift", unit, enabled, st)
	}
	return fmt.Sprintf("%s: enabled=%v not applied: unit file state %q is not one that can be enabled or disabled", unit, enabled, st)
}

// enableStep is the step that makes a unit's boot state the wanted one.
func enableStep(enabled bool) Step {
	if enabled {
		return StepEnable
	}
	return StepDisable
}
