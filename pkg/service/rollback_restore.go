package service

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"time"

	"github.com/richt/services/pkg/ansible"
	"github.com/richt/services/pkg/configfile"
	"github.com/richt/services/pkg/contract"
	"github.com/richt/services/pkg/durable"
	"github.com/richt/services/pkg/lifecycle"
	"github.com/richt/services/pkg/reaction"
	"github.com/richt/services/pkg/rollback"
	"github.com/richt/services/pkg/unitfile"
	"github.com/richt/services/pkg/wiring"
)

// rollBack puts the record's state back after the run failed with cause: the packages in
// one DNF transaction, then the files, then each process in order with the reactions the
// restored parts bring (the same wiring as the change's), each proved again by its probe.
// What the restored parts owe each process is recorded durably before the first of them
// moves, and stamped again before the files move (as a change's reactions are), so a run
// killed in the middle leaves it to the next run, whatever arguments that one has. The
// task fails either way: saying whether the previous state is back, and with cause.
func (r *run) rollBack(ctx context.Context, cause error) error {
	rb := r.d.Rollback
	rec := &r.rb.rec
	done := &RolledBack{Packages: []RollbackPackage{}, Files: []RollbackFile{}, Processes: []stepResult{}}
	r.res.RolledBack = done
	defer func() {
		if len(done.Packages) > 0 || len(done.Files) > 0 {
			r.res.Changed = true
		}
	}()
	fail := func(part string, err error) error {
		done.Failed = part
		return fmt.Errorf("the change failed, and the rollback failed at %s: %v; the previous state is NOT back: the record %s is kept, and the next run with rollback moves forward again and puts it back if that fails. The change's failure: %w",
			part, err, rb.Store.RecordPath(r.p.Name), cause)
	}
	if err := rb.Store.SetPhase(rec, rollback.PhaseRestoring); err != nil {
		return fail("record", err)
	}
	r.res.Plan = append(r.res.Plan, "rollback: phase restoring")
	// Only what is no longer as recorded moves back, and only that owes a reaction: a
	// failure before any part changed (a pin no repository has, a config its validator
	// refused) puts nothing back and touches no process.
	files, err := r.filesMoved(rec)
	if err != nil {
		return fail("record", err)
	}
	var moving []rollback.Package
	record := func(pkgs []rollback.Package) error {
		moving = pkgs
		if err := r.recordRollback(dueFrom(r.order, r.parts, r.restoring(pkgs, files))); err != nil {
			return fmt.Errorf("%w: %w", errRecord, err)
		}
		return nil
	}
	pkgSet, err := r.restorePackages(ctx, rec, done, record)
	if err != nil {
		if errors.Is(err, errRecord) {
			return fail("record", err)
		}
		return fail("packages", err)
	}
	if len(moving) > 0 {
		// The transaction may have moved a recorded file too (a package's own config).
		if files, err = r.filesMoved(rec); err != nil {
			return fail("record", err)
		}
	}
	if len(moving) == 0 && len(files) == 0 {
		return r.nothingMoved(ctx, cause)
	}
	out := packageOutcomesOf(r.parts.Packages, pkgSet)
	unitFiles := false
	for _, f := range files {
		if f.UnitFile {
			unitFiles = true
		}
	}
	if len(files) > 0 {
		// Recorded (or stamped again) before the files move: a restart a package
		// scriptlet did in the transaction ran with the files not yet back.
		if err := record(moving); err != nil {
			return fail("record", err)
		}
	}
	if unitFiles && r.d.MarkSync != nil {
		// Recorded before a unit file moves back: a kill before the reload leaves it due.
		if err := r.d.MarkSync(ctx, "rollback of service "+r.p.Name); err != nil {
			return fail("record", err)
		}
	}
	now := time.Now()
	for _, f := range files {
		changed, err := r.restoreFile(ctx, rec, f)
		if err != nil {
			return fail("file "+f.Path, err)
		}
		if !changed {
			continue
		}
		restore := "content"
		if !f.Existed {
			restore = "removal"
		}
		done.Files = append(done.Files, RollbackFile{Path: f.Path, Restore: restore})
		r.res.Plan = append(r.res.Plan, "rollback: restore "+f.Path)
		o := wiring.Outcome{Changed: true}
		if f.UnitFile {
			o.UnitFilesChanged = true
			o.DaemonReload = contract.ReloadNeeded
		}
		o.Stamp(now)
		for _, ref := range r.refsOf(f.Path) {
			out[ref] = o
		}
	}
	if len(r.order) == 0 {
		if pkgSet.UnitFilesChanged || len(done.Files) > 0 && unitFiles || r.syncDue() {
			if err := r.reloadManager(ctx, nil, "putting back the unit files of"); err != nil {
				return fail("daemon-reload", err)
			}
		}
	}
	removed := done.removedSomething(rec)
	err = r.eachProcess(ctx, out, func(ctx context.Context, proc Process, args ansible.Args) (stepResult, error) {
		unit := unitOf(proc.Unit)
		step := "process " + unit
		if removed && r.unitGone(unit) {
			// A first install rolled back: the unit went with its package or its unit
			// file, as it was before the change.
			res := skippedProcess(unit)
			// Nothing is owed to a unit that is not there: the reaction recorded for it
			// ahead of the restore goes with it.
			if r.d.Pending != nil {
				if err := r.locked(unit, func() error { return r.d.Pending.ClearPending(unit) }); err != nil {
					r.req.Warn("rollback: %s: clear its pending reaction: %v", unit, err)
				}
			}
			done.Processes = append(done.Processes, res)
			return res, nil
		}
		// The failed change's starts count against the unit's StartLimitBurst (5 in 10 s
		// by default): a change that failed, run again at once, leaves the rollback's
		// start refused with start-limit-hit. The counter is systemd's guard against a
		// unit that keeps failing; the rollback's start is of the last good state. Each
		// try clears it first, on the step's own systemd connection, under its unit's
		// lock (lifecycle.Request.ResetFailed).
		args, err := resettingFailed(args)
		if err != nil {
			return stepResult{}, fail(step, err)
		}
		res, err := r.rollbackProcess(ctx, step, args)
		if err != nil {
			// Once more: the rollback is what stands between the host and a service that
			// stays down, and a step can fail for a moment's reason (the manager
			// re-executing under it). A last
			// good state that really cannot start fails twice and is reported so.
			r.req.Warn("rollback: %s failed, tried once more: %v", step, err)
			r.res.Plan = append(r.res.Plan, prefixed("rollback: "+step, res.plan())...)
			res, err = r.rollbackProcess(ctx, step, args)
		}
		done.Processes = append(done.Processes, res)
		r.res.Plan = append(r.res.Plan, prefixed("rollback: "+step, res.plan())...)
		if res.changed() {
			r.res.Changed = true
		}
		if err != nil {
			return res, fail(step, err)
		}
		return res, nil
	})
	if err != nil {
		return err
	}
	done.Healthy = true
	if err := r.forget(ctx); err != nil {
		r.req.Warn("rollback: the previous state is back, but its record could not be removed: %v", err)
	}
	return fmt.Errorf("the change failed and was rolled back, the previous state is back and healthy; rolled back: %s. The change's failure: %w", done.summary(), cause)
}

