// Command unit_override is the richt.services.unit_override Ansible module: an owned
// systemd unit file or drop-in, written atomically, with systemd's manager kept in sync.
package main

import (
	"github.com/richt/services/pkg/ansible"
	"github.com/richt/services/pkg/durable"
	"github.com/richt/services/pkg/lock"
	"github.com/richt/services/pkg/override"
	"github.com/richt/services/pkg/runner"
)

func main() {
	ansible.Main(override.Spec(), override.Handler(override.Deps{
		Runner: runner.Exec{},
		Sync:   durable.Default(),
		Lock:   lock.In(lock.Dir()),
	}))
}
