package lifecycle

import (
	"context"
	"fmt"

	"github.com/richt/services/pkg/durable"
	"github.com/richt/services/pkg/reaction"
	"github.com/richt/services/pkg/stamp"

	"github.com/richt/services/pkg/systemd"
	"github.com/richt/services/pkg/unitfile"
)

// predictedUnit is a unit as a package installing it leaves it: loaded, inactive and
// disabled (EL's default preset).
func predictedUnit(obs systemd.Props) systemd.Props {
	obs.LoadState, obs.ActiveState, obs.SubState, obs.UnitFileState = "loaded", "inactive", "dead", "disabled"
	return obs
}

// observe reads what a plan is decided from: the manager-sync record, the unit's pending
// reaction, the unit, systemd's clock when a reaction's timing matters, and the reload
// capability of the unit's files as the manager names them. It changes nothing, and reads
// the same in check mode and in a real run.
func (d Deps) observe(ctx context.Context, req Request) (Observation, error) {
	var o Observation
	var err error
	w := req.Want
	if o.Synced, err = d.Store.ManagerSync(); err != nil {
		return o, err
	}
	if o.Pending, err = d.Store.GetPending(w.Unit); err != nil {
		return o, err
	}
	if o.Unit, err = d.Systemd.Show(ctx, w.Unit); err != nil {
		return o, err
	}
	_, o.Enabler = d.Systemd.(systemd.UnitFileEnabler)
	if o.Unit.LoadState == "not-found" && req.Triggers.PackageChanged() {
		// A trigger says a package changed, and the manager has not loaded the unit:
		// the unit that package installs is what the plan is for, not a missing unit. A
		// new unit is loaded, stopped and, by EL's presets, disabled. The daemon-reload
		// the plan then holds ("unit not found after a package change") loads it, and
		// Apply checks that it did.
		o.Unit, o.PredictedInstall = predictedUnit(o.Unit), true
	}
	if o.Libraries, err = d.scanLibraries(ctx, w, req.Triggers, o.Unit); err != nil {
		return o, err
	}
	if needsClock(w, librariesDue(req.Triggers, o.Libraries), o.Pending, o.Unit) {
		if o.Now, err = d.clock(); err != nil {
			return o, err
		}
		o.Reloaded = d.Store.LastReload(w.Unit)
	}
	if o.ManagerLoaded, err = d.managerLoaded(ctx, req, o); err != nil {
		return o, err
	}
	if (w.ReloadOn || owesReload(o.Pending)) && o.Unit.LoadState == "loaded" && !o.PredictedInstall {
		// Files the manager still names may be gone until a due sync: then the plan reads
		// the capability from the files on disk instead, and this one is not needed.
		if c, err := capabilityOf(d.Root, w.Unit, o.Unit.FragmentPath, o.Unit.DropInPaths); err == nil {
			o.Capability = &c
		}
	}
	return o, nil
}

// filesCapability is the reload capability of the unit's files on disk, which is what
// the manager loads at its next reload (or unmask); nil when no fragment is on disk yet
// (a package not installed yet, a unit outside the system search path): then Apply reads
// it once the manager has loaded the unit. unmask: the plan unmasks the unit, so the mask
// link is not what the manager loads but the fragment after it (unitfile.Unmasked).
func (d Deps) filesCapability(unit string, unmask bool) (*unitfile.Capability, error) {
	frag, dropIns := unitfile.Files(d.Root, unit)
	if unmask {
		frag, dropIns = unitfile.Unmasked(d.Root, unit)
	}
	if frag == "" {
		return nil, nil
	}
	c, err := capabilityOf(d.Root, unit, frag, dropIns)
	if err != nil {
		return nil, err
	}
	return &c, nil
}

// capabilityOf reads and merges the given unit files (package unitfile).
func capabilityOf(root, unit, fragment string, dropIns []string) (unitfile.Capability, error) {
	sources, err := unitfile.ReadSources(root, fragment, dropIns)
	if err != nil {
		return unitfile.Capability{}, fmt.Errorf("reload capability of %s: %w", unit, err)
	}
	c, err := unitfile.Reloadable(sources)
	if err != nil {
		return unitfile.Capability{}, fmt.Errorf("reload capability of %s: %w", unit, err)
	}
	return c, nil
}

// managerLoaded reads when the manager last loaded its units, only when that can spare a
// sync: the manager does not ask for one itself (NeedDaemonReload), and a manager-sync
// entry or a trigger says when its unit files were in place. Zero otherwise, or when the
// backend cannot say.
func (d Deps) managerLoaded(ctx context.Context, req Request, o Observation) (stamp.Stamp, error) {
	lr, ok := d.Systemd.(systemd.LoadReader)
	if !ok || o.Unit.NeedDaemonReload || !placedEntry(o.Synced) && !req.Triggers.Placed() {
		return stamp.Stamp{}, nil
	}
	mono, err := lr.UnitsLoaded(ctx)
	if err != nil || mono == 0 {
		return stamp.Stamp{}, err
	}
	now := o.Now
	if now.IsZero() {
		if now, err = d.clock(); err != nil {
			return stamp.Stamp{}, err
		}
	}
	return stamp.Stamp{BootID: now.BootID, Mono: mono}, nil
}

// placedEntry: an entry of the record says when its change's unit files were in place.
func placedEntry(s durable.Sync) bool {
	for _, e := range s.Entries {
		if e.Placed != nil {
			return true
		}
	}
	return false
}

// owesReload: the pending record asks for a reload (on its own, or after its restart):
// whether the unit can reload decides whether it can be carried out (debtOf), so its
// files' capability is read too.
func owesReload(p *durable.Pending) bool {
	return p != nil && (reaction.Kind(p.Reaction) == reaction.Reload || p.ReloadAt != nil)
}
