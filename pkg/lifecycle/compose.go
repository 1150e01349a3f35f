package lifecycle

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/richt/services/pkg/reaction"
	"github.com/richt/services/pkg/systemd"
	"github.com/richt/services/pkg/unitfile"
)

// Request is what one task asks of one unit: the wanted state, the triggers that may owe
// a reaction, and the deadline its messages name.
type Request struct {
	Want     Want
	Triggers reaction.Triggers
	Limit    time.Duration
	// ResetFailed: before the plan, under the unit's lock, clear the unit's failed state
	// and its start rate counter (systemd.FailedResetter, on the run's own connection;
	// a backend without it skips it). No parameter sets it: the service's rollback does,
	// for its start of the last good state after a change whose starts count against
	// the unit's StartLimitBurst (a real run only: Hold clears it before check mode
	// could say no).
	ResetFailed bool
}

// Plan is one run's whole decision, made before anything changes: the steps ahead of the
// run state (Prep: record-pending, an enable ahead of the sync, daemon-reload), then the
// run state's Decision. Check mode reports it; Apply carries out exactly its steps and
// decides nothing.
//
// A daemon-reload or an unmask changes what the manager shows of the unit. The plan does
// not wait for that: it states the outcome (Unit) from what is on disk and what the
// triggers report, the same way in check mode and in a real run, and Apply checks the
// outcome once the step is done (Decide's refusal of the unit as the manager then shows
// it).
type Plan struct {
	Request
	Observed Observation
	Prep     Prep
	Decision Decision
	// Unit is the unit the decision was made for: as observed, or as the steps ahead of
	// the run state leave it (predicted: the boot state an enable ahead of the sync
	// gives it, a unit the sync loads, the unit an unmask loads).
	Unit systemd.Props
	// Capability is the reload capability the decision used (nil without reload_on).
	// Known says it was read from files; unknown, it is taken as capable and Apply checks
	// it once the manager has loaded the unit.
	Capability *unitfile.Capability
	Known      bool
	// Refusal is why Decide refused. The steps ahead of the run state do not depend on
	// the decision (the due reaction is recorded, the manager synced), so Apply carries
	// them out and then fails with it, as check mode reports it.
	Refusal error
	// Unseen: the manager did not find the unit, the plan takes it as loaded by its sync,
	// and no file of it is on disk under the system search path (a misspelled name, or a
	// unit only a generator makes at the reload). A real run syncs and then checks
	// (Apply); check mode cannot run the generators, so it refuses (Finish).
	Unseen bool
}

// Synced: the plan reloads the manager.
func (p Plan) Synced() bool { return len(p.Prep.SyncReasons) > 0 }

// Names is the plan in the order Apply carries it out, as the result's `plan` lists it.
func (p Plan) Names() []string {
	out := make([]string, 0, len(p.Prep.Steps)+len(p.Decision.Steps)+3)
	for _, s := range p.Prep.Steps {
		out = append(out, string(s))
	}
	if p.Refusal != nil {
		return out
	}
	return append(out, p.Decision.Names()...)
}

// Plan observes the unit and decides the whole run; it changes nothing. An error is an
// observation that failed; a refusal of the wanted state is part of the plan (Refusal),
// and so is a unit whose files cannot be read for its reload capability: the steps ahead
// of the run state (the due reaction recorded first) still come before that failure.
func (d Deps) Plan(ctx context.Context, req Request) (Plan, error) {
	o, err := d.observe(ctx, req)
	if err != nil {
		return Plan{Request: req, Observed: o}, err
	}
	// A process mapping a replaced file is the libraries trigger's change, from here on
	// as any other trigger's (restart beats reload, none after a start).
	req.Triggers = librariesDue(req.Triggers, o.Libraries)
	w := req.Want
	prep := Prepare(w, req.Triggers, o)
	if len(prep.SyncReasons) > 0 && w.Enabled != nil && o.Unit.LoadState != "masked" {
		// The boot state after the sync is the one on disk, not the loaded unit's cached
		// one: read it, and prepare again from it (an enable ahead of the sync depends on it).
		if o.FileState, err = d.fileState(ctx, o.Unit, w.Unit); err != nil {
			return Plan{Request: req, Observed: o, Prep: prep}, err
		}
		prep = Prepare(w, req.Triggers, o)
	}
	var capErr error
	if w.ReloadOn && o.Unit.LoadState == "loaded" && o.Capability == nil && len(prep.SyncReasons) == 0 {
		// No sync comes first, so the files the manager names are the ones that count, and
		// observe could not read them: say why.
		c, err := capabilityOf(d.Root, w.Unit, o.Unit.FragmentPath, o.Unit.DropInPaths)
		if err == nil {
			o.Capability = &c
		}
		capErr = err
	}
	// The files on disk are what the manager loads at the sync or the unmask the plan
	// holds: their reload capability is the one the decision needs.
	var files *unitfile.Capability
	if w.ReloadOn && (len(prep.SyncReasons) > 0 || o.Unit.LoadState == "masked" || o.PredictedInstall) {
		files, capErr = d.filesCapability(w.Unit, w.Masked != nil && !*w.Masked)
	}
	p := decide(req, o, prep, files)
	if capErr != nil {
		p.Refusal = capErr
	}
	if p.Synced() && o.Unit.LoadState == "not-found" {
		frag, _ := unitfile.Files(d.Root, w.Unit)
		p.Unseen = frag == ""
	}
	return p, nil
}

