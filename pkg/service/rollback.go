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
}

// RollbackPlan is what a rollback would put back (`rollback` in the result): the
// packages with the builds they had (none: removed), the files (their content, or their
// removal when they did not exist).
type RollbackPlan struct {
	Packages []RollbackPackage `json:"packages"`
	Files    []RollbackFile    `json:"files"`
	// Keep are the builds a rollback would install and how each is kept before the
	// change (absent when no package moves).
	Keep []RollbackKeep `json:"keep,omitempty"`
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
	Processes []stepResult `json:"processes"`
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
	// keep is the plan that keeps the builds the rollback would install (carried out
	// before the record is written).
	keep rollback.KeepPlan
	// begun: the record is on the target (the run's first change may follow).
	begun bool
	// fileRefs are the unit files' and drop-ins' parts by path, for the wiring of what a
	// rollback puts back.
	fileRefs map[string][]wiring.Ref
	// installed are the builds installed per package once a rollback's packages are back,
	// for forget (nil: not known): the rollback's own read under the transaction lock,
	// with what its transactions moved and the builds they read back after.
	installed map[string][]string
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
// the host or available from the enabled repositories; the keep step is planned here,
// reading only (rollback.Keeper.PlanKeep), and carried out by the real run right before
// its record (beginRollback). A build that is neither kept nor available refuses the run
// here, before any change, in check mode too. A record an earlier run left (killed, or
// its rollback failed) keeps its older entries (rollback.Merge). Without a change and
// without such a record there is nothing to put back and no record.
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
	if c.pkg != nil && !planFailed(c.pkg) {
		befores, known := c.pkg.Befores()
		if known {
			rec.Packages = befores
		} else if c.pkg.Changes() {
			r.res.FailedStep = "rollback"
			return errors.New("rollback: internal error: the packages plan does not say which builds it replaces")
		}
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
	// The builds a rollback installs, planned reading only; the real run keeps them
	// before its record (beginRollback). The builds this change installs are kept when it
	// ends well (forget), for the next change's rollback: not here, where a change that
	// fails would pay for fetching the build it then removes.
	var keepPlan rollback.KeepPlan
	if len(old) > 0 {
		keeper := rb.Keeper(r.p.Name)
		if keepPlan, err = keeper.PlanKeep(ctx, old); err != nil {
			r.res.FailedStep = "rollback"
			return fmt.Errorf("rollback: keep the builds a rollback would install: %w", err)
		}
		if refused := keepPlan.Missing; len(refused) > 0 {
			r.res.FailedStep = "rollback"
			return fmt.Errorf("rollback: the build %s, which a rollback would install, cannot be installed again: no enabled repository has it and it is not kept in %s; a failed change could not be rolled back, so nothing was changed (make the build available, or run without rollback)",
				strings.Join(refused, ", "), filepath.Dir(keeper.Path(refused[0])))
		}
	}
	plan := &RollbackPlan{Packages: []RollbackPackage{}, Files: []RollbackFile{}, Keep: keepReport(keepPlan)}
	r.res.Plan = append(r.res.Plan, keepEntries(keepPlan)...)
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
	r.rb = &rollbackRun{rec: rec, contents: contents, fileRefs: refs, keep: keepPlan}
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

// beginRollback carries out the rollback's keep step (the builds its plan fetches, from
// the repositories it named, their signatures checked where the repository has gpgcheck
// on) and then writes the record on the target: the last things before the first change.
// A keep that fails, or fetched other than planned, refuses the run with nothing changed.
func (r *run) beginRollback(ctx context.Context) error {
	if r.rb == nil || r.req.CheckMode {
		return nil
	}
	if err := r.d.Rollback.Keeper(r.p.Name).Keep(ctx, r.rb.keep); err != nil {
		r.res.FailedStep = "rollback"
		return fmt.Errorf("rollback: keep the builds a rollback would install: %w", err)
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
		if r.rb != nil && cause == nil {
			r.res.Plan = append(r.res.Plan, rollbackForget)
		}
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
	r.res.Plan = append(r.res.Plan, rollbackForget)
	if err := r.forget(ctx); err != nil {
		r.req.Warn("rollback: the change succeeded, but its record could not be removed: %v", err)
	}
	return nil
}
