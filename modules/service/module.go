// Package service is the richt.services.service Ansible module: one whole service
// (packages, configs, owned unit files and drop-ins, processes, and with rollback the last
// good state) in one task and one process on the target; the work is pkg/service's.
package service

import (
	"context"

	"github.com/richt/services/modules/rpm_exact"
	"github.com/richt/services/modules/systemd_lifecycle"
	"github.com/richt/services/modules/unit_override"
	"github.com/richt/services/pkg/ansible"
	"github.com/richt/services/pkg/durable"
	"github.com/richt/services/pkg/lock"
	"github.com/richt/services/pkg/mountns"
	"github.com/richt/services/pkg/rollback"
	"github.com/richt/services/pkg/runner"
	"github.com/richt/services/pkg/service"
	"github.com/richt/services/pkg/systemd"
)

// Main runs the module as a process (see ansible.Main); the collection's multi-call binary
// (cmd/richt-modules) calls it with os.Args set to this module's command line.
func Main() {
	store := durable.Default()
	pkgs := rpm_exact.Deps(store)
	ansible.Main(service.Spec(), service.Handler(service.Deps{
		Packages:  service.Packages(pkgs),
		Files:     service.Files(unit_override.Deps()),
		Processes: service.Processes(systemd_lifecycle.Deps),
		Configs:   service.ConfigFiles{Runner: runner.Exec{}, Lock: lock.In(lock.Dir())},
		// Tree validators in a private mount namespace: this binary, re-executed.
		Tree: mountns.Runner{},
		MarkSync: func(ctx context.Context, reason string) error {
			_, err := store.MarkManagerSyncDue(ctx, reason)
			return err
		},
		Predict: service.Predictor{Runner: runner.Exec{}},
		Pending: store,
		SyncDue: func() bool {
			seen, err := store.ManagerSync()
			return err == nil && seen.Due()
		},
		Lock: lock.In(lock.Dir()),
		// The reload capability, checked before any change (the real root).
		// The manager is asked, read only, for a unit in no unit directory on disk.
		Units: &service.UnitFiles{Manager: systemd.Systemctl{Runner: runner.Exec{}}},
		Rollback: &service.Rollbacks{
			Store: rollback.Store{},
			Keeper: func(name string) service.Keeper {
				return rollback.Keeper{Runner: runner.Exec{}, Scope: rollback.Key(name)}
			},
			Txn:    pkgs.Txn,
			Runner: runner.Exec{},
		},
		Reload: func(ctx context.Context) error {
			return systemd.ReloadSeen(ctx, systemd.Systemctl{Runner: runner.Exec{}}, store)
		},
	}))
}
