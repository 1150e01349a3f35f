package service

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/richt/services/pkg/atomicfile"
	"github.com/richt/services/pkg/contract"
	"github.com/richt/services/pkg/rollback"
	"github.com/richt/services/pkg/rpmexact"
	"github.com/richt/services/pkg/timeout"
	"github.com/richt/services/pkg/wiring"
)

// restorePackages puts the recorded builds back in one DNF transaction (`dnf shell`:
// the kept builds installed, the packages the change installed removed), run as
// rpm_exact runs its transactions (after the wait for one an earlier run left, under its
// lock and supervisor), and checks that the database shows the recorded builds after it.
// Its outcome is the packages step's, typed, for the wiring. before runs under the lock,
// once the packages that move back are known and before the transaction, only when some
// do: the rollback records there what they owe (a package that is at its recorded builds
// moves nowhere and owes nothing).
func (r *run) restorePackages(ctx context.Context, rec *rollback.Record, done *RolledBack, before func(moving []rollback.Package) error) (Outcome, error) {
	rb := r.d.Rollback
	if len(rec.Packages) == 0 {
		return Outcome{}, nil
	}
	names := make([]string, len(rec.Packages))
	for i, p := range rec.Packages {
		names[i] = p.Name
	}
	ctx, cancel := timeout.Deadline(ctx, r.packagesTimeout())
	defer cancel()
	release, earlier, err := rb.Txn.Begin(ctx, false, names)
	if err != nil {
		return Outcome{}, err
	}
	defer release()
	// Every package forget keeps, in the same query: once the transaction is done, its
	// outcome and this read say what is installed, and forget asks rpm nothing more.
	have, _, err := rpmexact.ObserveAll(ctx, rb.Runner, r.forgetNames())
	if err != nil {
		return Outcome{}, err
	}
	installed := map[string][]string{}
	for n, i := range have {
		installed[n] = i.NEVRAs
	}
	// A transaction an earlier run left (the change's, or a killed rollback's) is in what
	// the rollback just read and puts back: not reported again as the next packages
	// step's own (review32 L2).
	rpmexact.MarkReported(earlier)
	var install, remove []string
	var moving []rollback.Package
	// gpgcheck: a kept build came from a repository with gpgcheck on; the transaction
	// checks the kept files' signatures as DNF checked them there.
	gpgcheck := false
	for _, p := range rec.Packages {
		now := have[p.Name].NEVRAs
		if slices.Equal(now, p.Before) {
			continue
		}
		moving = append(moving, p)
		if len(p.Before) == 0 {
			remove = append(remove, p.Name)
			continue
		}
		for _, b := range p.Before {
			if !slices.Contains(now, b) {
				install = append(install, rb.Keeper(r.p.Name).Path(b))
				gpgcheck = gpgcheck || rb.Keeper(r.p.Name).GPGCheck(b)
			}
		}
	}
	if len(moving) == 0 {
		r.rb.installed = installed
		return Outcome{}, nil
	}
	if err := r.removesOnlyItsOwn(ctx, remove, rec); err != nil {
		return Outcome{}, err
	}
	if err := before(moving); err != nil {
		return Outcome{}, err
	}
	script, err := rollback.RestoreScript(install, remove)
	if err != nil {
		return Outcome{}, err
	}
	path := rb.Store.ScriptPath(r.p.Name)
	if err := atomicfile.Write(path, script, atomicfile.Options{Mode: 0o600, UID: -1, GID: -1}); err != nil {
		return Outcome{}, err
	}
	r.res.Plan = append(r.res.Plan, "rollback: restore-packages "+strings.Join(names, " "))
	// First without any repository: the kept files and the installed packages are all a
	// restore of the builds that were installed needs, and reading the repositories'
	// metadata is most of what DNF spends. Should DNF need a repository (a dependency the
	// change moved that the old build wants back), the same script again with them. A
	// script whose transaction cannot be resolved does nothing (the whole goal is solved
	// at its `run`), so the second is the restore, not half of it.
	var o rpmexact.Outcome
	var unitFiles bool
	for i, argv := range [][]string{rollback.RestoreArgvOffline(r.manager(), path, gpgcheck), rollback.RestoreArgv(r.manager(), path, gpgcheck)} {
		o, err = rb.Txn.Run(ctx, rpmexact.Transaction{Argv: argv, Names: names, Reason: "rollback of service " + r.p.Name})
		if err != nil {
			return Outcome{}, fmt.Errorf("%s: %w", strings.Join(argv, " "), err)
		}
		unitFiles = unitFiles || o.UnitFilesChanged
		for _, m := range o.Moves {
			installed[m.Name] = m.After
		}
		if o.AfterErr != nil {
			return Outcome{}, fmt.Errorf("read the installed builds after the rollback's transaction: %w", o.AfterErr)
		}
		err = restored(moving, o)
		if err == nil {
			break
		}
		if i == 1 {
			if o.ExitCode != 0 {
				return Outcome{}, fmt.Errorf("%s failed (exit %d): %s", strings.Join(argv, " "), o.ExitCode, lastLines(o.Output(), 8))
			}
			return Outcome{}, fmt.Errorf("%w (%s: %s)", err, strings.Join(argv, " "), lastLines(o.Output(), 8))
		}
	}
	o.UnitFilesChanged = unitFiles
	maps.Copy(installed, o.After)
	r.rb.installed = installed
	set := Outcome{Listed: true}
	for _, p := range moving {
		done.Packages = append(done.Packages, RollbackPackage{Name: p.Name, Restore: nonNilStrings(p.Before), From: nonNilStrings(have[p.Name].NEVRAs)})
		set.Moved = append(set.Moved, p.Name)
	}
	change := contract.Change{PackageChanged: true, UnitFilesChanged: o.UnitFilesChanged, DaemonReload: contract.ReloadNone}
	if o.UnitFilesChanged {
		change.DaemonReload = contract.ReloadNeeded
	}
	change.Stamp(time.Now())
	if !o.FilesPlaced.IsZero() {
		placed := o.FilesPlaced
		change.FilesPlaced = &placed
	}
	set.Outcome = wiring.Outcome{Changed: true, Change: change}
	return set, nil
}

