package override

import (
	"context"
	"fmt"
	"path"
	"slices"

	"github.com/richt/services/pkg/ansible"
	"github.com/richt/services/pkg/contract"
	"github.com/richt/services/pkg/timeout"
	"github.com/richt/services/pkg/unitfile"
)

// Handler returns unit_override's behaviour over the given side effects: Plan (resolve
// what the task wants, observe the file, decide; reads only), then Apply unless check mode,
// which reports the plan and applies nothing.
func Handler(d Deps) ansible.Handler {
	return func(ctx context.Context, req *ansible.Request) (any, error) {
		task, err := ansible.Parsed[Task](req)
		if err != nil {
			return nil, err
		}
		ctx, cancel := timeout.Deadline(ctx, task.Params.Timeout)
		defer cancel()
		p, err := d.Plan(ctx, task)
		var res *Result
		switch {
		case err != nil:
			res = p.Result()
		case req.CheckMode:
			res = d.Check(p)
		default:
			res, err = d.Apply(ctx, p)
		}
		for _, w := range res.warnings {
			req.Warn("%s", w)
		}
		return res, err
	}
}

// Plan resolves what the task wants (the owner and group as ids, on the target), observes
// the file and decides; it changes nothing. With an error, the plan is as far as it got,
// for the result to report (Plan.Result).
func (d Deps) Plan(ctx context.Context, t Task) (Plan, error) {
	v, unit, path := t.Params, t.Unit, t.Path
	w := Want{Unit: unit, Path: path, Present: v.State == "present", Content: []byte(v.content()), Mode: v.Mode,
		Sensitive: v.Sensitive, DaemonReload: v.DaemonReload}
	p := Plan{Want: w, Timeout: v.Timeout, Operation: OpNone, Change: contract.Change{DaemonReload: contract.ReloadNone}}
	var err error
	if w.UID, err = d.lookupUID(ctx, v.Owner); err != nil {
		return p, err
	}
	if w.GID, err = d.lookupGID(ctx, v.Group); err != nil {
		return p, err
	}
	p.Want = w
	if warn := ownerWriteWarning(v.Owner, w.UID, w.Mode, describeFile(v)); warn != "" && w.Present {
		p.Warnings = append(p.Warnings, warn)
	}
	f, err := Observe(d.Root, path)
	if err != nil {
		return p, err
	}
	decided, err := Decide(w, f)
	decided.Warnings, decided.Timeout = p.Warnings, p.Timeout
	if err != nil {
		// A refusal reports no step: nothing of it is carried out.
		p.File = f
		return p, err
	}
	return decided, nil
}

// Check is check mode's result: the plan, and the reload capability the unit will have
// once the plan is carried out.
func (d Deps) Check(p Plan) *Result {
	res := p.Result()
	res.DaemonReload = res.DaemonReload.Planned()
	d.addCapability(res, p, true)
	return res
}

// Result is what the run reports of the plan before it is carried out (or when it could
// not be made): its operation, steps, package contract and diff, and its warnings.
func (p Plan) Result() *Result {
	w := p.Want
	return &Result{Unit: w.Unit, Path: w.Path, State: stateOf(w), Operation: p.Operation,
		Changed: p.Changed(), Change: p.Change, Diff: p.Diff, Plan: p.Steps,
		warnings: slices.Clone(p.Warnings)}
}

// stateOf is the state parameter the want was made from.
func stateOf(w Want) string {
	if w.Present {
		return "present"
	}
	return "absent"
}

// addCapability adds the unit's reload capability after the change to the result, or a
// warning that it could not be determined.
func (d Deps) addCapability(res *Result, p Plan, check bool) {
	c, err := d.capability(p.Want.Unit, p.Want.Path, p.Want.Content, p.Want.Present, check)
	if err != nil {
		res.warnings = append(res.warnings, fmt.Sprintf("reload capability of %s not determined: %v", p.Want.Unit, err))
		return
	}
	res.ReloadCapable = &c
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
