package override

import (
	"context"
	"fmt"
	"path"

	"github.com/richt/services/pkg/ansible"
	"github.com/richt/services/pkg/contract"
	"github.com/richt/services/pkg/lock"
	"github.com/richt/services/pkg/timeout"
	"github.com/richt/services/pkg/unitfile"
)

// Handler returns unit_override's behaviour over the given side effects: resolve what the
// task wants, Observe the file, Decide the plan, and Apply it (check mode reports the
// plan and applies nothing).
func Handler(d Deps) ansible.Handler {
	return func(ctx context.Context, req *ansible.Request) (any, error) {
		task, err := ansible.Parsed[Task](req)
		if err != nil {
			return nil, err
		}
		v, unit, p := task.Params, task.Unit, task.Path
		ctx, cancel := timeout.Deadline(ctx, v.Timeout)
		defer cancel()
		if d.Lock != nil {
			release, err := d.Lock(ctx, lock.Unit(unit))
			if err != nil {
				return &Result{Unit: unit, Path: p, State: v.State, Operation: OpNone},
					fmt.Errorf("another run for %s did not finish within the timeout of %s: %w", unit, v.Timeout, err)
			}
			defer release()
		}
		res := &Result{Unit: unit, Path: p, State: v.State, Operation: OpNone, Change: contract.Change{DaemonReload: contract.ReloadNone}}
		w := Want{Unit: unit, Path: p, Present: v.State == "present", Content: []byte(v.content()), Mode: v.Mode,
			Sensitive: v.Sensitive, DaemonReload: v.DaemonReload}
		if w.UID, err = d.lookupUID(ctx, v.Owner); err != nil {
			return res, err
		}
		if w.GID, err = d.lookupGID(ctx, v.Group); err != nil {
			return res, err
		}
		if warn := ownerWriteWarning(v.Owner, w.UID, w.Mode, describeFile(v)); warn != "" && w.Present {
			req.Warn("%s", warn)
		}

		f, err := Observe(d.Root, p)
		if err != nil {
			return res, err
		}
		plan, err := Decide(w, f)
		if err != nil {
			return res, err
		}
		res.Operation, res.Changed, res.Change, res.Diff, res.Plan = plan.Operation, plan.Changed(), plan.Change, plan.Diff, plan.Steps
		if !req.CheckMode {
			if err := d.Apply(ctx, w, f, plan, res); err != nil {
				return res, err
			}
		}
		c, err := d.capability(unit, p, w.Content, w.Present, req.CheckMode)
		if err != nil {
			req.Warn("reload capability of %s not determined: %v", unit, err)
		} else {
			res.ReloadCapable = &c
		}
		return res, nil
	}
}

// capability is the merged unit's reload capability after the change (predicted in check
// mode, where the file on disk is still the old one).
func (d Deps) capability(unit, p string, content []byte, present, check bool) (unitfile.Capability, error) {
	frag, dropIns := unitfile.Files(d.Root, unit)
	sources, err := unitfile.ReadSources(d.Root, frag, dropIns)
	if err != nil {
		return unitfile.Capability{}, err
	}
	if check {
		sources = unitfile.Replace(sources, p, content, present, p == path.Join(UnitDir, unit))
	}
	return unitfile.Reloadable(sources)
}
