// Command systemd_lifecycle is the richt.services.systemd_lifecycle Ansible module: one
// unit's run state and boot state, with restart/reload reactions to other tasks' changes.
package main

import (
	"github.com/richt/services/pkg/ansible"
	"github.com/richt/services/pkg/durable"
	"github.com/richt/services/pkg/lifecycle"
	"github.com/richt/services/pkg/runner"
)

func main() {
	ansible.Main(lifecycle.Spec(), lifecycle.Handler(lifecycle.Deps{
		Systemd: lifecycle.Systemctl{Runner: runner.Exec{}},
		Store:   durable.Default(),
	}))
}
