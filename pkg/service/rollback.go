package service

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/richt/services/pkg/lock"
	"github.com/richt/services/pkg/rollback"
	"github.com/richt/services/pkg/rpmexact"
	"github.com/richt/services/pkg/runner"
	"github.com/richt/services/pkg/wiring"
)

// Keeper keeps the builds a rollback installs again on the host (rollback.Keeper).
type Keeper interface {
	// Ensure keeps each build (from the enabled repositories when not kept yet; in check
	// mode it only asks) and returns those neither kept nor available.
	Ensure(ctx context.Context, nevras []string, check bool) (missing []string, err error)
	// Path is where a build is kept.
	Path(nevra string) string
	// Prune removes every kept build but keep.
	Prune(keep []string) error
	// GPGCheck reports whether the build was kept from a repository with gpgcheck on
	// (its signature checked then, and to be checked again when it is installed).
	GPGCheck(nevra string) bool
}

// Rollbacks are what `rollback: true` needs on the target.
type Rollbacks struct {
	Store rollback.Store
	// Keeper keeps one service's builds (its own directory: a service's end never
	// removes what another keeps).
	Keeper func(service string) Keeper
	// Txn runs the restoring DNF transaction as rpm_exact runs its own (its lock, its
	// supervisor: a killed module does not kill DNF).
	Txn rpmexact.Transactor
	// Runner reads the installed builds (one rpm query).
	Runner runner.Runner
	// ResetFailed clears a unit's failed state and its start rate counter before a
	// rollback brings it back (nil: not cleared).
	ResetFailed func(ctx context.Context, unit string) error
}

// RollbackPlan is what a rollback would put back (`rollback` in the result): the
// packages with the builds they had (none: removed), the files (their content, or their
// removal when they did not exist).
type RollbackPlan struct {
	Packages []RollbackPackage `json:"packages"`
	Files    []RollbackFile    `json:"files"`
	// Record is the record on the target that holds it, while the run is not over.
	Record string `json:"record,omitempty"`
}

// RollbackPackage is one package of a rollback.
type RollbackPackage struct {
	Name string `json:"name"`
	// Restore are the builds put back; empty: the package is removed.
	Restore []string `json:"restore"`
	// From are the builds it had before the rollback (rolled_back only).
	From []string `json:"from,omitempty"`
}

// RollbackFile is one file of a rollback.
type RollbackFile struct {
	Path string `json:"path"`
	// Restore is "content" (the content, mode and owner it had) or "removal".
	Restore string `json:"restore"`
}

// RolledBack is what a rollback put back (`rolled_back`).
type RolledBack struct {
	Packages []RollbackPackage `json:"packages"`
	Files    []RollbackFile    `json:"files"`
	// Processes are the processes' results in the rollback, each proved again.
	Processes []map[string]any `json:"processes"`
	// Healthy: every process is back in its declared state and its probe answered.
	Healthy bool `json:"healthy"`
	// Failed names the part of the rollback that failed ("packages", "file PATH",
	// "process UNIT"), when one did.
	Failed string `json:"failed,omitempty"`
}

// rollbackRun is a rollback's record in hand during a run.
type rollbackRun struct {
	rec      rollback.Record
	contents map[string][]byte
	// begun: the record is on the target (the run's first change may follow).
	begun bool
	// fileRefs are the unit files' and drop-ins' parts by path, for the wiring of what a
	// rollback puts back.
	fileRefs map[string][]wiring.Ref
}

// Befores implements Step.
func (s packagesStep) Befores() ([]rollback.Package, bool) {
	var out []rollback.Package
	for _, e := range s.held.Plan().Entries {
		if e.Operation != rpmexact.OpNone {
			out = append(out, rollback.Package{Name: e.Name, Before: slices.Clone(e.Before)})
		}
	}
	return out, true
}

// Path implements Step.
func (s *filesStep) Path() string { return s.plan.Want.Path }

// presentLocked is present and its rollback's end (endRollback); for a run with rollback,
// under the service's own lock: two
// runs of one service at once would each write, merge and remove the one record, and one
// could roll back past the other's change. Taken before any other lock (the packages
// step's, a unit's), so it adds no wait cycle.
func (r *run) presentLocked(ctx context.Context) error {
	release, err := r.lockService(ctx, r.p.Rollback)
	if err != nil {
		return err
	}
	defer release()
	return r.endRollback(ctx, r.present(ctx))
}

