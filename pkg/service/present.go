package service

import (
	"context"
	"maps"

	"github.com/richt/services/pkg/contract"
	"github.com/richt/services/pkg/reaction"
)

func (r *run) present(ctx context.Context) (err error) {
	// The files are written without a manager reload of their own, and the packages step
	// may leave one needed: the first process step reloads. Without a process nothing
	// would, and the unit files on disk would not be the ones systemd runs
	// (NeedDaemonReload=yes, the task ok): then the service reloads, once, after its steps,
	// also when a later one failed; and when an earlier run left one due.
	changedFiles := false
	defer func() {
		if r.req.CheckMode || len(r.order) > 0 {
			return
		}
		needed := changedFiles
		if r.packagesChange().DaemonReload == contract.ReloadNeeded {
			needed = true
		}
		if needed || r.syncDue() {
			err = r.reloadManager(ctx, err, "writing the unit files of")
		}
	}()
	// The plan reads only: check mode reports it (with the processes' plans forecast), a
	// real run records what the processes owe and carries it out.
	plan, err := r.composePresent(ctx)
	if err != nil {
		return err
	}
	defer plan.release()
	if r.req.CheckMode {
		if plan.reload {
			r.res.ManagerReload = string(contract.ReloadPlanned)
		}
		return nil
	}
	ahead := plan.ahead
	// The rollback's record, the last thing before the first change.
	if err := r.beginRollback(ctx); err != nil {
		return err
	}
	// Before the packages step: what a package change will owe.
	if err := r.record(ahead, ahead.pkg, false); err != nil {
		return err
	}
	var pkgRes *stepResult
	// What the packages step's outcome owes per unit (wiring: by name or by default).
	pkgDue := map[string]reaction.Kind{}
	if plan.pkg != nil {
		out, err := r.apply(ctx, r.d.Packages, plan.pkg, "packages", *r.pkgs)
		pkgRes = &out
		r.res.Packages = pkgRes
		pkgDue = dueFrom(r.order, r.parts, packageOutcomes(r.parts.Packages, pkgRes))
		if pkgRes.changed() {
			// A change the prediction missed (the database moved under it) owes the same
			// restart: recorded before the next step, also when this one then failed.
			// Stamped when the package's files were in place, not now: a scriptlet's
			// restart inside the transaction (an EL %postun) served it, and a stamp taken
			// after that restart would have the process restart a second time.
			placed := pkgRes.change().FilesPlaced
			if rerr := r.recordAt(ahead, missed(ahead.pkg, pkgDue), true, placed); rerr != nil {
				return rerr
			}
		}
		// Predicted, but nothing changed (DNF refused, the step failed early), or not the
		// package a process names: no reaction is owed on its account; the next steps'
		// own are recorded next.
		r.withdraw(ahead, ahead.pkg, func(u string) reaction.Kind { return reaction.Stronger(pkgDue[u]) }) // None when none
		if err != nil {
			return err
		}
		// The units the packages step installed or changed are on disk now: a process
		// that can be reloaded needs one that can, before any config, file or process.
		if err := r.checkCapability(ctx, nil, true); err != nil {
			return err
		}
	}
	// The configs that waited for the packages step are planned now, and the tree
	// validators judge the whole new tree before any config is written.
	for i, cp := range plan.configs {
		if cp.deferred {
			plan.configs[i] = r.planConfig(ctx, cp.cfg)
		}
	}
	if err := r.validateTree(ctx, plan.configs); err != nil {
		return err
	}
	// Before the configs, stamped now: a restart the package's scriptlet did a moment ago
	// does not serve what the configs about to be written owe. Each config's write stamps
	// its record again right before its content moves (BeforeReplace).
	if err := r.record(ahead, ahead.configs, false); err != nil {
		return err
	}
	cfgRecorded := maps.Clone(ahead.configs)
	var failed error
	for _, cp := range plan.configs {
		due := dueFrom(r.order, r.parts, outcomes{configRef(cp.cfg.Name): {Changed: true}})
		hooked := false
		out, err := r.applyConfig(ctx, cp, func() error {
			hooked = true
			return r.recordWritten(ahead, cfgRecorded, due)
		})
		r.res.Configs = append(r.res.Configs, out)
		if out.changed() {
			if out.change().UnitFilesChanged {
				changedFiles = true
			}
			// A change of owner or mode moves no content: recorded after it.
			if !hooked {
				if rerr := r.recordWritten(ahead, cfgRecorded, due); rerr != nil {
					return rerr
				}
			}
		}
		if err != nil {
			failed = err
			break
		}
	}
	// A config that was not written (its validator refused it, its rename failed after
	// its hook recorded what the plan missed, or a config before it failed) owes nothing:
	// what was recorded for it, ahead or by its hook (cfgRecorded), is withdrawn, down to
	// what the packages and the written configs owe; and nothing after it is done.
	cfgDue := dueFrom(r.order, r.parts, configOutcomes(r.configs, r.res.Configs))
	r.withdraw(ahead, cfgRecorded, func(u string) reaction.Kind { return reaction.Stronger(pkgDue[u], cfgDue[u]) })
	if failed != nil {
		return failed
	}
	// Before the files step, stamped now, for the same reason.
	if err := r.record(ahead, ahead.files, false); err != nil {
		return err
	}
	// What the files step has recorded per unit: ahead, then for changes it missed.
	filesRecorded := maps.Clone(ahead.files)
	for i, f := range r.files {
		out, err := r.apply(ctx, r.d.Files, plan.files[i], "file "+fileLabel(f), f.call)
		plan.files[i] = nil // ran
		r.res.Files = append(r.res.Files, withItem(out, f))
		if out.changed() {
			changedFiles = true
			due := dueFrom(r.order, r.parts, outcomes{fileRef(f): {Changed: true}})
			if rerr := r.recordWritten(ahead, filesRecorded, due); rerr != nil {
				return rerr
			}
		}
		if err != nil {
			failed = err
			break
		}
	}
	// A file that was not written (its write failed and left the old file in place, or a
	// failed step before it stopped the run) owes nothing: what was recorded ahead for it
	// is withdrawn, also when the run fails, down to what the packages, the configs and
	// the written files owe.
	fileDue := dueFrom(r.order, r.parts, fileOutcomes(r.files, r.res.Files))
	r.withdraw(ahead, ahead.files, func(u string) reaction.Kind {
		return reaction.Stronger(pkgDue[u], cfgDue[u], fileDue[u])
	})
	if failed != nil {
		return failed
	}
	// Each process is planned at its turn, under its unit's lock, from the triggers the
	// steps before it report, and that plan is carried out at once (package doc).
	return r.processes(ctx, pkgRes)
}