// fileState reads the unit's file state from disk (systemd.FileStater) under the name the
// manager loaded it as, as the unit's own UnitFileState is computed (an alias asked for
// has the state of the unit it names); "" when no file of it is on disk or the backend
// cannot say.
func (d Deps) fileState(ctx context.Context, obs systemd.Props, unit string) (string, error) {
	fs, ok := d.Systemd.(systemd.FileStater)
	if !ok {
		return "", nil
	}
	if obs.LoadState == "loaded" && obs.ID != "" {
		unit = obs.ID
	}
	st, err := fs.UnitFileState(ctx, unit)
	if errors.Is(err, systemd.ErrNoUnitFile) {
		return "", nil
	}
	return st, err
}

// decide is the pure part of Plan: the run state decided for the unit as the steps
// ahead of it leave it. files is the reload capability of the unit's files on disk (nil:
// not on disk, or not needed).
func decide(req Request, o Observation, prep Prep, files *unitfile.Capability) Plan {
	w := req.Want
	p := Plan{Request: req, Observed: o, Prep: prep}
	u := o.Unit
	if p.Synced() && u.LoadState != "loaded" && u.LoadState != "masked" {
		// The sync reloads the unit's files: a unit the manager did not find or could not
		// load is taken as loaded by it (a new unit as a package leaves it), and Apply
		// fails with Decide's own words if it is not.
		if u.LoadState == "not-found" {
			u = predictedUnit(u)
		} else {
			u.LoadState = "loaded"
		}
	}
	if o.FileState != "" {
		// The manager shows the boot state on disk once the sync has reloaded the unit.
		u.UnitFileState = o.FileState
	}
	if prep.EnableFirst != "" {
		u.UnitFileState = fileState(prep.EnableFirst == StepEnable)
	}
	f := Facts{Unit: u, Due: prep.Due, Served: prep.Served, RestartServed: prep.RestartServed != "", ReloadServed: prep.ReloadServed != "",
		Pending: prep.Pending != nil || prep.RecordPending, Keep: prep.Kept()}
	p.Capability, p.Known = capabilityFor(w, u, o, p.Synced(), files)
	f.Capability = p.Capability
	dec, err := Decide(w, f)
	if err == nil && dec.Reobserve {
		dec, u, err = afterUnmask(w, f, dec, files)
		p.Capability, p.Known = capabilityAfterUnmask(w, files)
	}
	p.Unit, p.Decision, p.Refusal = u, dec, err
	return owing(p)
}

// owing completes a plan with what a pending record it cannot carry out asks (Prep.Debt)
// and what a refusal leaves on record. A debt the run does not serve fails the first run
// that meets it, once it is marked reported; later runs warn. A refused run records no
// reload of its own (a reaction refused before acting is no debt: no run could pay a
// reload that reload_on refused); a restart a trigger owes is recorded still, since any
// later run can carry it out.
// A run refused for another reason leaves the debt unreported: its message is the
// refusal's.
func owing(p Plan) Plan {
	drop := func(step Step) {
		p.Prep.Steps = slices.DeleteFunc(slices.Clone(p.Prep.Steps), func(s Step) bool { return s == step })
	}
	switch {
	case !p.Prep.Kept():
	case p.Refusal != nil:
		drop(StepReportPending)
	case p.Prep.Pending.Reported:
		p.Decision.Warnings = append(p.Decision.Warnings, debtWarning(p.Want.Unit, p.Prep.Pending, p.Prep.Debt))
	default:
		p.Refusal = debtError(p.Want.Unit, p.Prep.Pending, p.Prep.Debt)
	}
	if p.Refusal != nil && p.Prep.RecordPending && p.Prep.Due != reaction.Restart {
		p.Prep.RecordPending = false
		drop(StepRecordPending)
	}
	return p
}

// capabilityFor is the reload capability the decision uses: the files on disk when the
// plan syncs the manager (what it loads then), else the files the manager names.
func capabilityFor(w Want, u systemd.Props, o Observation, synced bool, files *unitfile.Capability) (*unitfile.Capability, bool) {
	if !w.ReloadOn || u.LoadState != "loaded" {
		return nil, false
	}
	if !synced {
		return o.Capability, o.Capability != nil
	}
	if files != nil {
		return files, true
	}
	return &unitfile.Capability{Capable: true, Reason: "not known yet: the unit's files are not on disk; checked once the manager has loaded them"}, false
}

func capabilityAfterUnmask(w Want, files *unitfile.Capability) (*unitfile.Capability, bool) {
	if !w.ReloadOn {
		return nil, false
	}
	if files != nil {
		return files, true
	}
	return &unitfile.Capability{Capable: true, Reason: "not known yet: checked once the unmask has loaded the unit"}, false
}

// afterUnmask decides what follows an unmask, for the unit as the unmask leaves it: the
// manager loads its files, its run state is what it was, and its boot state is unknown
// until then (a mask leaves the unit's links in place). So a wanted boot state is always
// a step, stated as its outcome, and Apply carries it out even when the unit is already so
// (enabling an enabled unit changes nothing), so check mode counts what the real run does.
func afterUnmask(w Want, f Facts, unmask Decision, files *unitfile.Capability) (Decision, systemd.Props, error) {
	u := f.Unit
	u.LoadState = "loaded"
	u.UnitFileState = ""
	if w.Enabled != nil {
		u.UnitFileState = fileState(!*w.Enabled)
	}
	rest := w
	rest.Masked = nil
	f.Unit = u
	f.Capability, _ = capabilityAfterUnmask(w, files)
	next, err := Decide(rest, f)
	if err != nil {
		return next, u, err
	}
	next.Steps = append(append([]Step{}, unmask.Steps...), next.Steps...)
	next.ClearPending = next.ClearPending || unmask.ClearPending
	return next, u, nil
}

// fileState is the unit file state an enable or a disable leaves.
func fileState(enabled bool) string {
	if enabled {
		return "enabled"
	}
	return "disabled"
}
