package testenv_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/richt/services/testenv"
	"github.com/richt/services/testenv/fixtures"
)

// A package shipping a unit with EL's systemd scriptlets, and one that needs an exact
// build of another.
func ExamplePackage_systemdUnits() {
	unit := "[Service]\nExecStart=/usr/bin/app\n[Install]\nWantedBy=multi-user.target\n"
	app := testenv.Package{
		Name: "app", Version: "2.0",
		Files:        map[string]testenv.File{"/usr/lib/systemd/system/app.service": {Content: unit}},
		SystemdUnits: []string{"app.service"}, // %systemd_post, %systemd_preun, %systemd_postun_with_restart
		Requires:     []string{"acc-lib = 1.0-1"},
	}
	fmt.Println(app.NEVRA())
	// Output: app-0:2.0-1.noarch
}

// elUnit is a unit whose Description names the version, so that every version ships a
// different file and the loaded Description tells which one systemd read.
func elUnit(name, version string) string {
	return fmt.Sprintf("[Unit]\nDescription=richt %s %s\n\n[Service]\nExecStart=%s %s\n\n[Install]\nWantedBy=multi-user.target\n",
		name, version, fixtures.TestDaemonPath, name)
}

func elService(name, version string, noRestart bool) testenv.Package {
	return testenv.Package{
		Name: name, Version: version,
		Files:        map[string]testenv.File{"/usr/lib/systemd/system/" + name + ".service": {Content: elUnit(name, version)}},
		SystemdUnits: []string{name + ".service"},
		NoRestart:    noRestart,
	}
}

func dnf(t *testing.T, tg *testenv.Target, args ...string) testenv.ExecResult {
	t.Helper()
	res, err := tg.Exec(context.Background(), append([]string{"dnf", "-y"}, args...)...)
	require.NoError(t, err)
	return res
}

func dnfOK(t *testing.T, tg *testenv.Target, args ...string) {
	t.Helper()
	if res := dnf(t, tg, args...); res.ExitCode != 0 {
		t.Fatalf("dnf %s exited %d:\n%s\n%s", strings.Join(args, " "), res.ExitCode, res.Stdout, res.Stderr)
	}
}

func show(t *testing.T, tg *testenv.Target, unit, prop string) string {
	t.Helper()
	return strings.TrimSpace(tg.MustExec(t, "systemctl", "show", "--value", "-p", prop, unit))
}

// TestELBase: the rpmdb provides what EL's provides, presets disable what no preset
// enables, and DNF runs with EL's dnf.conf.
func TestELBase(t *testing.T) {
	t.Parallel()
	e2e(t)
	tg := testenv.Start(t)
	ctx := context.Background()

	if os.Getenv("TESTENV_IMAGE") == "" {
		tg.MustExec(t, "rpm", "-q", "richt-el-base")
	}
	for _, dep := range []string{"/bin/sh", "/bin/bash", "systemd"} {
		tg.MustExec(t, "rpm", "-q", "--whatprovides", dep)
	}

	unit := "[Service]\nExecStart=/bin/sleep infinity\n[Install]\nWantedBy=multi-user.target\n"
	require.NoError(t, tg.WriteFile(ctx, "/etc/systemd/system/presetme.service", []byte(unit), 0o644))
	tg.MustExec(t, "systemctl", "enable", "presetme.service")
	tg.MustExec(t, "systemctl", "preset", "presetme.service")
	res, err := tg.Exec(ctx, "systemctl", "is-enabled", "presetme.service")
	require.NoError(t, err)
	assert.Equal(t, "disabled", strings.TrimSpace(res.Stdout), "no preset enables it, so EL's default disables it")
	tg.MustExec(t, "systemctl", "preset", "remote-fs.target")
	assert.Equal(t, "enabled", strings.TrimSpace(tg.MustExec(t, "systemctl", "is-enabled", "remote-fs.target")),
		"systemd's own presets still apply")

	conf := tg.MustExec(t, "python3", "-c", `import dnf
b = dnf.Base()
b.conf.read()
for k in ("best", "installonly_limit", "clean_requirements_on_remove", "skip_if_unavailable"):
    print(k, getattr(b.conf, k))
`)
	assert.Equal(t, "best True\ninstallonly_limit 3\nclean_requirements_on_remove True\nskip_if_unavailable False\n", conf)

	repo := testenv.Repo(t,
		testenv.Package{Name: "bestpick", Version: "1.0"},
		testenv.Package{Name: "bestpick", Version: "2.0", Requires: []string{"richt-nothing-provides-this"}},
		testenv.Package{Name: "acc-lib", Version: "1.0"},
		testenv.Package{Name: "acc-lib", Version: "2.0"},
		testenv.Package{Name: "acc-app", Version: "1.0", Requires: []string{"acc-lib = 1.0-1"},
			Scriptlets: map[string]string{"post": "echo installed > /var/tmp/acc-app-post"}},
	)
	require.NoError(t, tg.AddRepo(ctx, "el", repo))

	res = dnf(t, tg, "install", "bestpick")
	assert.NotEqual(t, 0, res.ExitCode, "best=True refuses an older build when the newest cannot be installed:\n%s", res.Stdout)
	dnfOK(t, tg, "--setopt=best=False", "install", "bestpick")
	assert.Equal(t, "bestpick-1.0-1.noarch\n", tg.MustExec(t, "rpm", "-q", "bestpick"))

	dnfOK(t, tg, "install", "acc-app")
	assert.Equal(t, "acc-lib-1.0-1.noarch\n", tg.MustExec(t, "rpm", "-q", "acc-lib"), "the exact Requires wins over the newest build")
	assert.Equal(t, "installed\n", tg.MustExec(t, "cat", "/var/tmp/acc-app-post"), "a scriptlet needs no /bin/sh package from the repository")
}

