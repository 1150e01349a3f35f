// Package unit_override is the richt.services.unit_override Ansible module: an owned
// systemd unit file or drop-in, written atomically, with systemd's manager kept in sync.
package unit_override

import (
	"github.com/richt/services/pkg/ansible"
	"github.com/richt/services/pkg/durable"
	"github.com/richt/services/pkg/lock"
	"github.com/richt/services/pkg/override"
	"github.com/richt/services/pkg/runner"
)

// Main runs the module as a process (see ansible.Main); the collection's multi-call binary
// (cmd/richt-modules) calls it with os.Args set to this module's command line.
func Main() {
	ansible.Main(override.Spec(), Handler())
}

// Handler is the module's behaviour over the target's real side effects (the service
// module runs it as one of its steps).
func Handler() ansible.Handler {
	return override.Handler(override.Deps{
		Runner: runner.Exec{},
		Sync:   durable.Default(),
		Lock:   lock.In(lock.Dir()),
	})
}