// restoring are the outcomes a rollback brings when pkgs and files move back: what it
// records as owed before the first of them moves.
func (r *run) restoring(pkgs []rollback.Package, files []rollback.File) outcomes {
	out := outcomes{}
	for _, p := range pkgs {
		out[wiring.Ref{Kind: wiring.Package, Name: p.Name}] = wiring.Outcome{Changed: true, Change: contract.Change{PackageChanged: true}}
	}
	for _, f := range files {
		for _, ref := range r.refsOf(f.Path) {
			out[ref] = wiring.Outcome{Changed: true}
		}
	}
	return out
}

// recordRollback records, durably and stamped now, the reactions a rollback owes each
// process (pending records, merged with what is there).
func (r *run) recordRollback(owed map[string]reaction.Kind) error {
	if r.d.Pending == nil {
		return nil
	}
	a := &ahead{earlier: map[string]*durable.Pending{}, wrote: map[string]bool{}, written: map[string]durable.Pending{}}
	for _, unit := range slices.Sorted(maps.Keys(owed)) {
		if owed[unit] == reaction.None {
			continue
		}
		if _, err := r.recordOne(a, unit, owed[unit], nil); err != nil {
			return err
		}
	}
	return nil
}

// removedSomething: the rollback removed a package or a unit file (a first install or a
// created unit undone), so a process's unit may be gone as it was before the change.
func (d *RolledBack) removedSomething(rec *rollback.Record) bool {
	for _, p := range d.Packages {
		if len(p.Restore) == 0 {
			return true
		}
	}
	for _, f := range d.Files {
		if f.Restore == "removal" && slices.ContainsFunc(rec.Files, func(g rollback.File) bool { return g.Path == f.Path && g.UnitFile }) {
			return true
		}
	}
	return false
}

// unitGone: no unit directory on the host holds the unit's file.
func (r *run) unitGone(unit string) bool {
	root := ""
	if r.d.Units != nil {
		root = r.d.Units.Root
	}
	frag, _ := unitfile.Files(root, unit)
	return frag == ""
}

