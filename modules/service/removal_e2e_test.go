package service_test

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A removal plans every step before its first one runs, the packages' removal too, but
// takes the transaction lock only at the packages' turn, not across the process's stop.
// Here the unit's own stop runs another package transaction (an upgrade of demo, without
// scriptlets: they would wait for the stop they run in): at its turn the packages step
// finds another build than the one its plan reported and fails naming both, removing
// nothing; the steps before it stand and the manager forgets the removed files. Once the
// other transaction is out of the way, the removal goes through.
func TestServiceRemovalFailsWhenThePackagesMoveDuringIt(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	r := e.run(t, demo(v1, "debug"))
	require.False(t, r.Failed(), r.Msg())
	const dropin = "/run/systemd/system/demo.service.d/99-upgrade-on-stop.conf"
	upgrade := "[Service]\nExecStopPost=dnf -y -q --setopt=tsflags=noscripts install demo-" + strings.TrimPrefix(v2, "0:") + "\n"
	require.NoError(t, e.t.WriteFile(ctx, dropin, []byte(upgrade), 0o644))
	e.t.MustExec(t, "systemctl", "daemon-reload")

	r = e.run(t, with(demo(v1, "debug"), "state", "absent"))
	require.True(t, r.Failed(), "the packages moved under the removal")
	assert.Equal(t, "packages", r.String("failed_step"))
	// The entries name the package, the builds say which: the manager reload recorded due
	// (record-reload-due) comes with removing a package that ships a unit.
	assert.Contains(t, r.Msg(), "its plan was remove demo, record-reload-due (installed: demo-"+v1+")")
	assert.Contains(t, r.Msg(), "it is remove demo, record-reload-due (installed: demo-"+v2+") now")
	assert.Contains(t, r.Msg(), "nothing was removed")
	assert.Contains(t, r.Strings("plan"), "packages: remove demo", "the plan reported is the one read ahead")
	assert.Equal(t, "demo-2.0-1.noarch", strings.TrimSpace(e.t.MustExec(t, "rpm", "-q", "demo")), "the other transaction's build stays")
	active, err := e.t.Exec(ctx, "systemctl", "is-active", "demo.service")
	require.NoError(t, err)
	assert.NotEqual(t, "active", strings.TrimSpace(active.Stdout), "the process step before it stands")
	assert.Equal(t, "performed", r.String("manager_reload"), "the files it removed are forgotten by the manager")

	e.t.MustExec(t, "rm", "-f", dropin)
	e.t.MustExec(t, "systemctl", "daemon-reload")
	r = e.run(t, with(demo(v1, "debug"), "state", "absent"))
	require.False(t, r.Failed(), r.Msg())
	res, err := e.t.Exec(ctx, "rpm", "-q", "demo")
	require.NoError(t, err)
	assert.NotZero(t, res.ExitCode, "removed")
}
