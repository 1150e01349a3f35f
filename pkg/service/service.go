// Package service is the service module: one whole service (packages, owned unit files
// and drop-ins, processes) in one task and one process on the target. Its steps are the
// three modules' own runs, called in process (ansible.Call), so each step's result is the
// one that module gives on its own; what one step changed reaches the next as the same
// triggers the service role wires between tasks (restart beats reload, reloads merge, a
// start absorbs, a restart the package's scriptlet already did is not repeated).
//
// Present: packages (one set, one transaction) → unit files and drop-ins (written without
// a manager reload of their own) → processes in order (the first that needs it reloads the
// manager once; without processes, one manager reload at the end). Absent: the reverse,
// then one manager reload when anything was removed.
// First the plan is composed from the steps' own plans, reading only (compose.go); check
// mode reports it, a real run carries it out. Before any step changes anything, the
// reaction each process will owe is recorded on the
// target (durable pending reactions), so a run killed between its steps leaves it for the
// next run.
package service

import (
	"context"
	"fmt"

	"github.com/richt/services/pkg/ansible"
	"github.com/richt/services/pkg/durable"
	"github.com/richt/services/pkg/lock"
	"github.com/richt/services/pkg/rpmexact"
	"github.com/richt/services/pkg/stamp"
)

// Module is one module the service composes: its parameter contract and behaviour.
type Module struct {
	Spec    *ansible.Spec
	Handler ansible.Handler
}

// Prediction reads, before anything is changed: the packages step's own Plan (rpm_exact's,
// the plan that step then carries out), and which installed packages outside a removal's
// names it would take along.
type Prediction interface {
	PlanPackages(ctx context.Context, w rpmexact.Want) (rpmexact.Plan, error)
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
	Predict                    Prediction
	Pending                    Pending
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
}

// Handler returns the service module's behaviour.
func Handler(d Deps) ansible.Handler {
	return func(ctx context.Context, req *ansible.Request) (any, error) {
		task, err := ansible.Parsed[Task](req)
		if err != nil {
			return nil, err
		}
		p := task.Params
		r := &run{d: d, req: req, p: p, order: task.Order, pkgTask: task.Packages, res: &Result{Name: p.Name, State: p.State, Files: []map[string]any{}, Processes: []map[string]any{}, Plan: []string{}}}
		if p.State == "absent" {
			err = r.absent(ctx)
		} else {
			err = r.present(ctx)
		}
		r.res.Diff = r.diff()
		return r.res, err
	}
}

type run struct {
	d     Deps
	req   *ansible.Request
	p     Params
	order []Process
	// pkgTask is the packages step's typed request (nil without packages).
	pkgTask *rpmexact.Task
	res     *Result
}

// call runs one step's module in process and records its result; a failed step stops the
// service there.
func (r *run) call(ctx context.Context, m Module, step string, args map[string]any) (map[string]any, error) {
	out := ansible.Call(ctx, m.Spec, args, r.req.CheckMode, r.req.Diff, m.Handler)
	delete(out, "invocation")
	if c, _ := out["changed"].(bool); c {
		r.res.Changed = true
	}
	for _, w := range stringsOf(out["warnings"]) {
		r.req.Warn("%s: %s", step, w)
	}
	delete(out, "warnings")
	if f, _ := out["failed"].(bool); f {
		r.res.FailedStep = step
		msg, _ := out["msg"].(string)
		return out, fmt.Errorf("%s: %s", step, msg)
	}
	return out, nil
}
