package service

import (
	"context"
	"fmt"
	"maps"
	"slices"

	"github.com/richt/services/pkg/ansible"
	"github.com/richt/services/pkg/contract"
	"github.com/richt/services/pkg/durable"
	"github.com/richt/services/pkg/lifecycle"
	"github.com/richt/services/pkg/reaction"
	"github.com/richt/services/pkg/stamp"
	"github.com/richt/services/pkg/wiring"
)

// composed is the service's plan, made before any step changes anything from its steps'
// own plans, held in hand until they are carried out: the packages step's (under the
// transaction lock until it runs) and each file's, and what each process will owe,
// derived from them (owes). Check mode reports it, with each process's plan forecast
// from the triggers the earlier steps' check results report; a real run records what the
// processes owe and carries out the held plans, and plans each process at its turn
// (package doc).
type composed struct {
	ahead *ahead
	// pkg is the packages step's plan (nil without packages).
	pkg Step
	// configs are the configs' plans, in configs' order.
	configs []configPlan
	// files are the files' plans, in files' order.
	files []Step
	// reload: the service reloads the manager at its end.
	reload bool
}

// release lets go of every plan still held (a run that stops before carrying them out).
func (c *composed) release() {
	if c == nil {
		return
	}
	if c.pkg != nil {
		c.pkg.Release()
	}
	for _, st := range c.files {
		if st != nil {
			st.Release()
		}
	}
}

// planFailed reports whether a held step fails when it runs: its plan could not be made
// (the arguments were checked when the service parsed its own).
func planFailed(st Step) bool { return st.Err() != nil }

// owed is what the service's processes will owe for the plans it holds: per unit of a
// process that is to run, the reaction the packages step owes it, the one the configs
// owe it and the one the unit files and drop-ins owe it. The steps record the manager
// reload due themselves (record-reload-due in their plans); the reactions the service
// records (ahead).
type owed struct {
	pkg, configs, files map[string]reaction.Kind
	running             map[string]bool
}

// owes derives what each process will owe from the outcomes the held plans predict, per
// step, through the processes' wiring (package wiring: by name, or the default wiring),
// the same rule that builds their triggers at their turns: pure, it reads no host and asks
// no systemd. A plan that could not be made counts as a change (planned), so a real run
// records the reaction it may owe before anything (and withdraws it if the step then
// changes nothing); check mode lists the same record and then fails at that step.
func owes(order []Process, parts wiring.Parts, pkg, configs, files outcomes) owed {
	o := owed{pkg: dueFrom(order, parts, pkg), configs: dueFrom(order, parts, configs),
		files: dueFrom(order, parts, files), running: map[string]bool{}}
	for _, p := range order {
		if p.running() {
			o.running[unitOf(p.Unit)] = true
		}
	}
	return o
}

// unitFilesChange reports whether the held plans change unit files (or could not be
// made, and may): the manager must then be reloaded.
func unitFilesChange(pkg Step, configs []configPlan, files []Step) bool {
	if pkg != nil && !planFailed(pkg) && pkg.UnitFiles() {
		return true
	}
	if configUnitFiles(configs) {
		return true
	}
	for _, st := range files {
		if planFailed(st) || st.Changes() {
			return true
		}
	}
	return false
}

// filesPlanned are the unit files' and drop-ins' outcomes as their plans predict them.
func filesPlanned(files []fileStep, plans []Step) outcomes {
	out := outcomes{}
	for i, f := range files {
		out[fileRef(f)] = planned(plans[i].Changes(), planFailed(plans[i]))
	}
	return out
}

// planPackages holds the packages step's plan (absent: the removal's), when the service
// has packages. A plan that could not be made is the packages step's failure, reported
// before anything changes.
func (r *run) planPackages(ctx context.Context, c *composed, absent bool) error {
	if r.pkgs == nil {
		return nil
	}
	c.pkg = r.plan(ctx, r.d.Packages, *r.pkgs)
	if !planFailed(c.pkg) {
		return nil
	}
	out, err := r.apply(ctx, r.d.Packages, c.pkg, "packages", *r.pkgs)
	r.res.Packages = &out
	c.pkg = nil // ran
	return err
}