// absentLocked is absent; a removal that ends well removes the service's record and the
// builds it keeps (a later install must not roll back to the removed service's state),
// under the service's lock: also without a record, since a run with rollback that is
// keeping builds at that moment has no record yet, and a prune beside it would remove
// the files it is writing.
func (r *run) absentLocked(ctx context.Context) error {
	release, err := r.lockService(ctx, true)
	if err != nil {
		return err
	}
	defer release()
	err = r.absent(ctx)
	if err == nil && !r.req.CheckMode && r.d.Rollback != nil {
		if derr := r.d.Rollback.Store.Done(r.p.Name); derr != nil {
			r.req.Warn("rollback: the service is removed, but its rollback record could not be: %v", derr)
		}
		if perr := r.d.Rollback.Keeper(r.p.Name).Prune(nil); perr != nil {
			r.req.Warn("rollback: the service is removed, but the builds kept for its rollback could not be: %v", perr)
		}
	}
	return err
}

// lockService takes the service's own lock for a real run with rollback, or for any real
// run of a service that has a record (which that run may remove); a no-op otherwise.
func (r *run) lockService(ctx context.Context, rollingBack bool) (func(), error) {
	if r.req.CheckMode || r.d.Lock == nil || r.d.Rollback == nil || !(rollingBack || r.d.Rollback.Store.Exists(r.p.Name)) {
		return func() {}, nil
	}
	release, err := r.d.Lock(ctx, lock.Service(rollback.Key(r.p.Name)))
	if err != nil {
		r.res.FailedStep = "rollback"
		return nil, fmt.Errorf("rollback: wait for the service's other run: %w", err)
	}
	return release, nil
}

// prepareRollback makes the rollback's record from the composed plan, before any change:
// the packages the plan moves with the builds they have, the configs, unit files and
// drop-ins it writes as they are. Every build a rollback would install must be kept on
// the host or available from the enabled repositories (a real run keeps it now, in
// /var/cache/richt/rpms); one that is neither refuses the run here, before any change, in
// check mode too. A record an earlier run left (killed, or its rollback failed) keeps its
// older entries (rollback.Merge). Without a change and without such a record there is
// nothing to put back and no record.
func (r *run) prepareRollback(ctx context.Context, c *composed) error {
	if !r.p.Rollback {
		return nil
	}
	rb := r.d.Rollback
	if rb == nil {
		r.res.FailedStep = "rollback"
		return errors.New("rollback: this build of the module cannot roll back (no rollback store)")
	}
	earlier, err := rb.Store.Load(r.p.Name)
	if err != nil {
		r.res.FailedStep = "rollback"
		return fmt.Errorf("rollback: %w", err)
	}
	rec := rollback.Record{Service: r.p.Name, Phase: rollback.PhaseChanging}
	befores, known := []rollback.Package(nil), false
	if c.pkg != nil && !planFailed(c.pkg) {
		befores, known = c.pkg.Befores()
	}
	if known {
		rec.Packages = befores
	} else if c.pkg != nil && !planFailed(c.pkg) && c.pkg.Changes() {
		r.res.FailedStep = "rollback"
		return errors.New("rollback: internal error: the packages plan does not say which builds it replaces")
	}
	contents := map[string][]byte{}
	refs := map[string][]wiring.Ref{}
	keep := func(f rollback.File, data []byte, sensitive, unitFile bool) {
		f.Sensitive, f.UnitFile = sensitive, unitFile
		rec.Files = append(rec.Files, f)
		contents[f.Path] = data
	}
	observe := func(path string, sensitive, unitFile bool) error {
		f, data, err := rollback.Observe(path)
		if err != nil {
			return err
		}
		keep(f, data, sensitive, unitFile)
		return nil
	}
	for _, cp := range c.configs {
		if !cp.changes() {
			continue
		}
		if f, data, ok := beforeAsPlanned(cp); ok {
			// The plan's own read (no link followed, its directories checked): the
			// content saved is the one its write replaces, which checks that the file is
			// still the one it read.
			keep(f, data, cp.cfg.Sensitive, cp.unitDir())
			continue
		}
		if err := observe(cp.cfg.Path, cp.cfg.Sensitive, cp.unitDir()); err != nil {
			r.res.FailedStep = "rollback"
			return fmt.Errorf("rollback: %w", err)
		}
	}
	for i, f := range r.files {
		st := c.files[i]
		if st.Path() == "" {
			if c.files[i].Changes() {
				r.res.FailedStep = "rollback"
				return fmt.Errorf("rollback: internal error: the plan of %s does not say its path", fileLabel(f))
			}
			continue
		}
		// Every declared file's part, changed now or not: a file an earlier, killed run
		// wrote is put back with its reaction too.
		refs[st.Path()] = append(refs[st.Path()], fileRef(f))
		if planFailed(st) || !st.Changes() {
			continue
		}
		if err := observe(st.Path(), f.sensitive, true); err != nil {
			r.res.FailedStep = "rollback"
			return fmt.Errorf("rollback: %w", err)
		}
	}
	if earlier == nil && len(rec.Packages) == 0 && len(rec.Files) == 0 {
		if !r.req.CheckMode && rb.Store.Exists(r.p.Name) {
			// Saved contents a run killed while it began its record left, no record
			// naming them: root-only, but not kept longer than needed.
			if err := rb.Store.Done(r.p.Name); err != nil {
				r.req.Warn("rollback: remove saved contents no record names: %v", err)
			}
		}
		return nil
	}
	rec = rollback.Merge(earlier, rec)
	rec.Files = r.declaredOnly(rec.Files, c, refs)
	if err := r.restorable(ctx, rec, contents); err != nil {
		r.res.FailedStep = "rollback"
		return err
	}
	// This run moves forward, whatever phase an earlier run was killed in.
	rec.Phase = rollback.PhaseChanging
	var old []string
	for _, p := range rec.Packages {
		old = append(old, p.Before...)
	}
	// The builds a rollback installs. The builds this change installs are kept when it
	// ends well (forget), for the next change's rollback: not here, where a change that
	// fails would pay for fetching the build it then removes.
	if len(old) > 0 {
		missing, err := rb.Keeper(r.p.Name).Ensure(ctx, old, r.req.CheckMode)
		if err != nil {
			r.res.FailedStep = "rollback"
			return fmt.Errorf("rollback: keep the builds a rollback would install: %w", err)
		}
		if refused := missing; len(refused) > 0 {
			r.res.FailedStep = "rollback"
			return fmt.Errorf("rollback: the build %s, which a rollback would install, cannot be installed again: no enabled repository has it and it is not kept in %s; a failed change could not be rolled back, so nothing was changed (make the build available, or run without rollback)",
				strings.Join(refused, ", "), filepath.Dir(rb.Keeper(r.p.Name).Path(refused[0])))
		}
		for _, n := range old {
			r.res.Plan = append(r.res.Plan, "rollback: keep "+n)
		}
	}
	plan := &RollbackPlan{Packages: []RollbackPackage{}, Files: []RollbackFile{}}
	for _, p := range rec.Packages {
		plan.Packages = append(plan.Packages, RollbackPackage{Name: p.Name, Restore: nonNilStrings(p.Before)})
	}
	for _, f := range rec.Files {
		restore := "content"
		if !f.Existed {
			restore = "removal"
		}
		plan.Files = append(plan.Files, RollbackFile{Path: f.Path, Restore: restore})
		r.res.Plan = append(r.res.Plan, "rollback: save "+f.Path)
	}
	r.res.Plan = append(r.res.Plan, "rollback: record")
	if !r.req.CheckMode {
		plan.Record = rb.Store.RecordPath(r.p.Name)
	}
	r.res.Rollback = plan
	r.rb = &rollbackRun{rec: rec, contents: contents, fileRefs: refs}
	return nil
}