// TestELSystemdScriptlets: a package with EL's systemd scriptlets is preset on install,
// restarted exactly once by an upgrade after the manager loaded the new unit, and stopped
// and disabled by its removal.
func TestELSystemdScriptlets(t *testing.T) {
	t.Parallel()
	e2e(t)
	tg := testenv.Start(t)
	ctx := context.Background()
	fixtures.InstallTestDaemon(t, tg)
	repo := testenv.Repo(t,
		elService("elsvc", "1.0", false), elService("elsvc", "2.0", false),
		elService("elquiet", "1.0", true), elService("elquiet", "2.0", true))
	require.NoError(t, tg.AddRepo(ctx, "el", repo))
	tg.LogUnitOnFailure(t, "elsvc.service")

	dnfOK(t, tg, "install-nevra", "elsvc-0:1.0-1.noarch", "elquiet-0:1.0-1.noarch")
	for _, u := range []string{"elsvc.service", "elquiet.service"} {
		assert.Equal(t, "disabled", show(t, tg, u, "UnitFileState"), "%%systemd_post presets %s", u)
	}
	tg.MustExec(t, "systemctl", "start", "elsvc.service", "elquiet.service")
	starts, _ := fixtures.Events(t, tg, "elsvc")
	require.Equal(t, 1, starts)

	dnfOK(t, tg, "install-nevra", "elsvc-0:2.0-1.noarch", "elquiet-0:2.0-1.noarch")
	starts, _ = fixtures.Events(t, tg, "elsvc")
	assert.Equal(t, 2, starts, "an upgrade restarts the unit exactly once")
	quiet, _ := fixtures.Events(t, tg, "elquiet")
	assert.Equal(t, 1, quiet, "%systemd_postun leaves the unit running")
	for _, u := range []string{"elsvc.service", "elquiet.service"} {
		assert.Equal(t, "active", show(t, tg, u, "ActiveState"), u)
		assert.Equal(t, "no", show(t, tg, u, "NeedDaemonReload"), u)
		assert.Contains(t, show(t, tg, u, "Description"), " 2.0", "the manager loaded the new unit file of %s", u)
	}
	assert.Equal(t, "", tg.Shell(t, "ls -A /run/systemd/rpm/restart 2>/dev/null || true"), "no restart marker is left")

	tg.MustExec(t, "systemctl", "enable", "elsvc.service")
	dnfOK(t, tg, "remove", "elsvc")
	assert.Equal(t, "inactive", show(t, tg, "elsvc.service", "ActiveState"))
	assert.Equal(t, "not-found", show(t, tg, "elsvc.service", "LoadState"), "the manager was reloaded after the removal")
	assert.Equal(t, "gone\n", tg.Shell(t, "test -e /etc/systemd/system/multi-user.target.wants/elsvc.service || echo gone"),
		"%systemd_preun disabled the unit")
}