// composePresent composes the plan of a present run, reading only: the packages' and the
// files' plans, what the processes owe for them (owes), the records that owes, and the
// service's own manager reload. In check mode it then runs the held plans' checks and each
// process's step in check mode, which plans it from the triggers those checks report; a
// real run leaves the processes to their turns and contacts no systemd here. On an error
// nothing is held.
func (r *run) composePresent(ctx context.Context) (c *composed, err error) {
	c = &composed{}
	// Released through held, not c: every error return sets the result c to nil first.
	held := c
	defer func() {
		if err != nil {
			held.release()
		}
	}()
	if err := r.planPackages(ctx, c, false); err != nil {
		return nil, err
	}
	// Before any change: a process that can be reloaded needs a unit that can (a unit
	// the packages step installs or changes: right after that step, in present).
	if err := r.checkCapability(ctx, c.pkg, false); err != nil {
		return nil, err
	}
	pkgChanges := c.pkg != nil && !planFailed(c.pkg) && c.pkg.Changes()
	for _, cfg := range r.configs {
		cp := r.planConfig(ctx, cfg)
		// A package's own directory (/etc/nginx/conf.d) or user (redis) exists once the
		// packages step installed it: the config is planned at its turn, and written
		// until then.
		cp.deferred = pkgChanges && cp.waitsForPackages()
		c.configs = append(c.configs, cp)
	}
	for _, f := range r.files {
		c.files = append(c.files, r.plan(ctx, r.d.Files, f.call))
	}
	o := owes(r.order, r.parts, plannedPackages(r.parts.Packages, c.pkg), configsPlanned(c.configs), filesPlanned(r.files, c.files))
	c.ahead = &ahead{pkg: o.pkg, configs: o.configs, files: o.files, running: o.running,
		earlier: map[string]*durable.Pending{}, wrote: map[string]bool{}, written: map[string]durable.Pending{}}
	records, err := r.plannedRecords(c.ahead)
	if err != nil {
		return nil, err
	}
	first := len(r.res.Plan)
	r.res.Plan = append(r.res.Plan, records[0]...)
	if c.pkg != nil {
		r.res.Plan = append(r.res.Plan, prefixed("packages", c.pkg.Names())...)
	}
	// The tree validators run before the configs' records: a refusal records nothing.
	r.res.Plan = append(r.res.Plan, treeNames(c.configs)...)
	r.res.Plan = append(r.res.Plan, records[1]...)
	for _, cp := range c.configs {
		r.res.Plan = append(r.res.Plan, prefixed(configStepName(cp.cfg), cp.names())...)
	}
	r.res.Plan = append(r.res.Plan, records[2]...)
	for i, f := range r.files {
		r.res.Plan = append(r.res.Plan, prefixed("file "+fileLabel(f), c.files[i].Names())...)
	}
	// Without a process nothing syncs the manager: the service does, once (present).
	c.reload = len(r.order) == 0 && (unitFilesChange(c.pkg, c.configs, c.files) || r.syncDue())
	// Before any change, in check mode too: what a rollback would put back, and whether it
	// could. Its entries go first in the plan: the rollback's record is written before the
	// first record and the first write (beginRollback), and the plan lists what happens in
	// the order it happens.
	rbAt := len(r.res.Plan)
	if err := r.prepareRollback(ctx, c); err != nil {
		return nil, err
	}
	r.res.Plan = aheadOf(r.res.Plan, first, rbAt)
	if r.req.CheckMode {
		if err := r.checkPresent(ctx, c); err != nil {
			return nil, err
		}
	}
	if c.reload {
		r.res.Plan = append(r.res.Plan, "daemon-reload")
	}
	return c, nil
}

// checkPresent is check mode's run of a composed present plan: the packages', configs'
// and files' checks (each reports its held plan), then each process's step in check mode, planned
// from the triggers those checks report, as a real run plans it from its steps' results.
// A failure stops the service there, as in a real run.
func (r *run) checkPresent(ctx context.Context, c *composed) error {
	if c.pkg != nil {
		st := c.pkg
		c.pkg = nil // runs now
		out, err := r.apply(ctx, r.d.Packages, st, "packages", *r.pkgs)
		r.res.Packages = &out
		if err != nil {
			return err
		}
	}
	// The tree validators judge the new tree in check mode too: a dry run that says the
	// daemon would refuse it fails as the real run would.
	if err := r.validateTree(ctx, c.configs); err != nil {
		return err
	}
	for _, cp := range c.configs {
		out, err := r.applyConfig(ctx, cp, nil)
		r.res.Configs = append(r.res.Configs, out)
		if err != nil {
			return err
		}
	}
	for i, f := range r.files {
		st := c.files[i]
		c.files[i] = nil // runs now
		out, err := r.apply(ctx, r.d.Files, st, "file "+fileLabel(f), f.call)
		r.res.Files = append(r.res.Files, withItem(out, f))
		if err != nil {
			return err
		}
	}
	return r.processes(ctx, r.res.Packages)
}