// declaredOnly drops the files of an earlier run's record that the task no longer
// declares (a config or file since taken out of the service): a rollback acts only on the
// service's files, and one no longer declared may be someone else's now. Each is a
// warning: its earlier state is not put back.
func (r *run) declaredOnly(files []rollback.File, c *composed, refs map[string][]wiring.Ref) []rollback.File {
	declared := func(path string) bool {
		if _, ok := refs[path]; ok {
			return true
		}
		return slices.ContainsFunc(c.configs, func(cp configPlan) bool { return cp.cfg.Path == path })
	}
	var out []rollback.File
	for _, f := range files {
		if declared(f.Path) {
			out = append(out, f)
			continue
		}
		r.req.Warn("rollback: %s, which an earlier unfinished run changed, is no longer one of the service's files: a rollback leaves it as it is", f.Path)
	}
	return out
}

// beforeAsPlanned is a config's state before the change as its plan read it, when the
// plan was made (not deferred to the packages step, not failed).
func beforeAsPlanned(cp configPlan) (rollback.File, []byte, bool) {
	if cp.err != nil || cp.deferred {
		return rollback.File{}, nil, false
	}
	pf := cp.plan.File
	f := rollback.File{Path: cp.cfg.Path, Existed: pf.Exists}
	if !pf.Exists {
		return f, nil, true
	}
	f.Mode, f.UID, f.GID = pf.Mode, pf.UID, pf.GID
	return f, slices.Clone(pf.Content), true
}

