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
	// Now is systemd's clock; zero unless a pending record or a trigger needs it.
	Now stamp.Stamp
	// Reloaded is the unit's last verified reload (durable.Reloaded), read with Now; nil
	// when none is known.
	Reloaded *durable.Reloaded
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
	// ManagerLoaded is when the manager last loaded its units (systemd.LoadReader, on the
	// boot of Now); zero unless read: only when a sync reason could be one a load already
	// served (a change that says when its unit files were in place).
	ManagerLoaded stamp.Stamp
	// FileState is the unit's file state as the files on disk give it now (the Manager's
	// GetUnitFileState), which is what the manager shows after the sync the plan holds;
	// the loaded unit's UnitFileState is cached until then. Read only when it decides
	// something: `enabled` is given and the plan syncs the manager. "" when not read, or
	// when no file of the unit is on disk.
	FileState string
	// Libraries is what the unit's processes map that was replaced since (nil: not read).
	Libraries *LibraryScan
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
	// ReloadServed names the reload triggers whose reload already happened: a verified
	// reload (or an activation) after their files were in place ("" when none did).
	ReloadServed string
	Due          reaction.Kind
	// Pending is the earlier run's record that is still due (nil when none, or served).
	Pending *durable.Pending
	// RecordPending: write Due as pending first.
	RecordPending bool
	// EnableFirst is StepEnable or StepDisable when the boot state changes ahead of the
	// sync, so that one reload serves both; "" otherwise.
	EnableFirst Step
	// SyncReasons are why the manager is reloaded; none: no reload.
	SyncReasons []string
	// SyncServed are the manager-sync entries the manager's last load already served
	// (their unit files were all in place before it began: a package scriptlet's
	// daemon-reload); the run clears them. LoadServed says that load served the changes
	// the triggers report too, so it is not repeated.
	SyncServed durable.Sync
	LoadServed bool
	// Debt is why the pending record cannot be carried out as recorded, "" when it can
	// (debtOf). Unless the run serves it anyway (Absorbed), it stays on disk: the first run
	// that meets it fails for it and marks it reported (StepReportPending), later runs
	// warn. It is never carried out as a job systemd would refuse.
	Debt string
	// Absorbed: what the run does anyway serves the debt (a restart serves every
	// reaction; a start or a stop leaves nothing to react to), so the record is cleared
	// as any served one.
	Absorbed bool
	// Steps: StepReportPending, StepRecordPending, EnableFirst, StepDaemonReload, as they
	// apply.
	Steps []Step
}

// Kept: the pending record is a debt this run leaves as it is (neither records on top of
// it nor clears it).
func (p Prep) Kept() bool { return p.Debt != "" && !p.Absorbed }

// Steps that come before the run state, as plans and results name them.
const (
	StepRecordPending Step = "record-pending"
	// StepReportPending marks a debt reported (durable.Pending.Reported) before the run
	// fails for it, so only one run fails for it.
	StepReportPending Step = "report-pending"
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
		if pending != nil && obs.Running() && reloadedAfter(o.Reloaded, pending) {
			// What is left is a reload, and a verified reload was sent after it was
			// recorded (another run's, or this unit's run killed before it cleared it).
			pending = nil
		}
		p.Served = pending == nil
	}
	if by := restartServedBy(w, trig, o); by != "" {
		trig = trig.WithoutRestarts()
		p.RestartServed = by
	}
	if by := reloadServedBy(w, trig, o); by != "" {
		trig = trig.WithoutReloads()
		p.ReloadServed = by
	}
	p.Pending = pending
	owed := pendingKind(pending)
	if p.Debt = debtOf(pending, obs, o.Capability); p.Debt != "" {
		owed = reaction.None
	}
	p.Due = reaction.Due(trig, owed)
	if p.Debt != "" {
		p.Absorbed = !w.Running || !obs.Running() || obs.LoadState != "loaded" || p.Due == reaction.Restart
		if !p.Absorbed && !pending.Reported {
			p.Steps = append(p.Steps, StepReportPending)
		}
	}
	// A due reaction is on disk before anything can fail (the daemon-reload, an enable,
	// the deadline): its trigger will not report a change again. Only for a unit that
	// runs: a unit that is missing, masked or stopped now has nothing to restart, and its
	// start absorbs the reaction (the start's own record, stamped just before the job,
	// covers a start that fails). So a unit a package change installs plans the same steps
	// whether the manager, after the transaction, shows it loaded already (it loads a new
	// unit file it is asked about), not found until the sync, or check mode predicts it
	// (PredictedInstall): check mode's plan is the real run's whichever it shows.
	if p.Due != reaction.None && w.Running && obs.LoadState == "loaded" && obs.Running() && !p.Kept() {
		p.RecordPending = true
		p.Steps = append(p.Steps, StepRecordPending)
	}

	// Manager sync. NeedDaemonReload alone misses changes (rpm restores old mtimes on a
	// downgrade; systemd 252 misses a first drop-in in a new directory), hence the durable
	// record and the triggers.
	if obs.NeedDaemonReload {
		p.SyncReasons = append(p.SyncReasons, "systemd reports NeedDaemonReload=yes")
	}
	// A manager load that began after a change's unit files were all in place has loaded
	// them: a package scriptlet's daemon-reload (EL's transaction file triggers do one at
	// the end of every transaction that touched unit files) is not repeated, as its
	// restart is not (restartServedBy). Only changes that say when their files were in
	// place count; NeedDaemonReload=yes always reloads.
	served, due := o.Synced.LoadedBy(o.ManagerLoaded)
	p.SyncServed = served
	loaded := trig.LoadedBy(o.ManagerLoaded)
	for _, reason := range due.Reasons() {
		p.SyncReasons = append(p.SyncReasons, "recorded on the target: "+reason)
	}
	if trig.UnitFilesChanged() && !loaded {
		p.SyncReasons = append(p.SyncReasons, "a trigger changed a unit file")
	}
	// A package change the manager was reloaded after (the service's earlier process
	// step did) has loaded what it installs: in a real run the unit is found; check mode
	// still predicts it (PredictedInstall, from PackageChanged) but plans no second sync.
	if (obs.LoadState == "not-found" || o.PredictedInstall) && trig.PackageUnsynced() && !loaded {
		p.SyncReasons = append(p.SyncReasons, "unit not found after a package change")
	}
	p.LoadServed = served.Due() || loaded && (trig.UnitFilesChanged() || trig.PackageUnsynced())
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
// pending record, or a restart or reload trigger on a running unit, makes timing matter.
func needsClock(w Want, trig reaction.Triggers, pending *durable.Pending, obs systemd.Props) bool {
	if pending != nil {
		return true
	}
	return restartMayBeServed(w, trig, obs) || reloadMayBeServed(w, trig, obs)
}

