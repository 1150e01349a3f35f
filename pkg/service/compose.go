package service

import (
	"context"
	"fmt"
	"maps"
	"slices"

	"github.com/richt/services/pkg/contract"
	"github.com/richt/services/pkg/durable"
	"github.com/richt/services/pkg/reaction"
	"github.com/richt/services/pkg/stamp"
)

// composed is the service's plan, made before any step changes anything from its steps'
// own plans, held in hand until they are carried out: the packages step's (under the
// transaction lock until it runs) and each file's. A process's plan depends on what the
// steps before it leave (the triggers they report, a restart a package scriptlet already
// did, the records this run wrote), so the one composed here is its forecast from the
// earlier plans, and the plan carried out is made at the process's turn, under the unit's
// lock, and carried out at once. Check mode reports the composed plan; a real run records
// what it owes and carries it out.
type composed struct {
	ahead *ahead
	// pkg is the packages step's plan (nil without packages, or with arguments its Spec
	// refused: pkgOut is then its failed result).
	pkg    Step
	pkgOut map[string]any
	// files are the files' plans, in files' order (nil where the arguments were refused:
	// fileOuts holds the failed result).
	files    []Step
	fileOuts []map[string]any
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

// forecast is a step's result as the plans after it read it (package contract): what its
// plan will change. A plan that could not be made changes nothing (its step then fails).
func forecast(st Step, packages bool) map[string]any {
	ok := st != nil && st.Err() == nil
	changes, units := ok && st.Changes(), ok && st.UnitFiles()
	reload := contract.ReloadNone
	if units {
		reload = contract.ReloadNeeded
	}
	out := map[string]any{"changed": changes, "unit_files_changed": units, "daemon_reload": string(reload)}
	if packages {
		out["package_changed"] = changes
	}
	return out
}

// planFailed reports whether a held step fails when it runs: its arguments were refused or
// its plan could not be made.
func planFailed(st Step) bool { return st == nil || st.Err() != nil }

// planPackages holds the packages step's plan (absent: the removal's), when the service
// has packages. A plan that could not be made is the packages step's failure, reported
// before anything changes.
func (r *run) planPackages(ctx context.Context, c *composed, absent bool) error {
	args := r.packageArgs(absent)
	if args == nil {
		return nil
	}
	c.pkg, c.pkgOut = r.plan(ctx, r.d.Packages, args)
	if !planFailed(c.pkg) {
		return nil
	}
	out, err := r.apply(ctx, r.d.Packages, c.pkg, c.pkgOut, "packages", args)
	r.res.Packages = out
	c.pkg = nil // ran
	return err
}

// composePresent composes the plan of a present run: the reactions recorded ahead, the
// packages, the files, the processes, and the service's own manager reload. On an error
// nothing is held.
func (r *run) composePresent(ctx context.Context, files []fileStep) (c *composed, err error) {
	running := map[string]bool{}
	for _, p := range r.order {
		if p.State == nil || *p.State == "running" {
			running[unitOf(p.Unit)] = true
		}
	}
	a := &ahead{pkg: map[string]reaction.Kind{}, files: map[string]reaction.Kind{}, earlier: map[string]*durable.Pending{}, wrote: map[string]bool{},
		running: running, written: map[string]durable.Pending{}}
	c = &composed{ahead: a}
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
	var pkgEntries []string
	// The package plan's unit-file change, read before check mode runs the step (and lets
	// go of its plan): without a process, it is what makes the service reload the manager.
	unitFiles := false
	if c.pkg != nil {
		pkgEntries = prefixed("packages", c.pkg.Names())
		unitFiles = c.pkg.UnitFiles()
		if c.pkg.Changes() {
			for u := range running {
				a.pkg[u] = reaction.Restart
			}
		}
		if r.req.CheckMode {
			out, err := r.apply(ctx, r.d.Packages, c.pkg, nil, "packages", r.packageArgs(false))
			r.res.Packages = out
			c.pkg = nil // ran
			if err != nil {
				r.res.Plan = append(r.res.Plan, pkgEntries...)
				return nil, err
			}
		}
	}
	var fileEntries []string
	var fileTriggers []map[string]any
	var failed error
	for _, f := range files {
		step := "file " + fileLabel(f)
		st, out := r.plan(ctx, r.d.Files, f.args)
		c.files, c.fileOuts = append(c.files, st), append(c.fileOuts, out)
		var names []string
		// A real run's plan that could not be made counts as a change, so the reaction it
		// may owe is recorded (and withdrawn if the step then changes nothing).
		changed := planFailed(st) && !r.req.CheckMode
		trigger := forecast(st, false)
		if r.req.CheckMode {
			out, err = r.apply(ctx, r.d.Files, st, out, step, f.args)
			c.files[len(c.files)-1] = nil // ran
			out["item"] = f.item
			r.res.Files = append(r.res.Files, out)
			names, trigger = stringsOf(out["plan"]), out
			changed, _ = out["changed"].(bool)
			if err != nil {
				failed = err
			}
		} else if st != nil {
			names = st.Names()
			changed = changed || st.Changes()
		}
		fileTriggers = append(fileTriggers, trigger)
		fileEntries = append(fileEntries, prefixed(step, names)...)
		if changed {
			unitFiles = true
			if running[f.unit] {
				a.files[f.unit] = reaction.Stronger(a.files[f.unit], fileReaction(f))
			}
		}
		if failed != nil {
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
	pkgTrigger := forecast(c.pkg, true)
	if r.req.CheckMode {
		pkgTrigger, _ = r.res.Packages.(map[string]any)
		if pkgTrigger == nil {
			pkgTrigger = forecast(nil, true)
		}
	}
	for _, proc := range r.order {
		restart, reload := r.triggers(proc, pkgTrigger, files, fileTriggers)
		args := processArgs(proc)
		args["restart_on"] = restart
		if len(reload) > 0 {
			args["reload_on"] = reload
		}
		step := "process " + unitOf(proc.Unit)
		names, err := r.forecastProcess(ctx, step, args)
		r.res.Plan = append(r.res.Plan, prefixed(step, names)...)
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

// forecastProcess is a process's plan as the composed plan lists it. In check mode it is
// the process's step, run in check mode (its result is the step's; a failure stops the
// service there). In a real run the plan is only read, and given back with the unit's
// lock: the plan carried out is made at the process's turn (composed).
func (r *run) forecastProcess(ctx context.Context, step string, args map[string]any) ([]string, error) {
	if r.req.CheckMode {
		out, err := r.call(ctx, r.d.Processes, step, args)
		r.res.Processes = append(r.res.Processes, out)
		return stringsOf(out["plan"]), err
	}
	st, _ := r.plan(ctx, r.d.Processes, args)
	if st == nil {
		return nil, nil // its arguments are refused at its turn, as the step's failure
	}
	defer st.Release()
	return st.Names(), nil
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
// files removed, the packages removed, and the manager reload after them. The packages'
// plan is held first, so the service takes the transaction lock before any unit's lock,
// as in a present run. On an error nothing is held.
func (r *run) composeAbsent(ctx context.Context, dependents []string) (c *composed, err error) {
	c = &composed{}
	// Released through held, not c: every error return sets the result c to nil first.
	held := c
	defer func() {
		if err != nil {
			held.release()
		}
	}()
	if err := r.planPackages(ctx, c, true); err != nil {
		return nil, err
	}
	removes := false
	for _, proc := range r.order {
		step := "process " + unitOf(proc.Unit)
		names, err := r.forecastProcess(ctx, step, absentProcessArgs(proc))
		r.res.Plan = append(r.res.Plan, prefixed(step, names)...)
		if err != nil {
			return nil, err
		}
	}
	for _, f := range r.fileArgs(true) {
		step := "file " + fileLabel(f)
		st, out := r.plan(ctx, r.d.Files, f.args)
		c.files, c.fileOuts = append(c.files, st), append(c.fileOuts, out)
		names, changed := []string(nil), false
		if r.req.CheckMode {
			out, err = r.apply(ctx, r.d.Files, st, out, step, f.args)
			c.files[len(c.files)-1] = nil // ran
			out["item"] = f.item
			r.res.Files = append(r.res.Files, out)
			names = stringsOf(out["plan"])
			changed, _ = out["changed"].(bool)
		} else if st != nil {
			names, changed = st.Names(), st.Changes()
		}
		r.res.Plan = append(r.res.Plan, prefixed(step, names)...)
		removes = removes || changed
		if err != nil {
			return nil, err
		}
	}
	if c.pkg != nil {
		r.res.Plan = append(r.res.Plan, prefixed("packages", c.pkg.Names())...)
		removes = removes || c.pkg.Changes()
		if r.req.CheckMode {
			err := r.removePackages(ctx, c.pkg, dependents, &removes)
			c.pkg = nil // ran
			if err != nil {
				return nil, err
			}
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
