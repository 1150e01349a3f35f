// Package systemd_lifecycle is the richt.services.systemd_lifecycle Ansible module: one
// unit's run state and boot state, with restart/reload reactions to other tasks' changes.
package systemd_lifecycle

import (
	"context"
	"github.com/richt/services/pkg/systemd"
	"os"

	"github.com/richt/services/pkg/ansible"
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

// Handler is the module's behaviour over the target's real systemd (the service module
// runs it as one of its steps).
func Handler() ansible.Handler {
	return func(ctx context.Context, req *ansible.Request) (any, error) {
		var p lifecycle.Params
		if err := req.Decode(&p); err != nil {
			return nil, err
		}
		scope, err := systemd.ScopeOf(p.Scope)
		if err != nil {
			return nil, err
		}
		for k, v := range scope.Env() {
			os.Setenv(k, v)
		}
		sd, closeFn, err := systemd.NewSystemd(ctx, runner.Exec{}, os.Getenv(systemd.BackendEnv), scope)
		if err != nil {
			return nil, err
		}
		defer closeFn()
		return lifecycle.Handler(lifecycle.Deps{Systemd: sd, Store: scope.Store(), Lock: lock.In(scope.LockDir)})(ctx, req)
	}
}
