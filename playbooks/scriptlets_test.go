package playbooks_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/richt/services/testenv"
	"github.com/richt/services/testenv/fixtures"
)

// elService is a package built the way EL builds one with a unit: its scriptlets apply
// the presets on install, stop and disable on removal, and restart the unit once at the
// end of an upgrade or downgrade transaction (unless noRestart: %systemd_postun). The
// unit runs testenv's TestDaemon, which counts its starts.
func elService(name, version string, noRestart bool) testenv.Package {
	unit := fmt.Sprintf("[Unit]\nDescription=%s %s\n\n[Service]\nExecStart=%s %s\n\n[Install]\nWantedBy=multi-user.target\n",
		name, version, fixtures.TestDaemonPath, name)
	return testenv.Package{Name: name, Version: version, SystemdUnits: []string{name + ".service"}, NoRestart: noRestart,
		Files: map[string]testenv.File{
			"/usr/lib/systemd/system/" + name + ".service": {Content: unit},
			"/usr/share/" + name + "/VERSION":              {Content: version + "\n"},
		}}
}

func elRepo(t *testing.T) string {
	var pkgs []testenv.Package
	for _, v := range []string{"1.0", "2.0", "3.0"} {
		pkgs = append(pkgs, elService("elsvc", v, false), elService("nrsvc", v, true))
	}
	return testenv.Repo(t, pkgs...)
}

func elTarget(t *testing.T) *testenv.Target {
	t.Helper()
	if testing.Short() {
		t.Skip("end-to-end: needs Docker and ansible-playbook")
	}
	tg := testenv.Start(t)
	fixtures.InstallTestDaemon(t, tg)
	require.NoError(t, tg.AddRepo(context.Background(), "el", elRepo(t)))
	return tg
}

// A package that restarts its own unit in the transaction, then restart_on that
// package: the unit starts once, not twice. A drop-in written after the transaction still
// restarts it. A package without the restart scriptlet gets exactly our restart.
func TestScriptletRestartsAreNotRepeated(t *testing.T) {
	t.Parallel()
	tg := elTarget(t)
	run := func(t *testing.T, pkg, version, level string) testenv.PlaybookResult {
		t.Helper()
		p := play(t, "testdata/scriptlets.yml", tg)
		p.ExtraVars = map[string]any{"pkg": pkg, "pkg_version": version, "level": level}
		return p.RunOK(t)
	}
	for _, pkg := range []string{"elsvc", "nrsvc"} {
		tg.LogUnitOnFailure(t, pkg+".service")
		run(t, pkg, "1.0", "a")
		starts, _ := fixtures.Events(t, tg, pkg)
		require.Equal(t, 1, starts, "%s: installed (presets leave it disabled) and started once", pkg)
	}

	t.Run("upgrade: the scriptlet's restart is the only one", func(t *testing.T) {
		before, _ := fixtures.Events(t, tg, "elsvc")
		r := run(t, "elsvc", "2.0", "a")
		after, _ := fixtures.Events(t, tg, "elsvc")
		assert.Equal(t, 1, after-before, "exactly one start in total")
		assert.Contains(t, r.Output, "reaction=served actions=")
		assert.Equal(t, "no\n", tg.MustExec(t, "systemctl", "show", "-p", "NeedDaemonReload", "--value", "elsvc.service"))
	})

	t.Run("a drop-in changed after the transaction restarts once more", func(t *testing.T) {
		before, _ := fixtures.Events(t, tg, "elsvc")
		r := run(t, "elsvc", "3.0", "b")
		after, _ := fixtures.Events(t, tg, "elsvc")
		assert.Equal(t, 2, after-before, "the scriptlet's restart, then ours for the drop-in")
		assert.Contains(t, r.Output, "reaction=restart actions=daemon-reload,restart")
	})

	t.Run("downgrade: again only the scriptlet's restart", func(t *testing.T) {
		before, _ := fixtures.Events(t, tg, "elsvc")
		run(t, "elsvc", "2.0", "b")
		after, _ := fixtures.Events(t, tg, "elsvc")
		assert.Equal(t, 1, after-before)
	})

	t.Run("a package without the restart scriptlet: exactly our restart", func(t *testing.T) {
		before, _ := fixtures.Events(t, tg, "nrsvc")
		r := run(t, "nrsvc", "2.0", "a")
		after, _ := fixtures.Events(t, tg, "nrsvc")
		assert.Equal(t, 1, after-before)
		assert.Contains(t, r.Output, "reaction=restart actions=daemon-reload,restart")
	})
}

// The service role on an EL-packaged service: converge, upgrade, idempotence, downgrade;
// one start per upgrade or downgrade.
func TestRoleOnScriptletService(t *testing.T) {
	t.Parallel()
	tg := elTarget(t)
	tg.LogUnitOnFailure(t, "elsvc.service")
	role := func(version string) testenv.Playbook {
		p := play(t, "testdata/elservice.yml", tg)
		p.ExtraVars = map[string]any{"pkg_version": version}
		p.Args = []string{"-v"}
		return p
	}
	starts := func() int { s, _ := fixtures.Events(t, tg, "elsvc"); return s }

	role("1.0").RunOK(t)
	assert.Equal(t, 1, starts(), "converged: installed, started once")
	assert.Equal(t, "enabled\n", tg.MustExec(t, "systemctl", "is-enabled", "elsvc.service"))
	assert.Equal(t, 0, role("1.0").RunOK(t).Changed(), "idempotent")

	for i, v := range []string{"2.0", "1.0"} {
		before := starts()
		r := role(v).RunOK(t)
		if !assert.Equal(t, 1, starts()-before, "one start for the move to %s", v) {
			t.Log(r.Output)
		}
		// The role's one task: the packages step, and the process step that reloads the
		// manager the package's unit file change asks for and leaves the restart to the one
		// the scriptlet did.
		assert.Equal(t, 1, r.Changed(), "the service task (round %d): %v", i, r.ChangedTasks)
		assert.Regexp(t, `"reaction":\s*"served"`, r.Output)
		assert.Regexp(t, `"actions":\s*\[\s*"daemon-reload"\s*\]`, r.Output)
		assert.Equal(t, 0, role(v).RunOK(t).Changed(), "idempotent at %s", v)
	}
}
