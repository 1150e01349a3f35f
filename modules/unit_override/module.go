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

// Handler is unit_override's behaviour on this target.
func Handler() ansible.Handler {
	return override.Handler(Deps())
}

// Deps are unit_override's side effects on this target: commands, the durable records,
// the unit locks. The service module's files step runs on the same.
func Deps() override.Deps {
	return override.Deps{
		Runner: runner.Exec{},
		Sync:   durable.Default(),
		Lock:   lock.In(lock.Dir()),
	}
}