// restorable plans, reading only, how a rollback would put back each config the record
// holds that existed (restorePlan): a state today's rules refuse to write (a mode group or
// others could write through, a set-id bit, a directory no longer trusted) refuses the run
// here, before any change, as a build that could not be installed again does.
func (r *run) restorable(ctx context.Context, rec rollback.Record, contents map[string][]byte) error {
	if r.d.Configs == nil {
		return nil
	}
	for _, f := range rec.Files {
		if f.UnitFile || !f.Existed {
			continue
		}
		saved, ok := contents[f.Path]
		if f.Saved != "" {
			// An earlier run's saved content.
			var err error
			if saved, err = r.d.Rollback.Store.Saved(&rec, f); err != nil {
				return fmt.Errorf("rollback: %w", err)
			}
		} else if !ok {
			continue
		}
		if _, err := r.restorePlan(ctx, f, saved); err != nil {
			return fmt.Errorf("rollback: %s could not be put back as it is now (%w); a failed change could not be rolled back, so nothing was changed (make the file one a config may be, or run without rollback)", f.Path, err)
		}
	}
	return nil
}

func nonNilStrings(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// beginRollback writes the record on the target: the last thing before the first change.
func (r *run) beginRollback() error {
	if r.rb == nil || r.req.CheckMode {
		return nil
	}
	if err := r.d.Rollback.Store.Begin(r.rb.rec, r.rb.contents); err != nil {
		r.res.FailedStep = "rollback"
		return fmt.Errorf("rollback: %w", err)
	}
	r.rb.begun = true
	return nil
}

// endRollback ends a present run with rollback: a run that ended well removes the record
// and keeps only the builds now installed; a run that failed after the record was written
// puts the record's state back (rollBack). cause is the run's error.
func (r *run) endRollback(ctx context.Context, cause error) error {
	if !r.p.Rollback && cause == nil && !r.req.CheckMode && r.d.Rollback != nil {
		// A run without rollback that ended well: the state it leaves is the one asked
		// for, and a record an earlier run with rollback left would take a later
		// rollback back past it.
		if r.d.Rollback.Store.Exists(r.p.Name) {
			if err := r.d.Rollback.Store.Done(r.p.Name); err != nil {
				r.req.Warn("rollback: an earlier run's record could not be removed: %v", err)
			}
		}
	}
	if r.req.CheckMode {
		return cause
	}
	if r.rb == nil || !r.rb.begun {
		// Failed before the record was written (or with nothing to record): nothing of
		// the service's parts was changed, and with rollback the task says so.
		if r.p.Rollback && cause != nil && !r.res.Changed {
			return nothingChanged(cause)
		}
		return cause
	}
	if cause != nil {
		return r.rollBack(ctx, cause)
	}
	if err := r.forget(ctx); err != nil {
		r.req.Warn("rollback: the change succeeded, but its record could not be removed: %v", err)
	}
	return nil
}

// forget removes the record and the kept builds that are no longer installed.
//
// The builds kept are those of every package of the service, not only the ones this run
// moved: a run that moves only one package must not remove the build another's next
// change needs (that change would be refused for want of it). A run that moved no package
// prunes nothing.
//
// The builds now installed are kept first (after a change that ended well, the ones it
// installed; after a rollback, the old ones, kept already): the next change's rollback
// then needs no repository that still has them. One that no enabled repository has is a
// warning: that next change will be refused before it changes anything.
func (r *run) forget(ctx context.Context) error {
	rb := r.d.Rollback
	names := make([]string, 0, len(r.rb.rec.Packages)+len(r.p.Packages))
	for _, p := range r.rb.rec.Packages {
		names = append(names, p.Name)
	}
	for _, p := range r.p.Packages {
		if len(r.rb.rec.Packages) > 0 && !slices.Contains(names, p.Name) {
			names = append(names, p.Name)
		}
	}
	var keep []string
	if len(names) > 0 {
		have, _, err := rpmexact.ObserveAll(ctx, rb.Runner, names)
		if err != nil {
			return err
		}
		for _, n := range names {
			keep = append(keep, have[n].NEVRAs...)
		}
		missing, err := rb.Keeper(r.p.Name).Ensure(ctx, keep, false)
		if err != nil {
			r.req.Warn("rollback: keep the installed builds for the next change's rollback: %v", err)
		} else if len(missing) > 0 {
			r.req.Warn("rollback: the installed build %s is in no enabled repository and could not be kept: the next change with rollback will be refused until it is available", strings.Join(missing, ", "))
		}
	}
	// The record goes before the builds it needs: a kill between leaves kept builds no
	// record needs, removed by the next end, never a record whose builds are gone.
	if err := rb.Store.Done(r.p.Name); err != nil {
		return err
	}
	if len(names) == 0 {
		return nil
	}
	return rb.Keeper(r.p.Name).Prune(keep)
}
