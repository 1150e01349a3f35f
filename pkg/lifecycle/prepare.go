package lifecycle

import (
	"fmt"
	"strings"

	"github.com/richt/services/pkg/durable"
	"github.com/richt/services/pkg/reaction"
	"github.com/richt/services/pkg/stamp"
	"github.com/richt/services/pkg/systemd"
	"github.com/richt/services/pkg/unitfile"
)

// Observation is everything a run reads before it decides: the manager-sync record, the
// unit's pending reaction, the unit as the manager shows it, systemd's clock when a
// reaction's timing matters, and the reload capability of the unit's files. Reading it
// changes nothing.
type Observation struct {
	Unit    systemd.Props
	Synced  durable.Sync
	Pending *durable.Pending
	// Now is systemd's clock; zero unless a pending record or a restart trigger needs it.
	Now stamp.Stamp
	// Enabler: the backend can enable or disable unit files without a manager reload of
	// its own, so an enable can go ahead of a sync that is due anyway.
	Enabler bool
	// Capability is the reload capability of the files the manager names for the unit;
	// set when reload_on is declared and the unit is loaded.
	Capability *unitfile.Capability
	// PredictedInstall: the manager does not find the unit and a trigger reports a package
	// change: Unit is the unit that package installs (loaded, stopped, disabled), as the
	// manager sync the plan then holds loads it. The same in check mode, where the package
	// is not installed yet, and in a real run, where Apply checks it after the sync.
	PredictedInstall bool
	// FileState is the unit's file state as the files on disk give it now (the Manager's
	// GetUnitFileState), which is what the manager shows after the sync the plan holds;
	// the loaded unit's UnitFileState is cached until then. Read only when it decides
	// something: `enabled` is given and the plan syncs the manager. "" when not read, or
	// when no file of the unit is on disk.
	FileState string
}

// bootState is the unit file state the boot-state decision is made from: the one on disk
// when it was read, else the one the manager shows.
func (o Observation) bootState() string {
	if o.FileState != "" {
		return o.FileState
	}
	return o.Unit.UnitFileState
}

// Prep is the part of a run's decision that comes before the run state: which reaction
// is due, whether it is recorded before anything can fail, whether the boot state goes
// ahead of a manager reload, and why the manager is reloaded. Steps are in the order a
// real run takes them; check mode reports the same.
type Prep struct {
	// Served: a pending record exists that a later activation of the unit served.
	Served bool
	// RestartServed names the restart triggers whose restart already happened ("" when
	// none did).
	RestartServed string
	Due           reaction.Kind
	// Pending is the earlier run's record that is still due (nil when none, or served).
	Pending *durable.Pending
	// RecordPending: write Due as pending first.
	RecordPending bool
	// EnableFirst is StepEnable or StepDisable when the boot state changes ahead of the
	// sync, so that one reload serves both; "" otherwise.
	EnableFirst Step
	// SyncReasons are why the manager is reloaded; none: no reload.
	SyncReasons []string
	// Steps: StepRecordPending, EnableFirst, StepDaemonReload, as they apply.
	Steps []Step
}

// Steps that come before the run state, as plans and results name them.
const (
	StepRecordPending Step = "record-pending"
	StepDaemonReload  Step = "daemon-reload"
)

