// Package systemd_lifecycle is the richt.services.systemd_lifecycle Ansible module: one
// unit's run state and boot state, with restart/reload reactions to other tasks' changes.
package systemd_lifecycle

import (
	"context"
	"github.com/richt/services/pkg/systemd"
	"os"

	"github.com/richt/services/pkg/ansible"
	"github.com/richt/services/pkg/libmaps"
	"github.com/richt/services/pkg/lifecycle"
	"github.com/richt/services/pkg/lock"
	"github.com/richt/services/pkg/runner"
)

// Main runs the module as a process (see ansible.Main); the collection's multi-call binary
// (cmd/richt-modules) calls it with os.Args set to this module's command line.
func Main() {
	// systemd is reached only once the arguments are valid: --version and bad input never
	// open a connection.
	ansible.Main(lifecycle.Spec(), Handler())
}

// Handler is systemd_lifecycle's behaviour on this target: the systemd connection,
// records and locks of the task's scope, opened once the arguments are valid.
func Handler() ansible.Handler {
	return func(ctx context.Context, req *ansible.Request) (any, error) {
		task, err := ansible.Parsed[lifecycle.Task](req)
		if err != nil {
			return nil, err
		}
		d, closeFn, err := Deps(ctx, task.Scope)
		if err != nil {
			return nil, err
		}
		defer closeFn()
		return lifecycle.Handler(d)(ctx, req)
	}
}

// Deps are systemd_lifecycle's side effects for a scope ("system" or "user"): a systemd
// connection (closed by the func returned), the scope's records and its locks. The
// service module plans and applies its processes through them.
func Deps(ctx context.Context, scope string) (lifecycle.Deps, func(), error) {
	sc, err := systemd.ScopeOf(scope)
	if err != nil {
		return lifecycle.Deps{}, nil, err
	}
	for k, v := range sc.Env() {
		os.Setenv(k, v)
	}
	sd, closeFn, err := systemd.NewSystemd(ctx, runner.Exec{}, os.Getenv(systemd.BackendEnv), sc)
	if err != nil {
		return lifecycle.Deps{}, nil, err
	}
	libs := libmaps.Finder{Runner: runner.Exec{}}
	return lifecycle.Deps{Systemd: sd, Store: sc.Store(), Lock: lock.In(sc.LockDir), Libraries: libs}, closeFn, nil
}
