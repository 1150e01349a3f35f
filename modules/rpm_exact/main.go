// Command rpm_exact is the richt.services.rpm_exact Ansible module: one RPM package at an
// exact version, present or absent, through DNF 4.
package main

import (
	"github.com/richt/services/pkg/ansible"
	"github.com/richt/services/pkg/durable"
	"github.com/richt/services/pkg/rpmexact"
	"github.com/richt/services/pkg/runner"
)

func main() {
	store := durable.Default()
	ansible.Main(rpmexact.Spec(), rpmexact.Handler(rpmexact.Deps{
		Runner:   runner.Exec{},
		Sync:     store,
		Memo:     store,
		Identify: rpmexact.ExecutableIdentity,
		Queries:  rpmexact.DefaultQueryMemo(),
	}))
}