// Prepare decides what comes before the run state, from what the run observed: pure.
func Prepare(w Want, trig reaction.Triggers, o Observation) Prep {
	var p Prep
	obs := o.Unit
	pending := o.Pending
	if pending != nil {
		// The unit became active after the reaction was recorded (a run killed after
		// sending its restart, a package scriptlet, an administrator): that start loaded
		// everything the reaction was for, or all but a reload owed for a later change.
		// Do not do it twice.
		pending = pending.Unserved(o.Now, obs.Running(), obs.ActiveEnterMono)
		p.Served = pending == nil
	}
	if by := restartServedBy(w, trig, o); by != "" {
		trig = trig.WithoutRestarts()
		p.RestartServed = by
	}
	p.Pending = pending
	p.Due = reaction.Due(trig, pendingKind(pending))
	// A due reaction is on disk before anything can fail (the daemon-reload, an enable,
	// the deadline): its trigger will not report a change again. Only for a unit that
	// runs: a unit that is missing, masked or stopped now has nothing to restart, and its
	// start absorbs the reaction (the start's own record, stamped just before the job,
	// covers a start that fails). So a unit a package change installs plans the same steps
	// whether the manager, after the transaction, shows it loaded already (it loads a new
	// unit file it is asked about), not found until the sync, or check mode predicts it
	// (PredictedInstall): check mode's plan is the real run's whichever it shows.
	if p.Due != reaction.None && w.Running && obs.LoadState == "loaded" && obs.Running() {
		p.RecordPending = true
		p.Steps = append(p.Steps, StepRecordPending)
	}

	// Manager sync. NeedDaemonReload alone misses changes (rpm restores old mtimes on a
	// downgrade; systemd 252 misses a first drop-in in a new directory), hence the durable
	// record and the triggers.
	if obs.NeedDaemonReload {
		p.SyncReasons = append(p.SyncReasons, "systemd reports NeedDaemonReload=yes")
	}
	for _, reason := range o.Synced.Reasons() {
		p.SyncReasons = append(p.SyncReasons, "recorded on the target: "+reason)
	}
	if trig.UnitFilesChanged() {
		p.SyncReasons = append(p.SyncReasons, "a trigger changed a unit file")
	}
	// A package change the manager was reloaded after (the service's earlier process
	// step did) has loaded what it installs: in a real run the unit is found; check mode
	// still predicts it (PredictedInstall, from PackageChanged) but plans no second sync.
	if (obs.LoadState == "not-found" || o.PredictedInstall) && trig.PackageUnsynced() {
		p.SyncReasons = append(p.SyncReasons, "unit not found after a package change")
	}
	// The files say one thing and the manager another: the manager has not loaded a change
	// that NeedDaemonReload did not flag (rpm restores old mtimes). Sync it before deciding,
	// rather than send a reload it cannot run.
	if c := o.Capability; len(p.SyncReasons) == 0 && c != nil && c.Capable != obs.CanReload {
		p.SyncReasons = append(p.SyncReasons, fmt.Sprintf("unit files on disk say reload-capable=%v, the manager says CanReload=%v", c.Capable, obs.CanReload))
	}
	if len(p.SyncReasons) > 0 {
		p.EnableFirst = enableFirst(w, o)
		if p.EnableFirst != "" {
			p.Steps = append(p.Steps, p.EnableFirst)
		}
		p.Steps = append(p.Steps, StepDaemonReload)
	}
	return p
}

// enableFirst is the boot-state change that goes ahead of a manager sync, so that the
// sync's reload also serves it (systemd wants one after an enable; each costs about 0.3 s
// on a small host). Only when the backend can, the file state is plainly the opposite of
// the wanted one and the task leaves the mask alone: every other case is left to the
// plan, which decides from what the manager shows after the sync.
func enableFirst(w Want, o Observation) Step {
	if !o.Enabler || w.Enabled == nil || w.Masked != nil || o.Unit.LoadState == "masked" {
		return ""
	}
	if from := map[bool]string{true: "disabled", false: "enabled"}[*w.Enabled]; o.bootState() != from {
		return ""
	}
	return enableStep(*w.Enabled)
}

// restartServedBy names the restart triggers whose restart already happened after their
// change (package scriptlets restart their units in the transaction), or "". Only time
// decides (reaction.RestartServed): the unit became active after every file the
// triggers placed. NeedDaemonReload does not: it also turns yes for a drop-in written
// after the transaction, whose own trigger carries its own reaction, and for a unit file
// only when its whole-second mtime happens to be newer than the loaded one's, so it
// repeated restarts a scriptlet had done. On EL 9 and 10 the scriptlets reload
// the manager before they restart (systemd-update-helper); a package that restarts
// without a reload runs its new files with the unit definition it had before, as it
// does without this module.
func restartServedBy(w Want, trig reaction.Triggers, o Observation) string {
	obs := o.Unit
	if !restartMayBeServed(w, trig, obs) {
		return ""
	}
	if !reaction.RestartServed(trig, o.Now, obs.ActiveEnterMono) {
		return ""
	}
	var by []string
	for _, tr := range reaction.Changed(trig.Restart) {
		by = append(by, tr.Label())
	}
	return strings.Join(by, ", ")
}

// needsClock reports whether Prepare reads systemd's clock for this observation: only a
// pending record or a restart trigger on a running unit makes timing matter.
func needsClock(w Want, trig reaction.Triggers, pending *durable.Pending, obs systemd.Props) bool {
	if pending != nil {
		return true
	}
	return restartMayBeServed(w, trig, obs)
}

// restartMayBeServed: a restart trigger changed and the unit runs, so
// the restart may already have happened (by the clock).
func restartMayBeServed(w Want, trig reaction.Triggers, obs systemd.Props) bool {
	return w.Running && len(reaction.Changed(trig.Restart)) > 0 && obs.Running()
}
