package service

import (
	"context"
	"fmt"
	"maps"
	"slices"

	"github.com/richt/services/pkg/ansible"
	"github.com/richt/services/pkg/contract"
	"github.com/richt/services/pkg/durable"
	"github.com/richt/services/pkg/reaction"
	"github.com/richt/services/pkg/rpmexact"
	"github.com/richt/services/pkg/stamp"
)

// composed is the service's plan, made before any step changes anything from its steps'
// own plans: rpm_exact's Plan for the packages, each file's and each process's plan as
// its module reports it in check mode (reading only), the process plans made with the
// triggers the earlier plans say will fire. Check mode reports it; a real run records
// what it owes and carries it out.
type composed struct {
	ahead *ahead
	// reload: the service reloads the manager at its end.
	reload bool
}

// planPackages is the packages step's plan (nil without packages). An observation that
// failed is an error only when reactions depend on it; otherwise the step reports its
// own failure when it runs.
func (r *run) planPackages(ctx context.Context, needed bool) (*rpmexact.Plan, error) {
	if r.pkgTask == nil || r.d.Predict == nil {
		return nil, nil
	}
	// Reading only, but bounded: an rpm that hangs must not hold the run forever.
	ctx, cancel := context.WithTimeout(ctx, predictTimeout)
	defer cancel()
	plan, err := r.d.Predict.PlanPackages(ctx, r.pkgTask.Want)
	if err != nil && plan.Observed == "" && needed {
		r.res.FailedStep = "record reactions"
		return nil, fmt.Errorf("predict the packages step: %w", err)
	}
	return &plan, nil
}

// packagesTrigger is the packages step's result as the process plans read it (package
// contract): what its plan will change.
func packagesTrigger(p *rpmexact.Plan) map[string]any {
	changes, units := p != nil && p.Changes(), p != nil && p.UnitFilesChange()
	reload := contract.ReloadNone
	if units {
		reload = contract.ReloadNeeded
	}
	return map[string]any{"changed": changes, "package_changed": changes, "unit_files_changed": units, "daemon_reload": string(reload)}
}

// ask is one step's plan: its module run in check mode. In check mode it is the step's
// result (warnings shown, a failure stops the service there); in a real run only the
// plan is read from it, and its warnings are the real step's to give.
func (r *run) ask(ctx context.Context, m Module, step string, args map[string]any) (map[string]any, error) {
	if r.req.CheckMode {
		return r.call(ctx, m, step, args)
	}
	out := ansible.Call(ctx, m.Spec, args, true, false, m.Handler)
	delete(out, "invocation")
	delete(out, "warnings")
	return out, nil
}

// changedOut reports whether a step's plan changes something: a real run's plan that could
// not be made counts as a change, so the reaction it may owe is recorded (and withdrawn
// if the step then changes nothing).
func (r *run) changedOut(out map[string]any) bool {
	if f, _ := out["failed"].(bool); f && !r.req.CheckMode {
		return true
	}
	c, _ := out["changed"].(bool)
	return c
}

// composePresent composes the plan of a present run: the reactions recorded ahead, the
// packages, the files, the processes, and the service's own manager reload.
func (r *run) composePresent(ctx context.Context, files []fileStep) (*composed, error) {
	running := map[string]bool{}
	for _, p := range r.order {
		if p.State == nil || *p.State == "running" {
			running[unitOf(p.Unit)] = true
		}
	}
	a := &ahead{pkg: map[string]reaction.Kind{}, files: map[string]reaction.Kind{}, earlier: map[string]*durable.Pending{}, wrote: map[string]bool{},
		running: running, written: map[string]durable.Pending{}}
	c := &composed{ahead: a}
	owes := r.d.Pending != nil && len(running) > 0
	pkgPlan, err := r.planPackages(ctx, owes)
	if err != nil {
		return nil, err
	}
	var pkgEntries []string
	if pkgPlan != nil {
		pkgEntries = prefixed("packages", pkgPlan.Names())
		if pkgPlan.Changes() {
			for u := range running {
				a.pkg[u] = reaction.Restart
			}
		}
	}
	if r.req.CheckMode && r.pkgTask != nil {
		out, err := r.call(ctx, r.d.Packages, "packages", r.packageArgs(false))
		r.res.Packages = out
		if err != nil {
			r.res.Plan = append(r.res.Plan, pkgEntries...)
			return nil, err
		}
	}
	var fileEntries []string
	var fileOuts []map[string]any
	unitFiles := pkgPlan != nil && pkgPlan.UnitFilesChange()
	var failed error
	for _, f := range files {
		out, err := r.ask(ctx, r.d.Files, "file "+fileLabel(f), f.args)
		out["item"] = f.item
		fileOuts = append(fileOuts, out)
		if r.req.CheckMode {
			r.res.Files = append(r.res.Files, out)
		}
		fileEntries = append(fileEntries, prefixed("file "+fileLabel(f), stringsOf(out["plan"]))...)
		if r.changedOut(out) {
			unitFiles = true
			if running[f.unit] {
				a.files[f.unit] = reaction.Stronger(a.files[f.unit], fileReaction(f))
			}
		}
		if err != nil {
			failed = err
			break
		}
	}
	records, err := r.plannedRecords(a)
	if err != nil {
		return nil, err
	}
	r.res.Plan = append(r.res.Plan, records[0]...)
	r.res.Plan = append(r.res.Plan, pkgEntries...)
	r.res.Plan = append(r.res.Plan, records[1]...)
	r.res.Plan = append(r.res.Plan, fileEntries...)
	if failed != nil {
		return nil, failed
	}
	pkgTrigger := packagesTrigger(pkgPlan)
	for _, proc := range r.order {
		restart, reload := r.triggers(proc, pkgTrigger, files, fileOuts)
		args := processArgs(proc)
		args["restart_on"] = restart
		if len(reload) > 0 {
			args["reload_on"] = reload
		}
		step := "process " + unitOf(proc.Unit)
		out, err := r.ask(ctx, r.d.Processes, step, args)
		if r.req.CheckMode {
			r.res.Processes = append(r.res.Processes, out)
		}
		r.res.Plan = append(r.res.Plan, prefixed(step, stringsOf(out["plan"]))...)
		if err != nil {
			return nil, err
		}
	}
	// Without a process nothing syncs the manager: the service does, once (present).
	if len(r.order) == 0 && (unitFiles || r.syncDue()) {
		c.reload = true
		r.res.Plan = append(r.res.Plan, "daemon-reload")
	}
	return c, nil
}

