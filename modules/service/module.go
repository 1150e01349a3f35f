// Package service is the richt.services.service Ansible module: one whole service
// (packages, owned unit files and drop-ins, processes) in one task and one process on the
// target, from the three other modules' own steps.
package service

import (
	"context"

	"github.com/richt/services/modules/rpm_exact"
	"github.com/richt/services/modules/systemd_lifecycle"
	"github.com/richt/services/modules/unit_override"
	"github.com/richt/services/pkg/ansible"
	"github.com/richt/services/pkg/durable"
	"github.com/richt/services/pkg/lifecycle"
	"github.com/richt/services/pkg/lock"
	"github.com/richt/services/pkg/override"
	"github.com/richt/services/pkg/rpmexact"
	"github.com/richt/services/pkg/runner"
	"github.com/richt/services/pkg/service"
	"github.com/richt/services/pkg/systemd"
)

// Main runs the module as a process (see ansible.Main); the collection's multi-call binary
// (cmd/richt-modules) calls it with os.Args set to this module's command line.
func Main() {
	store := durable.Default()
	ansible.Main(service.Spec(), service.Handler(service.Deps{
		Packages:  service.Module{Spec: rpmexact.Spec(), Handler: rpm_exact.Handler()},
		Files:     service.Module{Spec: override.Spec(), Handler: unit_override.Handler()},
		Processes: service.Module{Spec: lifecycle.Spec(), Handler: systemd_lifecycle.Handler()},
		// The packages step's plan, made as rpm_exact makes it: the same query memo and
		// the same remembered manager check, so planning costs no more than the step's own.
		Predict: service.Predictor{Packages: rpmexact.Deps{Runner: runner.Exec{}, Queries: rpmexact.DefaultQueryMemo(),
			Memo: store, Identify: rpmexact.ExecutableIdentity,
			Files: &rpmexact.ManagerFiles{Locate: rpmexact.LocateCommand, ReadFile: rpmexact.ReadManagerFile}}},
		Pending: store,
		SyncDue: func() bool {
			seen, err := store.ManagerSync()
			return err == nil && seen.Due()
		},
		Lock: lock.In(lock.Dir()),
		Reload: func(ctx context.Context) error {
			return systemd.ReloadSeen(ctx, systemd.Systemctl{Runner: runner.Exec{}}, store)
		},
	}))
}
