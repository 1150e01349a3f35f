// Package rpm_exact is the richt.services.rpm_exact Ansible module: one RPM package at an
// exact version, present or absent, through DNF 4.
package rpm_exact

import (
	"os"

	"github.com/richt/services/pkg/ansible"
	"github.com/richt/services/pkg/dnfscript"
	"github.com/richt/services/pkg/durable"
	"github.com/richt/services/pkg/rpmexact"
	"github.com/richt/services/pkg/runner"
)

// Main runs the module as a process (see ansible.Main); the collection's multi-call binary
// (cmd/richt-modules) calls it with os.Args set to this module's command line.
func Main() {
	store := durable.Default()
	// Started again as a transaction's supervisor (package rpmexact, detached.go): with the
	// directory in the environment and no argument at all. A module run (arguments file or
	// stdin) is never one, whatever a task's environment sets.
	if dir := os.Getenv(rpmexact.SuperviseEnv); dir != "" && len(os.Args) == 1 {
		os.Exit(rpmexact.Supervise(dir, store, rpmexact.DefaultQueryMemo()))
	}
	os.Unsetenv(rpmexact.SuperviseEnv)
	ansible.Main(rpmexact.Spec(), Handler())
}

// Handler is rpm_exact's behaviour on this target.
func Handler() ansible.Handler {
	return rpmexact.Handler(Deps(durable.Default()))
}

// Deps are rpm_exact's side effects on this target, with store for its records: rpm and
// DNF, detached transactions, the remembered manager checks and rpm answers. The service
// module's packages step runs on the same.
func Deps(store *durable.Store) rpmexact.Deps {
	return rpmexact.Deps{
		Runner:   runner.Exec{},
		Txn:      rpmexact.DefaultDetached(store),
		Memo:     store,
		Identify: rpmexact.ExecutableIdentity,
		Queries:  rpmexact.DefaultQueryMemo(),
		Files:    &rpmexact.ManagerFiles{Locate: dnfscript.LocateCommand, ReadFile: dnfscript.ReadFile},
	}
}
