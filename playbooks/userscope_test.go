package playbooks_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// systemd_lifecycle scope=user through ansible-playbook with become_user, on the fast path
// (pipelining) and on Ansible's normal path: converge, then idempotence.
func TestUserUnitThroughBecomeUser(t *testing.T) {
	t.Parallel()
	tg := target(t)
	tg.AddUserWithManager(t, "alice")
	require.NoError(t, tg.WriteFile(context.Background(), "/home/alice/.config/systemd/user/hello.service",
		[]byte("[Service]\nExecStart=/bin/sleep infinity\n\n[Install]\nWantedBy=default.target\n"), 0o644))
	tg.MustExec(t, "chown", "-R", "alice:alice", "/home/alice/.config")
	userctl := "runuser -u alice -- env XDG_RUNTIME_DIR=/run/user/$(id -u alice) systemctl --user "
	for _, path := range []struct{ name, pipelining string }{{"fast path", "1"}, {"normal path", "0"}} {
		t.Run(path.name, func(t *testing.T) {
			tg.Shell(t, userctl+"disable --now hello.service")
			p := play(t, "testdata/userunit.yml", tg)
			p.Connection = "ssh"
			p.Env = []string{"ANSIBLE_PIPELINING=" + path.pipelining}
			r := p.RunOK(t)
			assert.Equal(t, 1, r.Changed(), "started and enabled")
			assert.Equal(t, "active\n", tg.Shell(t, userctl+"is-active hello.service"))
			assert.Equal(t, "enabled\n", tg.Shell(t, userctl+"is-enabled hello.service"))
			r = p.RunOK(t)
			assert.Equal(t, 0, r.Changed(), fmt.Sprintf("idempotent on the %s", path.name))
		})
	}
}