// reloadMayBeServed: a reload trigger changed and the unit runs, so the reload may
// already have happened (another run's verified reload, or a start, after the files).
func reloadMayBeServed(w Want, trig reaction.Triggers, obs systemd.Props) bool {
	return w.Running && len(reaction.Changed(trig.Reload)) > 0 && obs.Running()
}

// reloadServedBy names the reload triggers whose reload already happened after their
// change, or "": every changed reload trigger says when its files were in place
// (files_placed), and the unit's last verified reload was sent after all of them, or the
// unit became active after all of them. Two runs of one service that change one config
// are the case: the run that waited for the other's lock finds the other's reload, sent
// after its own file was in place, and does not reload a second time. A drop-in's time
// is read under the unit's lock after its manager reload was recorded due, so a reload
// sent after it came after that manager reload. A trigger that cannot say when always
// reloads.
func reloadServedBy(w Want, trig reaction.Triggers, o Observation) string {
	obs := o.Unit
	if !reloadMayBeServed(w, trig, obs) {
		return ""
	}
	var by []string
	for _, tr := range reaction.Changed(trig.Reload) {
		if tr.FilesPlaced == nil {
			return ""
		}
		reloaded := o.Reloaded != nil && earlier(*tr.FilesPlaced, o.Reloaded.At)
		if !reloaded && !tr.FilesPlaced.ActiveSince(o.Now, obs.ActiveEnterMono) {
			return ""
		}
		by = append(by, tr.Label())
	}
	return strings.Join(by, ", ")
}

// reloadedAfter reports whether what is left of a pending record is a reload that the
// unit's last verified reload was sent after.
func reloadedAfter(r *durable.Reloaded, p *durable.Pending) bool {
	return r != nil && reaction.Kind(p.Reaction) == reaction.Reload && earlier(p.At, r.At)
}

// earlier reports whether a is a moment before b on the same boot.
func earlier(a, b stamp.Stamp) bool {
	return !a.IsZero() && !b.IsZero() && a.BootID == b.BootID && a.Mono < b.Mono
}

// restartMayBeServed: a restart trigger changed and the unit runs, so
// the restart may already have happened (by the clock).
func restartMayBeServed(w Want, trig reaction.Triggers, obs systemd.Props) bool {
	return w.Running && len(reaction.Changed(trig.Restart)) > 0 && obs.Running()
}

// debtOf is why a pending record (unserved; nil: none) cannot be carried out as
// recorded on the unit as observed, "" when it can: a record this version cannot read
// (which reaction was due is unknown, and guessing could lose a restart or turn a reload
// into one), or a reload of a unit that cannot reload (its ExecReload= went away since,
// or the record was written by a version that recorded a reload it then refused). Such
// a record is a debt no reload can pay; a restart pays it. files is the capability of
// the unit's files the manager names (nil: not read), which is what the unit has once
// the manager loaded them: where it and the manager's CanReload disagree, Prepare syncs
// the manager before the reload, so the files decide.
func debtOf(p *durable.Pending, u systemd.Props, files *unitfile.Capability) string {
	switch {
	case p == nil:
		return ""
	case p.Reaction == durable.Unknown:
		return p.Unreadable + ": a restart or a reload may have been due"
	case reaction.Kind(p.Reaction) != reaction.Reload || u.LoadState != "loaded":
		return ""
	case files != nil && !files.Capable:
		return fmt.Sprintf("a reload is due since %s, and the unit cannot reload: %s", p.Since.Format("2006-01-02T15:04:05Z07:00"), files.Reason)
	case files == nil && !u.CanReload:
		return fmt.Sprintf("a reload is due since %s, and the unit cannot reload: systemd shows CanReload=no (no ExecReload=)", p.Since.Format("2006-01-02T15:04:05Z07:00"))
	}
	return ""
}

// debtError is the failure of the one run that reports a debt: what the record says, why
// it cannot be carried out, and how to clear it.
func debtError(unit string, p *durable.Pending, why string) error {
	return fmt.Errorf("the pending reaction record of %s (%s) cannot be carried out as recorded: %s. A restart clears it: "+
		"a restart_on trigger that changed (or the service's restart wiring), or systemctl restart %s; a reload-capable unit "+
		"(ExecReload=) carries out a recorded reload. Only this run fails for it: later runs warn until it is cleared", unit, p.Path, why, unit)
}

// debtWarning is what later runs say of a debt that was reported.
func debtWarning(unit string, p *durable.Pending, why string) string {
	return fmt.Sprintf("%s: the pending reaction record %s cannot be carried out as recorded (%s); a run failed for it before, so this one goes on. A restart clears it (systemctl restart %s)", unit, p.Path, why, unit)
}