// removesOnlyItsOwn refuses a restore whose `remove NAME` lines would take other installed
// packages along: DNF removes what requires a removed package, and a package installed
// since the change (by someone else, on purpose) that needs what the change brought is
// not the rollback's to remove. Asked of rpm (a test removal, nothing changed) before the
// transaction; the packages the record holds are the rollback's own.
func (r *run) removesOnlyItsOwn(ctx context.Context, remove []string, rec *rollback.Record) error {
	if len(remove) == 0 || r.d.Predict == nil {
		return nil
	}
	deps, err := r.d.Predict.Dependents(ctx, remove)
	if err != nil {
		return err
	}
	var others []string
	for _, d := range deps {
		if !slices.ContainsFunc(rec.Packages, func(p rollback.Package) bool { return isBuildOf(d, p.Name) }) {
			others = append(others, d)
		}
	}
	if len(others) > 0 {
		return fmt.Errorf("removing %s (installed by the change) would also remove %s, which require it and are not the service's; nothing was removed (remove them, or the service's packages, yourself)",
			strings.Join(remove, ", "), strings.Join(others, ", "))
	}
	return nil
}

// isBuildOf reports whether the NAME-VERSION-RELEASE.ARCH build is one of name's (a name
// may itself hold dashes: the two last dash-separated parts are the version and release).
func isBuildOf(build, name string) bool {
	i := strings.LastIndexByte(build, '-')
	if i < 0 {
		return false
	}
	j := strings.LastIndexByte(build[:i], '-')
	return j >= 0 && build[:j] == name
}

// restored checks that the database shows every moving package at its recorded builds
// after the transaction o (DNF's shell exits 0 also when a line failed).
func restored(moving []rollback.Package, o rpmexact.Outcome) error {
	for _, p := range moving {
		if after := o.After[p.Name]; !slices.Equal(nonNilStrings(after), nonNilStrings(p.Before)) {
			return fmt.Errorf("after the rollback's transaction %s is %s, not %s", p.Name, describeBuilds(after), describeBuilds(p.Before))
		}
	}
	return nil
}

// packagesTimeout is the rollback transaction's deadline: the packages step's timeout
// (the service's packages share one), or rpm_exact's default.
func (r *run) packagesTimeout() time.Duration {
	for _, p := range r.p.Packages {
		if p.Timeout != nil {
			if *p.Timeout > 0 {
				return *p.Timeout
			}
		}
	}
	return 10 * time.Minute
}

// manager is the packages' DNF 4 command (the service's packages share one).
func (r *run) manager() string {
	for _, p := range r.p.Packages {
		if p.Manager != nil && *p.Manager != "" {
			return *p.Manager
		}
	}
	return "dnf"
}

func describeBuilds(b []string) string {
	if len(b) == 0 {
		return "not installed"
	}
	return strings.Join(b, ", ")
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, " | ")
}

// summary says in a few words what a rollback put back.
func (d *RolledBack) summary() string {
	var parts []string
	for _, p := range d.Packages {
		parts = append(parts, fmt.Sprintf("%s to %s", p.Name, describeBuilds(p.Restore)))
	}
	if n := len(d.Files); n > 0 {
		paths := make([]string, n)
		for i, f := range d.Files {
			paths[i] = f.Path
		}
		parts = append(parts, fmt.Sprintf("%d file(s) (%s)", n, strings.Join(paths, ", ")))
	}
	var acted []string
	for _, p := range d.Processes {
		// What systemd was asked to do, not the plan's entries: those name internal
		// steps (record-pending, stamp-pending, clear-pending) a user has no use for.
		if names, unit := p.actions(); len(names) > 0 {
			acted = append(acted, fmt.Sprintf("%s %s", unit, strings.Join(names, ",")))
		}
	}
	if len(acted) > 0 {
		parts = append(parts, "processes: "+strings.Join(acted, "; "))
	}
	if len(parts) == 0 {
		return "nothing had to move"
	}
	return strings.Join(parts, ", ")
}