// restoreFile puts one recorded file back. A config goes through configfile's own rules
// (its directory opened without following a link, trusted only as a config's may be): a
// daemon's user who owns a directory above its config must not be able to point root's
// restore elsewhere. A unit file or drop-in lives in root's unit directories.
func (r *run) restoreFile(ctx context.Context, rec *rollback.Record, f rollback.File) (bool, error) {
	if f.UnitFile || r.d.Configs == nil {
		return r.d.Rollback.Store.RestoreFile(rec, f)
	}
	var saved []byte
	if f.Existed {
		var err error
		if saved, err = r.d.Rollback.Store.Saved(rec, f); err != nil {
			return false, err
		}
	}
	plan, err := r.restorePlan(ctx, f, saved)
	if err != nil {
		return false, err
	}
	res, err := r.d.Configs.Apply(ctx, plan, nil)
	if err != nil {
		return false, err
	}
	return res != nil && res.Changed, nil
}

// restorePlan is the config plan that puts f back with its saved content (none for a file
// that did not exist): checked and planned under today's rules, reading only. The same
// plan is made before the change (restorable), so a state that could not be put back
// refuses the run before it changes anything rather than failing its rollback after.
func (r *run) restorePlan(ctx context.Context, f rollback.File, saved []byte) (configfile.Plan, error) {
	cfg := configfile.Config{Name: f.Path, Path: f.Path,
		Sensitive: f.Sensitive, Absent: !f.Existed, Mode: f.Mode, Owner: strconv.Itoa(f.UID), Group: strconv.Itoa(f.GID)}
	if f.Existed {
		cfg.Content = string(saved)
	} else {
		cfg.Mode = 0o644 // not used for a removal, but checked
	}
	cfg, err := cfg.Check()
	if err == nil {
		var plan configfile.Plan
		if plan, err = r.d.Configs.Plan(ctx, cfg); err == nil {
			return plan, nil
		}
	}
	var pe *configfile.ParamError
	if errors.As(err, &pe) {
		// Its parameters are no entry of the task's configs: the state saved names them.
		return configfile.Plan{}, fmt.Errorf("the state saved for %s: %w", f.Path, err)
	}
	return configfile.Plan{}, err
}

// rollbackProcess runs one process's step of a rollback: as the change's own steps run,
// but its result is the rollback's (it does not make the task changed twice, and a
// failure is the rollback's).
func (r *run) rollbackProcess(ctx context.Context, step string, a ansible.Args) (stepResult, error) {
	st := r.plan(ctx, r.d.Processes, a)
	return r.rollbackResult(ansible.CallArgs(ctx, a, false, r.req.Diff, func(ctx context.Context, req *ansible.Request) (any, error) {
		return st.Run(ctx, req)
	}), step)
}

// resettingFailed is a process's call that clears the unit's failed state and start rate
// counter before its plan (lifecycle.Request.ResetFailed): a rollback's.
func resettingFailed(call ansible.Args) (ansible.Args, error) {
	task, err := ansible.ParsedArgs[lifecycle.Task](call)
	if err != nil {
		return call, err
	}
	task.ResetFailed = true
	return call.With(task, nil), nil
}

// refsOf are the service's parts a file is: the config at that path, or the unit file or
// drop-in.
func (r *run) refsOf(path string) []wiring.Ref {
	var out []wiring.Ref
	for _, c := range r.configs {
		if c.Path == path {
			out = append(out, configRef(c.Name))
		}
	}
	return append(out, r.rb.fileRefs[path]...)
}

// errRecord marks a failure to record what the rollback owes (the rollback's "record"
// part, not its packages').
var errRecord = errors.New("record the reactions the rollback owes")

// filesMoved are the record's files that are no longer as recorded: the ones a rollback
// puts back.
func (r *run) filesMoved(rec *rollback.Record) ([]rollback.File, error) {
	var out []rollback.File
	for _, f := range rec.Files {
		moved, err := r.d.Rollback.Store.Moved(rec, f)
		if err != nil {
			return nil, err
		}
		if moved {
			out = append(out, f)
		}
	}
	return out, nil
}

// nothingMoved ends a rollback that found every recorded part as recorded: the change
// failed before it moved anything (or an earlier run's rollback put it all back). Nothing
// is put back, no process is touched, the record goes, and the task is unchanged unless
// a step of the run changed something after all.
func (r *run) nothingMoved(ctx context.Context, cause error) error {
	r.res.RolledBack = nil
	if err := r.forget(ctx); err != nil {
		r.req.Warn("rollback: nothing had changed, but the record could not be removed: %v", err)
	}
	return nothingChanged(cause)
}

// nothingChanged is the failure of a run with rollback that failed before any part of the
// service moved.
func nothingChanged(cause error) error {
	return fmt.Errorf("the change failed before any part of the service had changed: nothing had changed, so nothing was rolled back and no process was restarted or reloaded. The change's failure: %w", cause)
}
