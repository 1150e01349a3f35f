package lifecycle

import (
	"context"
	"fmt"
	"github.com/richt/services/pkg/systemd"

	"github.com/richt/services/pkg/unitfile"
)

// predictedUnit is a unit as a package installing it leaves it: loaded, inactive and
// disabled (EL's default preset).
func predictedUnit(obs systemd.Props) systemd.Props {
	obs.LoadState, obs.ActiveState, obs.SubState, obs.UnitFileState = "loaded", "inactive", "dead", "disabled"
	return obs
}

// observe reads what the run decides from: the manager-sync record, the unit's pending
// reaction, the unit, systemd's clock when a reaction's timing matters, and the reload
// capability of the unit's files as the manager names them. It changes nothing.
func (r *run) observe(ctx context.Context) (Observation, error) {
	var o Observation
	var err error
	if o.Synced, err = r.Store.ManagerSync(); err != nil {
		return o, err
	}
	if o.Pending, err = r.Store.GetPending(r.want.Unit); err != nil {
		return o, err
	}
	if o.Unit, err = r.Systemd.Show(ctx, r.want.Unit); err != nil {
		return o, err
	}
	_, o.Enabler = r.Systemd.(systemd.UnitFileEnabler)
	if r.check() && o.Unit.LoadState == "not-found" && r.trig.PackageChanged() {
		// A trigger says a package change comes first, which check mode did not carry out:
		// the unit it installs is what the plan is for, not a missing unit. A new unit is
		// loaded, stopped and, by EL's presets, disabled.
		o.Unit, o.PredictedInstall = predictedUnit(o.Unit), true
	}
	if needsClock(r.want, r.trig, o.Pending, o.Unit) {
		if o.Now, err = r.clock(); err != nil {
			return o, err
		}
	}
	if r.want.ReloadOn && o.Unit.LoadState == "loaded" {
		// Files the manager still names may be gone until a due sync: then the capability
		// is read again after it, and this one is not needed.
		if c, err := r.capability(o.Unit, false); err == nil {
			o.Capability = &c
		}
	}
	return o, nil
}

func (r *run) capability(obs systemd.Props, synced bool) (unitfile.Capability, error) {
	var sources []unitfile.Source
	var err error
	if r.check() && synced {
		// Nothing was reloaded in check mode: read what the manager would load.
		frag, dropIns := unitfile.Files(r.Root, r.want.Unit)
		sources, err = unitfile.ReadSources(r.Root, frag, dropIns)
	} else {
		sources, err = unitfile.ReadSources(r.Root, obs.FragmentPath, obs.DropInPaths)
	}
	if err != nil {
		return unitfile.Capability{}, fmt.Errorf("reload capability of %s: %w", r.want.Unit, err)
	}
	c, err := unitfile.Reloadable(sources)
	if err != nil {
		return unitfile.Capability{}, fmt.Errorf("reload capability of %s: %w", r.want.Unit, err)
	}
	return c, nil
}
