package service

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/richt/services/pkg/rollback"
	"github.com/richt/services/pkg/rpmexact"
)

// Keeper keeps the builds a rollback installs again on the host (rollback.Keeper).
type Keeper interface {
	// PlanKeep plans keeping builds, reading only: which are kept already, which are
	// fetched from which repository (with its gpgcheck), which are neither kept nor
	// available.
	PlanKeep(ctx context.Context, nevras []string) (rollback.KeepPlan, error)
	// Keep carries out exactly a plan's fetches, and fails, keeping nothing, when what it
	// fetched is not what the plan said.
	Keep(ctx context.Context, p rollback.KeepPlan) error
	// Ensure keeps each build (from the enabled repositories when not kept yet) and
	// returns those neither kept nor available: after a change, for the next one.
	Ensure(ctx context.Context, nevras []string, check bool) (missing []string, err error)
	// Path is where a build is kept.
	Path(nevra string) string
	// Prune removes every kept build but keep.
	Prune(keep []string) error
	// GPGCheck reports whether the build was kept from a repository with gpgcheck on
	// (its signature checked then, and to be checked again when it is installed).
	GPGCheck(nevra string) bool
}

// RollbackKeep is one build a rollback would install: kept on the host already, or
// fetched before the change from Repo (its signature checked there when the repository
// has gpgcheck on).
type RollbackKeep struct {
	Build    string `json:"build"`
	Kept     bool   `json:"kept"`
	Repo     string `json:"repo,omitempty"`
	GPGCheck bool   `json:"gpgcheck"`
}

// keepEntries are the keep step's plan entries: a build kept already, or fetched from a
// repository (its signature checked there when the repository has gpgcheck on).
func keepEntries(p rollback.KeepPlan) []string {
	var out []string
	for _, n := range p.Kept {
		out = append(out, "rollback: keep "+n+" (kept)")
	}
	for _, f := range p.Fetch {
		out = append(out, fmt.Sprintf("rollback: keep %s: fetch from %s, gpgcheck %s", f.Build, f.Repo, onOff(f.GPGCheck)))
	}
	return out
}

// keepReport is the keep step's plan as the result reports it (`rollback.keep`).
func keepReport(p rollback.KeepPlan) []RollbackKeep {
	var out []RollbackKeep
	for _, n := range p.Kept {
		out = append(out, RollbackKeep{Build: n, Kept: true})
	}
	for _, f := range p.Fetch {
		out = append(out, RollbackKeep{Build: f.Build, Repo: f.Repo, GPGCheck: f.GPGCheck})
	}
	return out
}

func onOff(b bool) string {
	if b {
		return "on"
	}
	return "off"
}

// rollbackForget is the plan's last entry of a change with rollback that ends well:
// the record goes, the builds now installed of the service's packages are kept (fetched
// when not kept yet) and the others pruned (forget).
const rollbackForget = "rollback: forget"

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
// warning: that next change will be refused before it changes anything. After a rollback
// the builds installed are known already (rollbackRun.installed: what its own read under
// the transaction lock and its transaction's outcome say); rpm is asked only for the
// packages they do not cover.
func (r *run) forget(ctx context.Context) error {
	rb := r.d.Rollback
	names := r.forgetNames()
	var keep []string
	if len(names) > 0 {
		installed, err := r.installedOf(ctx, names)
		if err != nil {
			return err
		}
		for _, n := range names {
			keep = append(keep, installed[n]...)
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

// forgetNames are the packages whose installed builds forget keeps: the record's, and
// when it holds any, every package of the service.
func (r *run) forgetNames() []string {
	names := make([]string, 0, len(r.rb.rec.Packages)+len(r.p.Packages))
	for _, p := range r.rb.rec.Packages {
		names = append(names, p.Name)
	}
	for _, p := range r.p.Packages {
		if len(r.rb.rec.Packages) > 0 && !slices.Contains(names, p.Name) {
			names = append(names, p.Name)
		}
	}
	return names
}

// installedOf are the builds installed of each of names: as the rollback found or left
// them (rollbackRun.installed), else from one rpm query for the rest.
func (r *run) installedOf(ctx context.Context, names []string) (map[string][]string, error) {
	out := maps.Clone(r.rb.installed)
	if out == nil {
		out = map[string][]string{}
	}
	var unknown []string
	for _, n := range names {
		if _, ok := out[n]; !ok {
			unknown = append(unknown, n)
		}
	}
	if len(unknown) == 0 {
		return out, nil
	}
	have, _, err := rpmexact.ObserveAll(ctx, r.d.Rollback.Runner, unknown)
	if err != nil {
		return nil, err
	}
	for _, n := range unknown {
		out[n] = have[n].NEVRAs
	}
	return out, nil
}
