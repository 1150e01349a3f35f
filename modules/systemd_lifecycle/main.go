// Command systemd_lifecycle is the richt.services.systemd_lifecycle Ansible module: one
// unit's run state and boot state, with restart/reload reactions to other tasks' changes.
package main

import (
	"context"
	"os"

	"github.com/richt/services/pkg/ansible"
	"github.com/richt/services/pkg/durable"
	"github.com/richt/services/pkg/lifecycle"
	"github.com/richt/services/pkg/runner"
)

func main() {
	sd, closeFn, err := lifecycle.NewSystemd(context.Background(), runner.Exec{}, os.Getenv(lifecycle.BackendEnv))
	if err != nil {
		ansible.Main(lifecycle.Spec(), ansible.Fail(err))
		return
	}
	defer closeFn()
	ansible.Main(lifecycle.Spec(), lifecycle.Handler(lifecycle.Deps{Systemd: sd, Store: durable.Default()}))
}
