package service

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/richt/services/pkg/contract"
	"github.com/richt/services/pkg/rollback"
)

// removal is a removal's plan, made before its first step changes anything: each
// process's (held under its unit's lock until it runs), each unit file's and drop-in's,
// each config's, and the packages' removal as read ahead (pkg; the transaction lock is
// not held across the processes' stops: removePackages plans again under it and
// compares).
type removal struct {
	procs   []Step
	files   []Step
	configs []configPlan
	// pkg is the packages plan as read ahead (nil: no packages, or a plan that could not
	// be made).
	pkg *packagesRead
}

// packagesRead is what a packages plan says, kept once the plan is given back: its
// entries and the builds it removes or replaces.
type packagesRead struct {
	names   []string
	befores []rollback.Package
}

func readOf(st Step) *packagesRead {
	befores, _ := st.Befores()
	return &packagesRead{names: slices.Clone(st.Names()), befores: slices.Clone(befores)}
}

// same reports whether two reads of the packages plan are one plan: the same entries for
// the same installed builds (a removal's entry names the package, not its build).
func (p *packagesRead) same(q *packagesRead) bool {
	return slices.Equal(p.names, q.names) && slices.EqualFunc(p.befores, q.befores, func(a, b rollback.Package) bool {
		return a.Name == b.Name && slices.Equal(a.Before, b.Before)
	})
}

// String is the read as a message names it: its entries, and the builds installed.
func (p *packagesRead) String() string {
	s := "to do nothing"
	if len(p.names) > 0 {
		s = strings.Join(p.names, ", ")
	}
	var builds []string
	for _, b := range p.befores {
		builds = append(builds, b.Before...)
	}
	if len(builds) > 0 {
		s += " (installed: " + strings.Join(builds, ", ") + ")"
	}
	return s
}

// release lets go of every plan still held (a run that stops before carrying them out).
func (c *removal) release() {
	for _, st := range append(slices.Clone(c.procs), c.files...) {
		if st != nil {
			st.Release()
		}
	}
}

func (r *run) absent(ctx context.Context) (err error) {
	// Before anything changes: a removal that would take other packages along.
	dependents, err := r.dependents(ctx)
	if err != nil {
		r.res.FailedStep = "packages"
		return err
	}
	// The whole removal is planned before its first step, reading only, and reported;
	// then each step carries out its plan (in check mode, reports it). A removal owes no
	// reaction, so nothing is derived or recorded ahead.
	plan, err := r.composeAbsent(ctx)
	defer plan.release()
	if err != nil {
		return err
	}
	removed := false
	// One reload so systemd forgets the removed units, as part of the removal: also when a
	// later step failed after something was removed, and when an earlier run's removal left
	// one due (it failed or was killed before its reload). Check mode plans it when its
	// steps' checks succeed.
	defer func() {
		if !removed && !r.syncDue() || r.req.CheckMode && err != nil {
			return
		}
		err = r.reloadManager(ctx, err, "removing")
	}()
	for i, proc := range r.order {
		st := plan.procs[i]
		plan.procs[i] = nil // runs now
		step := "process " + unitOf(proc.Unit)
		out, err := r.apply(ctx, r.d.Processes, st, step, proc.call)
		r.res.Processes = append(r.res.Processes, out)
		if err != nil {
			return err
		}
	}
	for i, f := range r.files {
		st := plan.files[i]
		plan.files[i] = nil // runs now
		out, err := r.apply(ctx, r.d.Files, st, "file "+fileLabel(f), f.call)
		r.res.Files = append(r.res.Files, withItem(out, f))
		if out.changed() {
			removed = true
		}
		if err != nil {
			return err
		}
	}
	// The configs after the unit files, so no process is left reading a config that is
	// gone; exactly the declared paths, nothing beside them.
	for _, cp := range plan.configs {
		out, err := r.applyConfig(ctx, cp, nil)
		r.res.Configs = append(r.res.Configs, out)
		if out.change().UnitFilesChanged {
			removed = true
		}
		if err != nil {
			return err
		}
	}
	return r.removePackages(ctx, plan, dependents, &removed)
}

