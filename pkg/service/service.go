// Package service is the service module: one whole service (packages, configs, owned unit
// files and drop-ins, processes) in one task and one process on the target. Its steps are
// the three modules' own runs, called in process (ansible.CallArgs), so each step's result
// is the one that module gives on its own, and package configfile's for a config; what one
// step changed reaches the next as the same triggers the service role wires between tasks
// (restart beats reload, reloads merge, a start absorbs, a restart the package's scriptlet
// already did is not repeated).
//
// Inside, the steps talk in types (outcome.go): a step's plan says what the service needs
// of it through the Step interface (Moves, Befores, Path); what a step did travels as an
// outcome keyed by the part's reference (wiring.Outcomes: changed and the contract.Change
// it made), which wiring turns into a process's triggers; a config's contract comes from
// configfile's Result. Every step's arguments are checked, in typed structs, and parsed by
// the step's own Spec once, when the service parses its request (spec.go, args.go): a
// process's into systemd_lifecycle's typed request, to which its turn adds only the
// triggers (lifecycle.Task.Triggered). The maps Ansible reports, and the reading of a
// step's result key by key, are in one file, result.go.
//
// Present: packages (one set, one transaction) → configs (package configfile) → unit
// files and drop-ins (written without a manager reload of their own) → processes in order
// (the first that needs it reloads the manager once; without processes, one manager
// reload at the end); a process that can be reloaded needs a reload-capable unit, checked
// before any step and again right after the packages step (capability.go); a unit whose
// files neither the disk nor the manager shows (and no file of the service defines) is
// left to its process step, after the configs and files are written. Absent:
// processes → unit files and drop-ins → configs → packages, then one manager reload when
// anything was removed. Which change reaches which process
// is package wiring's rule (by name, or the default wiring), used both to derive what the
// processes owe and to build their triggers (wire.go).
//
// The plan: the service composes the plans of the packages step and the file steps once,
// reading only (Module.Plan; compose.go), and derives from those plans and each process's
// wiring what each process will owe — a restart or reload, and whether the manager must
// be reloaded (owes: a pure function; it asks no systemd). A real run records that owed
// reaction on the target (durable pending records, merged by durable.Merge) before any
// side effect, so a run killed between its steps leaves it for the next run, then carries
// out exactly the packages and file plans it holds (Step.Run); no step plans again
// inside it. Where a held plan could go stale, the choice is per step:
//   - packages (Packages): the plan is made under rpm_exact's transaction lock, after the
//     wait for a transaction an earlier run left under way, and the lock is held until the
//     step runs. Holding it is cheap (what comes between is reading and recording) and
//     exact: no other transaction can move the RPM database under the plan. It is taken
//     before any unit's lock (a record is written under the unit's lock while it is
//     held), never while one is held, so two services cannot wait on each other. A
//     removal reads its packages plan ahead, before any unit's lock, and lets the
//     transaction lock go at once: the processes' stops can take their whole timeouts, and
//     no other transaction waits for them. At the packages step it plans again under the
//     lock and carries that plan out only when it is the one it read ahead and reported;
//     when another transaction moved the packages in between, the step fails naming both
//     and removes nothing (absent.go).
//   - files (Files): the plan is made before the packages step and applied after it;
//     Apply takes the unit's lock and reads the file again (a cheap lstat and read),
//     deciding again under the lock only when another run changed it in between. Holding
//     every unit's lock across the package transaction would block the unit's other runs
//     for that long.
//   - processes (Processes): in a present run a process's plan depends on what the steps
//     before it really did (the triggers they report, a restart a package scriptlet already did, the
//     records this run wrote). In a real run a process is therefore not forecast: the
//     service opens no systemd connection, takes no unit lock and observes no unit before
//     the packages step; each process is planned at its turn, under its unit's lock, from
//     the triggers the earlier steps report, and that plan is carried out at once and put
//     at its place in the reported `plan`. Check mode, where the earlier steps report
//     what their plans say, forecasts each process the same way from those predicted
//     triggers (its step run in check mode). So check mode's plan is the real run's
//     whenever the earlier steps do what their plans say; where they do more (a scriptlet
//     restarted the unit), the real run's plan says what it carried out.
//     A removal's processes owe nothing and take no trigger: each is planned ahead, under
//     its unit's lock, which it holds until it runs.
//
// The reported `plan` lists, in order: the records ahead of the packages step, the
// packages plan, the records ahead of the files, the files' plans, then (at their turns)
// records a step's unplanned change made due or withdrew, each process's plan, and the
// service's own daemon-reload. A removal plans every step before the first runs
// (composeAbsent: each process under its unit's lock, held until it runs; the files; the
// configs; the packages as read ahead) and lists them in that order, then the
// daemon-reload when something was removed.
package service

import (
	"context"

	"github.com/richt/services/pkg/ansible"
	"github.com/richt/services/pkg/configfile"
	"github.com/richt/services/pkg/durable"
	"github.com/richt/services/pkg/lock"
	"github.com/richt/services/pkg/stamp"
	"github.com/richt/services/pkg/wiring"
)

// Module is one module the service composes: its parameter contract, and its run split
// as the module splits it: Plan reads and decides, and the Step it returns carries out
// exactly that plan (Packages, Files, Processes).
type Module struct {
	Spec *ansible.Spec
	Plan Planner
}