// plannedRecords are the record-pending entries of the plan: before the packages step,
// what a package change owes; before the files step, what the files owe. Each is the
// record a real run writes, merged (durable.Merge) with the record there is and with the
// one written before it.
func (r *run) plannedRecords(a *ahead) ([2][]string, error) {
	var out [2][]string
	if r.d.Pending == nil {
		return out, nil
	}
	recorded := map[string]*durable.Pending{}
	for i, owed := range []map[string]reaction.Kind{a.pkg, a.files} {
		for _, unit := range slices.Sorted(maps.Keys(owed)) {
			earlier, ok := recorded[unit]
			if !ok {
				var err error
				if earlier, err = r.d.Pending.GetPending(unit); err != nil {
					r.res.FailedStep = "record reactions"
					return out, fmt.Errorf("read the record of %s: %w", unit, err)
				}
			}
			rec := durable.Merge(earlier, nil, owed[unit], nil, stamp.Stamp{})
			recorded[unit] = &rec
			out[i] = append(out[i], fmt.Sprintf("record-pending %s %s", unit, rec.Reaction))
		}
	}
	return out, nil
}

// composeAbsent composes the plan of a removal: the processes stopped and disabled, the
// files removed, the packages removed, and the manager reload after them.
func (r *run) composeAbsent(ctx context.Context, dependents []string) (*composed, error) {
	c := &composed{}
	removes := false
	for _, proc := range r.order {
		step := "process " + unitOf(proc.Unit)
		out, err := r.ask(ctx, r.d.Processes, step, absentProcessArgs(proc))
		if r.req.CheckMode {
			r.res.Processes = append(r.res.Processes, out)
		}
		r.res.Plan = append(r.res.Plan, prefixed(step, stringsOf(out["plan"]))...)
		if err != nil {
			return nil, err
		}
	}
	for _, f := range r.fileArgs(true) {
		out, err := r.ask(ctx, r.d.Files, "file "+fileLabel(f), f.args)
		out["item"] = f.item
		if r.req.CheckMode {
			r.res.Files = append(r.res.Files, out)
		}
		r.res.Plan = append(r.res.Plan, prefixed("file "+fileLabel(f), stringsOf(out["plan"]))...)
		if c, _ := out["changed"].(bool); c {
			removes = true
		}
		if err != nil {
			return nil, err
		}
	}
	pkgPlan, err := r.planPackages(ctx, false)
	if err != nil {
		return nil, err
	}
	if pkgPlan != nil {
		r.res.Plan = append(r.res.Plan, prefixed("packages", pkgPlan.Names())...)
		removes = removes || pkgPlan.Changes()
	}
	if r.req.CheckMode && r.pkgTask != nil {
		if err := r.removePackages(ctx, dependents, &removes); err != nil {
			return nil, err
		}
	}
	if removes || r.syncDue() {
		c.reload = true
		r.res.Plan = append(r.res.Plan, "daemon-reload")
	}
	return c, nil
}

// prefixed is a step's plan entries under the step's name.
func prefixed(step string, entries []string) []string {
	out := make([]string, 0, len(entries))
	for _, e := range entries {
		out = append(out, step+": "+e)
	}
	return out
}
