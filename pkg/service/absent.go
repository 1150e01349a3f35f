package service

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/richt/services/pkg/contract"
)

func (r *run) absent(ctx context.Context) (err error) {
	// Before anything changes: a removal that would take other packages along.
	dependents, err := r.dependents(ctx)
	if err != nil {
		r.res.FailedStep = "packages"
		return err
	}
	// Each step is planned at its turn and its plan carried out at once (in check mode,
	// reported): a removal owes no reaction, so nothing is derived or recorded ahead, and
	// the packages plan, made just before its step, holds the transaction lock only for
	// the transaction, not across the processes' stops.
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
	for _, proc := range r.order {
		if _, err := r.process(ctx, proc, proc.call); err != nil {
			return err
		}
	}
	for _, f := range r.files {
		step := "file " + fileLabel(f)
		out, err := r.callArgs(ctx, r.d.Files, step, f.call)
		r.res.Files = append(r.res.Files, withItem(out, f))
		r.res.Plan = append(r.res.Plan, prefixed(step, out.plan())...)
		if out.changed() {
			removed = true
		}
		if err != nil {
			return err
		}
	}
	// The configs after the unit files, so no process is left reading a config that is
	// gone; exactly the declared paths, nothing beside them.
	for _, cfg := range r.configs {
		cp := r.planConfig(ctx, cfg)
		r.res.Plan = append(r.res.Plan, prefixed(configStepName(cfg), cp.names())...)
		out, err := r.applyConfig(ctx, cp, nil)
		r.res.Configs = append(r.res.Configs, out)
		if out.change().UnitFilesChanged {
			removed = true
		}
		if err != nil {
			return err
		}
	}
	return r.removePackages(ctx, dependents, &removed)
}

// removePackages plans the removal of the service's packages and carries it out at once
// (in check mode, reports it): a change sets removed, and names the dependents it took
// along.
func (r *run) removePackages(ctx context.Context, dependents []string, removed *bool) error {
	if r.pkgs == nil {
		return nil
	}
	args := *r.pkgs
	st := r.plan(ctx, r.d.Packages, args)
	r.res.Plan = append(r.res.Plan, prefixed("packages", st.Names())...)
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