// processes runs each process's step in order, planned at its turn from the triggers the
// steps before it report (pkgRes, r.res.Configs, r.res.Files), wired by name or by the
// default wiring, and puts the plan it carried out (its result's plan; in check mode the
// plan it reports) at its place in the service's plan. Once a process step reloaded the
// manager, the later ones get the changes marked as loaded (managerLoaded).
func (r *run) processes(ctx context.Context, pkgRes *stepResult) error {
	r.warnUnnamed()
	out := merged(packageOutcomes(r.parts.Packages, pkgRes), configOutcomes(r.configs, r.res.Configs), fileOutcomes(r.files, r.res.Files))
	return r.eachProcess(ctx, out, r.process)
}

// eachProcess runs each process's step in order through step (the change's, or a
// rollback's), with the triggers and facts the outcomes out give it (wiring, by name or by
// default), and stops at the first that fails. Once a step reloaded the manager, the
// later ones get the outcomes marked as loaded (managerLoaded).
func (r *run) eachProcess(ctx context.Context, out outcomes, step func(ctx context.Context, proc Process, call ansible.Args) (stepResult, error)) error {
	for _, proc := range r.order {
		restart, reload := r.triggers(proc, out)
		// The facts apart from the reactions: by name or not, a process plans its
		// manager reload and a unit a package installs from the service's changes.
		facts := wiring.Facts(proc.Unit, r.parts, out)
		call, err := triggered(proc.call, restart, reload, facts)
		if err != nil {
			return err
		}
		res, err := step(ctx, proc, call)
		if err != nil {
			return err
		}
		if res.change().DaemonReload.Reloaded() {
			// SPEC §7, one manager reload for the service's file changes: this step's
			// reload (its plan's daemon-reload, in check mode as in a real run) loaded
			// every change before it. The later processes still plan from them (the unit a
			// package installs, the restart owed), but not another reload; a record or
			// NeedDaemonReload after it still asks for one.
			out = managerLoaded(out)
		}
	}
	return nil
}

// managerLoaded is out with every outcome marked as loaded by a manager reload after it
// (daemon_reload: performed, package contract): systemd_lifecycle then counts no sync
// reason for it. The steps' results themselves are left as they are.
func managerLoaded(out outcomes) outcomes {
	marked := make(outcomes, len(out))
	for ref, o := range out {
		o.DaemonReload = contract.ReloadPerformed
		marked[ref] = o
	}
	return marked
}

// process plans one process's step and carries out that plan at once (in check mode,
// reports it), under its unit's lock, and lists it in the service's plan.
func (r *run) process(ctx context.Context, proc Process, call ansible.Args) (stepResult, error) {
	step := "process " + unitOf(proc.Unit)
	out, err := r.callArgs(ctx, r.d.Processes, step, call)
	r.res.Processes = append(r.res.Processes, out)
	r.res.Plan = append(r.res.Plan, prefixed(step, out.plan())...)
	return out, err
}

// triggered is a process's call with its triggers (lists as systemd_lifecycle takes them,
// package wiring; empty: not given): its typed request (lifecycle.Task) completed with
// them, nothing else parsed again, and the lists shown as its arguments.
func triggered(call ansible.Args, restart, reload, facts []any) (ansible.Args, error) {
	task, err := ansible.ParsedArgs[lifecycle.Task](call)
	if err != nil {
		return call, err
	}
	if task, err = task.Triggered(restart, reload, facts); err != nil {
		return call, err
	}
	shown := ansible.Values{}
	for name, list := range map[string][]any{"restart_on": restart, "reload_on": reload, "facts_from": facts} {
		if len(list) > 0 {
			shown[name] = list
		}
	}
	return call.With(task, shown), nil
}

// plannedRecords are the record-pending entries of the plan: before the packages step,
// what a package change owes; before the configs, what the configs owe; before the unit
// files and drop-ins, what they owe. Each is the record a real run writes, merged
// (durable.Merge) with the record there is and with the one written before it.
func (r *run) plannedRecords(a *ahead) ([3][]string, error) {
	var out [3][]string
	if r.d.Pending == nil {
		return out, nil
	}
	recorded := map[string]*durable.Pending{}
	for i, owed := range []map[string]reaction.Kind{a.pkg, a.configs, a.files} {
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

// prefixed is a step's plan entries under the step's name.
func prefixed(step string, entries []string) []string {
	out := make([]string, 0, len(entries))
	for _, e := range entries {
		out = append(out, step+": "+e)
	}
	return out
}

// aheadOf moves plan[from:] to index at: entries planned last that happen first.
func aheadOf(plan []string, at, from int) []string {
	moved := slices.Clone(plan[from:])
	return slices.Insert(plan[:from:from], at, moved...)
}
