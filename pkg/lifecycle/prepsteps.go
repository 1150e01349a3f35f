package lifecycle

import (
	"context"
	"fmt"
	"github.com/richt/services/pkg/systemd"
	"time"

	"github.com/richt/services/pkg/contract"
	"github.com/richt/services/pkg/durable"
	"github.com/richt/services/pkg/unitfile"
)

// prepare carries out the prep steps in order (check mode reports them and changes
// nothing), fills in what the result says of them, and returns the facts the run state
// is decided from: after a sync the unit as the manager then shows it; in check mode the
// unit as observed, with the boot state an enable ahead of the sync would give it.
func (r *run) prepare(ctx context.Context, o Observation, prep Prep) (Facts, error) {
	obs := o.Unit
	r.synced, r.pending, r.earlier = o.Synced, o.Pending, prep.Pending
	r.res.Before, r.res.After = stateOf(obs), stateOf(obs)
	if o.Pending != nil {
		r.res.Pending = fmt.Sprintf("%s due since %s", o.Pending.Reaction, o.Pending.Since.Format(time.RFC3339))
		if prep.Served {
			r.res.Pending += "; already served: the unit became active after it was recorded"
		}
	}
	if prep.RestartServed != "" {
		r.res.RestartServed = fmt.Sprintf("the restart %s asked for was already done: the unit became active after the change had put its files in place (a package transaction restarts its units in its scriptlets)", prep.RestartServed)
	}
	r.res.Triggers = labels(r.trig, prep.Pending)
	f := Facts{Due: prep.Due, Served: prep.Served, RestartServed: prep.RestartServed != "", Pending: prep.Pending != nil}
	for _, step := range prep.Steps {
		r.res.Plan = append(r.res.Plan, string(step))
		switch step {
		case StepRecordPending:
			f.Pending = true
			if !r.check() {
				if _, err := r.recordPending(prep.Due); err != nil {
					return f, err
				}
			}
		case StepEnable, StepDisable:
			enable := step == StepEnable
			if r.check() {
				r.act(step)
				obs.UnitFileState = map[bool]string{true: "enabled", false: "disabled"}[enable]
				continue
			}
			changed, err := r.Systemd.(systemd.UnitFileEnabler).EnableFiles(ctx, r.want.Unit, enable)
			if err != nil {
				return f, fmt.Errorf("%s %s: %w", step, r.want.Unit, err)
			}
			if changed {
				r.act(step)
			}
		case StepDaemonReload:
			var err error
			if obs, err = r.sync(ctx, obs, prep.SyncReasons); err != nil {
				return f, err
			}
		}
	}
	synced := len(prep.SyncReasons) > 0
	f.SyncPredicted = r.check() && synced
	if o.PredictedInstall {
		// Its reload capability is not known until its files are there.
		r.req.Warn("%s: not installed yet; check mode plans for the unit the predicted package change installs (loaded, stopped, disabled)", r.want.Unit)
		if r.want.ReloadOn {
			f.Capability = &unitfile.Capability{Capable: true, Reason: "not known in check mode: the unit's package is not installed yet"}
		}
		f.Unit = obs
		return f, nil
	}
	// Reload capability, whenever reload_on is declared, also when no trigger changed, so
	// a unit that cannot reload fails before it ever needs to.
	if r.want.ReloadOn && obs.LoadState == "loaded" {
		c := o.Capability
		if synced || c == nil {
			read, err := r.capability(obs, synced)
			if err != nil {
				return f, err
			}
			c = &read
		}
		r.res.ReloadCapable = c
		f.Capability = c
	}
	f.Unit = obs
	return f, nil
}

// sync reloads systemd's manager (a change, reported as the daemon-reload action) and
// observes the unit again; in check mode it only reports the action, and obs stays what
// it was.
func (r *run) sync(ctx context.Context, obs systemd.Props, why []string) (systemd.Props, error) {
	r.res.SyncReasons = append(r.res.SyncReasons, why...)
	r.res.Actions = append(r.res.Actions, "daemon-reload")
	r.res.DaemonReload = contract.ReloadPerformed // in check mode, as the real run would report
	if r.check() {
		return obs, nil
	}
	// The entries read when the run began are the ones this reload serves.
	if err := systemd.ReloadManager(ctx, r.Systemd, r.Store, r.synced); err != nil {
		return systemd.Props{}, err
	}
	r.synced = durable.Sync{}
	obs, err := r.Systemd.Show(ctx, r.want.Unit)
	if err != nil {
		return systemd.Props{}, err
	}
	r.res.After = stateOf(obs)
	return obs, nil
}