// Planner plans one step from its request (the step's arguments as its Spec parsed them:
// ansible.Parsed), reading only. A plan that could not be made is a Step too (Err), which
// fails as the module fails when it runs.
type Planner func(ctx context.Context, req *ansible.Request) Step

// Configs plans and applies one config (configfile.Deps; tests give a fake).
type Configs interface {
	Plan(ctx context.Context, c configfile.Config) (configfile.Plan, error)
	Apply(ctx context.Context, p configfile.Plan, beforeReplace func() error) (*configfile.Result, error)
}

// ConfigFiles is Configs on the target: configfile's Deps, with the service's own
// BeforeReplace for each write.
type ConfigFiles configfile.Deps

// Plan implements Configs.
func (c ConfigFiles) Plan(ctx context.Context, cfg configfile.Config) (configfile.Plan, error) {
	return configfile.Deps(c).Plan(ctx, cfg)
}

// Apply implements Configs.
func (c ConfigFiles) Apply(ctx context.Context, p configfile.Plan, beforeReplace func() error) (*configfile.Result, error) {
	d := configfile.Deps(c)
	d.BeforeReplace = beforeReplace
	return d.Apply(ctx, p)
}

// Prediction reads, before anything is changed: which installed packages outside a
// removal's names it would take along.
type Prediction interface {
	Dependents(ctx context.Context, names []string) ([]string, error)
}

// Pending records a reaction a process will owe (package durable).
type Pending interface {
	GetPending(unit string) (*durable.Pending, error)
	SetPending(unit string, p durable.Pending) error
	ClearPending(unit string) error
}

// Deps are the service module's parts.
type Deps struct {
	Packages, Files, Processes Module
	// Configs plans and writes the configs (its BeforeReplace is the service's own).
	Configs Configs
	// Tree runs the configs' tree validators (tree.go); nil: a service with one fails
	// before any config is written.
	Tree    TreeRunner
	Predict Prediction
	Pending Pending
	// MarkSync records durably that the manager must be reloaded, before a config under
	// a unit directory moves (durable.Store.MarkManagerSyncDue); nil: not recorded.
	MarkSync func(ctx context.Context, reason string) error
	// Reload reloads systemd's manager and settles the sync records (after a removal).
	Reload func(ctx context.Context) error
	// SyncDue reports whether a manager reload is recorded as due (a removal that a failed
	// or killed run left half done); nil: never.
	SyncDue func() bool
	// Lock serializes the pending records of a unit with systemd_lifecycle's runs on it
	// (package lock); nil: unserialized, for tests.
	Lock lock.Func
	// Now reads systemd's clock; nil means stamp.Now.
	Now func() (stamp.Stamp, error)
	// Units reads the units' files on the target, for the reload capability a process
	// that can be reloaded needs, checked before any change (capability.go); nil: the
	// service does not check it (tests), each process step still does.
	Units *UnitFiles
	// Rollback is what `rollback: true` needs on the target; nil: such a run fails
	// before any change.
	Rollback *Rollbacks
}

// Handler returns the service module's behaviour.
func Handler(d Deps) ansible.Handler {
	return func(ctx context.Context, req *ansible.Request) (any, error) {
		task, err := ansible.Parsed[Task](req)
		if err != nil {
			return nil, err
		}
		p := task.Params
		r := &run{d: d, req: req, p: p, order: task.Order, pkgs: task.Packages, files: task.Files, configs: task.Configs, parts: task.Parts,
			res: newResult(p)}
		if p.State == "absent" {
			err = r.absentLocked(ctx)
		} else {
			err = r.presentLocked(ctx)
		}
		r.res.Diff = r.diff()
		r.res.Summary = r.summary()
		return r.res, err
	}
}

type run struct {
	d     Deps
	req   *ansible.Request
	p     Params
	order []Process
	pkgs  *ansible.Args
	files []fileStep
	// configs are the configs as configfile takes them, in configs' order.
	configs []config
	// parts are what the processes' reactions can name (package wiring).
	parts wiring.Parts
	res   *Result
	// rb is the rollback's record in hand (rollback: true and a change, or a record an
	// earlier run left); nil otherwise.
	rb *rollbackRun
}

// plan asks m for its plan of a, the step's arguments as m's Spec validated and parsed
// them (once: Spec.Args). A plan that could not be made is a Step too (Err).
func (r *run) plan(ctx context.Context, m Module, a ansible.Args) Step {
	var st Step
	out := ansible.CallArgs(ctx, a, r.req.CheckMode, r.req.Diff, func(ctx context.Context, req *ansible.Request) (any, error) {
		st = m.Plan(ctx, req)
		return struct{}{}, nil
	})
	if st == nil {
		// The planner panicked: the call's result says so.
		st = failed{err: planFailure(out)}
	}
	return st
}

// apply runs a step's plan in hand, for the same arguments, and records its result; a
// failed step stops the service there.
func (r *run) apply(ctx context.Context, m Module, st Step, step string, a ansible.Args) (stepResult, error) {
	out := ansible.CallArgs(ctx, a, r.req.CheckMode, r.req.Diff, func(ctx context.Context, req *ansible.Request) (any, error) {
		return st.Run(ctx, req)
	})
	return r.result(out, step)
}

// callArgs plans one step from arguments validated already and carries out the plan.
func (r *run) callArgs(ctx context.Context, m Module, step string, a ansible.Args) (stepResult, error) {
	return r.apply(ctx, m, r.plan(ctx, m, a), step, a)
}