// composeAbsent plans every step of a removal, reading only, and lists the plans in the
// service's plan in the order they are carried out: the packages' removal is read first
// (under the transaction lock, let go at once: taken before any unit's lock, never while
// one is held), then each process is planned under its unit's lock, held until it runs,
// then the unit files and drop-ins and the configs. A packages plan that could not be
// made fails the run here, before anything changes.
func (r *run) composeAbsent(ctx context.Context) (*removal, error) {
	c := &removal{}
	if r.pkgs != nil {
		st := r.plan(ctx, r.d.Packages, *r.pkgs)
		if planFailed(st) {
			out, err := r.apply(ctx, r.d.Packages, st, "packages", *r.pkgs)
			r.res.Packages = &out
			return c, err
		}
		c.pkg = readOf(st)
		st.Release()
	}
	// Each plan holds its unit's (or file's) lock until its step runs, so the plans take
	// them in one order every run shares, by name, not in the service's order: two
	// removals of services that share units in opposite orders would otherwise each hold
	// what the other waits for until their deadlines.
	c.procs = make([]Step, len(r.order))
	for _, i := range byName(len(r.order), func(i int) string { return unitOf(r.order[i].Unit) }) {
		c.procs[i] = r.plan(ctx, r.d.Processes, r.order[i].call)
	}
	for i, proc := range r.order {
		r.res.Plan = append(r.res.Plan, prefixed("process "+unitOf(proc.Unit), c.procs[i].Names())...)
	}
	c.files = make([]Step, len(r.files))
	for _, i := range byName(len(r.files), func(i int) string { return fileLabel(r.files[i]) }) {
		c.files[i] = r.plan(ctx, r.d.Files, r.files[i].call)
	}
	for i, f := range r.files {
		r.res.Plan = append(r.res.Plan, prefixed("file "+fileLabel(f), c.files[i].Names())...)
	}
	for _, cfg := range r.configs {
		cp := r.planConfig(ctx, cfg)
		c.configs = append(c.configs, cp)
		r.res.Plan = append(r.res.Plan, prefixed(configStepName(cfg), cp.names())...)
	}
	if c.pkg != nil {
		r.res.Plan = append(r.res.Plan, prefixed("packages", c.pkg.names)...)
	}
	return c, nil
}

// removePackages carries out the removal of the service's packages (in check mode,
// reports it): planned again at its turn under the transaction lock (rpm_exact's Hold),
// and carried out only when that plan is the one made ahead, for the same installed
// builds; when the RPM database moved in between (another transaction), the step fails
// naming both and removes nothing. A change sets removed, and names the dependents it
// took along.
func (r *run) removePackages(ctx context.Context, c *removal, dependents []string, removed *bool) error {
	if r.pkgs == nil {
		return nil
	}
	args := *r.pkgs
	st := r.plan(ctx, r.d.Packages, args)
	if now := readOf(st); !planFailed(st) && c.pkg != nil && !c.pkg.same(now) {
		st.Release()
		r.res.FailedStep = "packages"
		return fmt.Errorf("packages: the installed packages changed while the removal ran (another package transaction): its plan was %s, and under the transaction lock it is %s now; nothing was removed by this step (run the task again to remove what is there now)",
			c.pkg, now)
	}
	out, err := r.apply(ctx, r.d.Packages, st, "packages", args)
	r.res.Packages = &out
	if out.changed() {
		*removed = true
		if len(dependents) > 0 {
			r.res.RemovedDependents = dependents
			r.req.Warn("removing %s also removed %s, which required its packages (remove_dependents)", r.p.Name, strings.Join(dependents, ", "))
		}
	}
	return err
}

// syncDue reports whether a manager reload is recorded as due.
func (r *run) syncDue() bool { return r.d.SyncDue != nil && r.d.SyncDue() }

// reloadManager reloads systemd's manager as the service's last step (planned in check
// mode) and returns the run's error: err when a step failed before, else the reload's.
func (r *run) reloadManager(ctx context.Context, err error, after string) error {
	r.res.ManagerReload = string(contract.ReloadPerformed)
	if r.req.CheckMode {
		r.res.ManagerReload = string(contract.ReloadPlanned)
	}
	if !slices.Contains(r.res.Plan, "daemon-reload") {
		// A reload the plan did not hold: a step changed what its plan said it would not.
		r.res.Plan = append(r.res.Plan, "daemon-reload")
	}
	if r.req.CheckMode || r.d.Reload == nil {
		return err
	}
	if rerr := r.d.Reload(ctx); rerr != nil && err == nil {
		r.res.FailedStep = "manager reload"
		return fmt.Errorf("manager reload after %s %s: %w", after, r.p.Name, rerr)
	}
	return err
}

// dependents are the installed packages outside the service's that removing its packages
// would take along (DNF removes what requires a removed package). Without
// remove_dependents they refuse the removal, naming them; with it they are what the
// removal will report.
func (r *run) dependents(ctx context.Context) ([]string, error) {
	if len(r.p.Packages) == 0 || r.d.Predict == nil {
		return nil, nil
	}
	names := make([]string, 0, len(r.p.Packages))
	for _, p := range r.p.Packages {
		names = append(names, p.Name)
	}
	// Reading only, but bounded: an rpm that hangs must not hold the run forever.
	ctx, cancel := context.WithTimeout(ctx, predictTimeout)
	defer cancel()
	deps, err := r.d.Predict.Dependents(ctx, names)
	if err != nil {
		return nil, fmt.Errorf("packages: find what requires %s: %w", strings.Join(names, ", "), err)
	}
	if len(deps) > 0 && !r.p.RemoveDependents {
		return nil, fmt.Errorf("packages: removing %s would also remove %s, which require them and are not packages of this service; nothing was changed (remove those first, add them to packages, or set remove_dependents: true to let them go)",
			strings.Join(names, ", "), strings.Join(deps, ", "))
	}
	return deps, nil
}

// byName is the indexes 0..n-1 ordered by name(i): the order in which plans that hold a
// lock until they run take their locks.
func byName(n int, name func(int) string) []int {
	idx := make([]int, n)
	for i := range idx {
		idx[i] = i
	}
	slices.SortStableFunc(idx, func(a, b int) int { return strings.Compare(name(a), name(b)) })
	return idx
}
