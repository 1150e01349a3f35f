package systemd_lifecycle_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/richt/services/modules"
	"github.com/richt/services/testenv"
	"github.com/richt/services/testenv/fixtures"
)

type env struct {
	t       *testenv.Target
	module  string
	backend string
}

// backends are the two ways the module talks to systemd; every end-to-end test runs on
// both. The module prefers D-Bus and falls back to systemctl.
var backends = []string{"dbus", "systemctl"}

// forBackends runs one end-to-end test body per backend, each on its own target.
func forBackends(t *testing.T, body func(t *testing.T, e *env)) {
	for _, b := range backends {
		t.Run(b, func(t *testing.T) {
			t.Parallel()
			body(t, newEnv(t, b))
		})
	}
}

func newEnv(t *testing.T, backend string) *env {
	t.Helper()
	if testing.Short() {
		t.Skip("end-to-end: needs Docker")
	}
	// The module's 5s default is for a host doing one thing; a test that is not about the
	// deadline gets one that fits a loaded test machine, and a test about it sets its own.
	lifecycle := testenv.BuildModule(t, modules.Command, testenv.Named("systemd_lifecycle"),
		testenv.Defaults(map[string]any{"timeout": testenv.ModuleTimeout()}))
	e := &env{t: testenv.Start(t), module: lifecycle, backend: backend}
	fixtures.InstallTestDaemon(t, e.t)
	return e
}

// unit writes /etc/systemd/system/NAME.service running the test daemon; extra lines go
// into [Service].
func (e *env) unit(t *testing.T, name string, service ...string) string {
	t.Helper()
	content := fmt.Sprintf("[Unit]\nDescription=test %s\n\n[Service]\nExecStart=%s %s\n%s\n[Install]\nWantedBy=multi-user.target\n",
		name, fixtures.TestDaemonPath, name, strings.Join(service, "\n"))
	require.NoError(t, e.t.WriteFile(context.Background(), "/etc/systemd/system/"+name+".service", []byte(content), 0o644))
	e.t.LogUnitOnFailure(t, name+".service")
	return name + ".service"
}

// startDaemon starts a unit of e.unit and waits until its daemon has recorded the start:
// systemctl start returns once the process is forked, and a signal that comes at once (a
// run's stop or reload right after, with nothing slow in between) would reach the shell
// before it wrote its first line or set its traps.
func (e *env) startDaemon(t *testing.T, unit string) {
	t.Helper()
	e.t.MustExec(t, "systemctl", "start", unit)
	fixtures.Events(t, e.t, strings.TrimSuffix(unit, ".service"))
}

const reloadable = "ExecReload=/bin/kill -HUP $MAINPID"

func (e *env) run(t *testing.T, args map[string]any) testenv.Result {
	t.Helper()
	return e.t.RunModuleEnv(t, e.module, args, "RICHT_SYSTEMD_BACKEND="+e.backend)
}

func ok(t *testing.T, r testenv.Result) {
	t.Helper()
	require.False(t, r.Failed(), "module failed: %s", r.Msg())
}

func actions(r testenv.Result) []string { return r.Strings("actions") }

var changed = map[string]any{"changed": true}
var unchanged = map[string]any{"changed": false}

func TestRunAndBootState(t *testing.T) {
	t.Parallel()
	forBackends(t, testRunAndBootState)
}

func testRunAndBootState(t *testing.T, e *env) {

	t.Run("start from stopped, then converged", func(t *testing.T) {
		u := e.unit(t, "a1")
		before := e.t.Snapshot(t, u)
		r := e.run(t, map[string]any{"unit": "a1", "_ansible_diff": true})
		ok(t, r)
		assert.True(t, r.Changed())
		assert.Equal(t, []string{"start"}, actions(r))
		assert.Equal(t, testenv.Started, testenv.Classify(before, e.t.Snapshot(t, u)))
		assert.Equal(t, "state: stopped\nenabled: false\n", r.Map("diff")["before"])
		assert.Equal(t, "state: running\nenabled: false\n", r.Map("diff")["after"])

		mid := e.t.Snapshot(t, u)
		r = e.run(t, map[string]any{"unit": u})
		ok(t, r)
		assert.False(t, r.Changed())
		assert.Empty(t, actions(r))
		assert.Equal(t, testenv.Untouched, testenv.Classify(mid, e.t.Snapshot(t, u)))
	})

	t.Run("stop from running", func(t *testing.T) {
		u := e.unit(t, "a2")
		e.startDaemon(t, u)
		r := e.run(t, map[string]any{"unit": u, "state": "stopped"})
		ok(t, r)
		assert.Equal(t, []string{"stop"}, actions(r))
		assert.Equal(t, "inactive", e.t.Snapshot(t, u).ActiveState)
	})

	t.Run("enable without starting, then stopped and enabled is converged", func(t *testing.T) {
		u := e.unit(t, "a3")
		r := e.run(t, map[string]any{"unit": u, "state": "stopped", "enabled": true})
		ok(t, r)
		assert.Equal(t, []string{"enable"}, actions(r))
		s := e.t.Snapshot(t, u)
		assert.Equal(t, "enabled", s.UnitFileState)
		assert.Equal(t, "inactive", s.ActiveState, "enabling never starts")
		r = e.run(t, map[string]any{"unit": u, "state": "stopped", "enabled": true})
		ok(t, r)
		assert.False(t, r.Changed())
	})

	t.Run("disable while running keeps it running", func(t *testing.T) {
		u := e.unit(t, "a4")
		e.t.MustExec(t, "systemctl", "enable", "--now", u)
		before := e.t.Snapshot(t, u)
		r := e.run(t, map[string]any{"unit": u, "enabled": false})
		ok(t, r)
		assert.Equal(t, []string{"disable"}, actions(r))
		after := e.t.Snapshot(t, u)
		assert.Equal(t, "disabled", after.UnitFileState)
		assert.Equal(t, testenv.Untouched, testenv.Classify(before, after), "disabling never stops or restarts")
	})

	t.Run("enable and start in one run", func(t *testing.T) {
		u := e.unit(t, "a5")
		r := e.run(t, map[string]any{"unit": u, "enabled": true})
		ok(t, r)
		assert.Equal(t, []string{"enable", "start"}, actions(r))
		assert.Equal(t, map[string]any{"state": "running", "enabled": true, "unit_file_state": "enabled", "load_state": "loaded"}, r.Map("after"))
	})

	t.Run("a unit file change and an enable share one manager reload", func(t *testing.T) {
		u := e.unit(t, "a7")
		dropIn := "/etc/systemd/system/" + u + ".d/10-env.conf"
		e.t.MustExec(t, "mkdir", "-p", "/etc/systemd/system/"+u+".d")
		require.NoError(t, e.t.WriteFile(context.Background(), dropIn, []byte("[Service]\nEnvironment=A7=synced\n"), 0o644))
		// The subject is the order of the steps, not the deadline (see "a start slower than
		// timeout fails on time"), so the run has the test-wide deadline (newEnv).
		r := e.run(t, map[string]any{"unit": u, "enabled": true,
			"restart_on": []any{map[string]any{"changed": true, "daemon_reload": "needed"}}})
		ok(t, r)
		want := []string{"enable", "daemon-reload", "start"} // D-Bus: the sync's reload serves the enable
		if e.backend == "systemctl" {
			want = []string{"daemon-reload", "enable", "start"} // systemctl enable reloads by itself
		}
		assert.Equal(t, want, actions(r))
		assert.Equal(t, "enabled", e.t.Snapshot(t, u).UnitFileState)
		assert.Equal(t, "A7=synced", strings.TrimSpace(e.t.MustExec(t, "systemctl", "show", "-P", "Environment", u)))
		// An enable leaves every unit NeedDaemonReload=yes until the next reload: the run's
		// reload came after it.
		for _, unit := range []string{u, "systemd-journald.service"} {
			assert.Equal(t, "no", strings.TrimSpace(e.t.MustExec(t, "systemctl", "show", "-P", "NeedDaemonReload", unit)), unit)
		}
	})

	t.Run("check mode changes nothing", func(t *testing.T) {
		u := e.unit(t, "a6", reloadable)
		r := e.run(t, map[string]any{"unit": u, "enabled": true, "_ansible_check_mode": true, "restart_on": []any{changed}})
		ok(t, r)
		assert.True(t, r.Changed())
		assert.Equal(t, []string{"enable", "start"}, actions(r))
		s := e.t.Snapshot(t, u)
		assert.Equal(t, "inactive", s.ActiveState)
		assert.Equal(t, "disabled", s.UnitFileState)
		e.startDaemon(t, u)
		before := e.t.Snapshot(t, u)
		r = e.run(t, map[string]any{"unit": u, "_ansible_check_mode": true, "reload_on": []any{changed}})
		ok(t, r)
		assert.Equal(t, []string{"reload"}, actions(r))
		assert.Equal(t, "reload", r.String("reaction"))
		_, reloads := fixtures.Events(t, e.t, "a6")
		assert.Zero(t, reloads)
		assert.Equal(t, testenv.Untouched, testenv.Classify(before, e.t.Snapshot(t, u)))
		e.t.MustExec(t, "test", "!", "-e", "/var/lib/richt/pending/"+u+".json")
	})

	t.Run("template instance", func(t *testing.T) {
		require.NoError(t, e.t.WriteFile(context.Background(), "/etc/systemd/system/web@.service",
			[]byte("[Service]\nExecStart="+fixtures.TestDaemonPath+" web-%i\n"+reloadable+"\n[Install]\nWantedBy=multi-user.target\n"), 0o644))
		r := e.run(t, map[string]any{"unit": "web@blue.service", "enabled": true, "reload_on": []any{unchanged}})
		ok(t, r)
		assert.Equal(t, []string{"enable", "start"}, actions(r))
		assert.Equal(t, "active", e.t.Snapshot(t, "web@blue.service").ActiveState)
		assert.Equal(t, true, r.Map("reload_capable")["capable"])
		starts, _ := fixtures.Events(t, e.t, "web-blue")
		assert.Equal(t, 1, starts)
	})
}

func TestReactions(t *testing.T) {
	t.Parallel()
	forBackends(t, testReactions)
}

func testReactions(t *testing.T, e *env) {

	start := func(t *testing.T, name string, extra ...string) (string, testenv.UnitSnapshot) {
		u := e.unit(t, name, extra...)
		e.startDaemon(t, u)
		return u, e.t.Snapshot(t, u)
	}

	t.Run("restart trigger restarts a running unit", func(t *testing.T) {
		u, before := start(t, "r1")
		r := e.run(t, map[string]any{"unit": u, "restart_on": []any{changed}})
		ok(t, r)
		assert.Equal(t, []string{"restart"}, actions(r))
		assert.Equal(t, "restart", r.String("reaction"))
		assert.Equal(t, []string{"restart_on[0]"}, r.Strings("triggers"))
		after := e.t.Snapshot(t, u)
		assert.Equal(t, testenv.Restarted, testenv.Classify(before, after))
		assert.Equal(t, float64(after.MainPID), r["main_pid"], "the result names the new main process")
	})

	t.Run("reload trigger sends SIGHUP and keeps the PID", func(t *testing.T) {
		u, before := start(t, "r2", reloadable)
		r := e.run(t, map[string]any{"unit": u, "reload_on": []any{map[string]any{"config": changed}}})
		ok(t, r)
		assert.Equal(t, []string{"reload"}, actions(r))
		assert.Equal(t, []string{"config"}, r.Strings("triggers"))
		after := e.t.Snapshot(t, u)
		assert.Equal(t, testenv.Reloaded, testenv.Classify(before, after))
		assert.Equal(t, before.MainPID, after.MainPID)
		starts, reloads := fixtures.Events(t, e.t, "r2")
		assert.Equal(t, 1, starts)
		assert.Equal(t, 1, reloads)
	})

	t.Run("restart and reload triggers: one restart", func(t *testing.T) {
		u, before := start(t, "r3", reloadable)
		r := e.run(t, map[string]any{"unit": u, "restart_on": []any{changed}, "reload_on": []any{changed}})
		ok(t, r)
		assert.Equal(t, []string{"restart"}, actions(r))
		assert.Equal(t, testenv.Restarted, testenv.Classify(before, e.t.Snapshot(t, u)))
		starts, reloads := fixtures.Events(t, e.t, "r3")
		assert.Equal(t, 2, starts)
		assert.Zero(t, reloads)
	})

	t.Run("two reload triggers: one reload", func(t *testing.T) {
		u, _ := start(t, "r4", reloadable)
		r := e.run(t, map[string]any{"unit": u, "reload_on": []any{changed, map[string]any{"changed": false, "results": []any{changed}}}})
		ok(t, r)
		assert.Equal(t, []string{"reload"}, actions(r))
		assert.Len(t, r.Strings("triggers"), 2)
		_, reloads := fixtures.Events(t, e.t, "r4")
		assert.Equal(t, 1, reloads)
	})

	t.Run("triggers on a stopped unit that should run: a start only", func(t *testing.T) {
		u := e.unit(t, "r5", reloadable)
		r := e.run(t, map[string]any{"unit": u, "restart_on": []any{changed}, "reload_on": []any{changed}})
		ok(t, r)
		assert.Equal(t, []string{"start"}, actions(r))
		assert.Equal(t, "none", r.String("reaction"))
		starts, reloads := fixtures.Events(t, e.t, "r5")
		assert.Equal(t, 1, starts)
		assert.Zero(t, reloads)
	})

	t.Run("triggers with desired stopped are ignored", func(t *testing.T) {
		u, _ := start(t, "r6")
		r := e.run(t, map[string]any{"unit": u, "state": "stopped", "restart_on": []any{changed}})
		ok(t, r)
		assert.Equal(t, []string{"stop"}, actions(r))
		assert.Equal(t, "ignored", r.String("reaction"))
		starts, _ := fixtures.Events(t, e.t, "r6")
		assert.Equal(t, 1, starts)
	})

	t.Run("reload_on without ExecReload fails in preparation, even unchanged", func(t *testing.T) {
		u, before := start(t, "r7")
		r := e.run(t, map[string]any{"unit": u, "reload_on": []any{unchanged}})
		require.True(t, r.Failed())
		assert.Contains(t, r.Msg(), "reload_on needs r7.service to be reload-capable")
		assert.Contains(t, r.Msg(), "no ExecReload=")
		assert.Empty(t, actions(r))
		assert.Equal(t, testenv.Untouched, testenv.Classify(before, e.t.Snapshot(t, u)))
	})

	t.Run("Type=notify-reload is reload-capable", func(t *testing.T) {
		if testenv.Suite() == "bookworm" {
			t.Skip("Type=notify-reload needs systemd 253; bookworm has 252")
		}
		// systemd-notify --reloading/--ready are what a notify-reload service sends.
		script := "#!/bin/sh\ntrap 'systemd-notify --reloading; echo reload >> /run/testd/nr; systemd-notify --ready' HUP\nsystemd-notify --ready\nwhile :; do sleep 1 & wait $!; done\n"
		require.NoError(t, e.t.WriteFile(context.Background(), "/usr/local/bin/nr", []byte(script), 0o755))
		require.NoError(t, e.t.WriteFile(context.Background(), "/etc/systemd/system/nr.service",
			[]byte("[Service]\nType=notify-reload\nNotifyAccess=all\nExecStart=/usr/local/bin/nr\n"), 0o644))
		e.t.MustExec(t, "mkdir", "-p", "/run/testd")
		e.t.MustExec(t, "systemctl", "start", "nr.service")
		before := e.t.Snapshot(t, "nr.service")
		r := e.run(t, map[string]any{"unit": "nr", "reload_on": []any{changed}})
		ok(t, r)
		assert.Equal(t, []string{"reload"}, actions(r))
		assert.Contains(t, r.Map("reload_capable")["reason"], "Type=notify-reload")
		// notify-reload runs no ExecReload=, so systemd keeps no trace of it: compare PIDs.
		assert.Equal(t, before.MainPID, e.t.Snapshot(t, "nr.service").MainPID)
		assert.Equal(t, "reload\n", e.t.MustExec(t, "cat", "/run/testd/nr"))
	})

	t.Run("same trigger name in both lists is refused", func(t *testing.T) {
		u := e.unit(t, "r8")
		r := e.run(t, map[string]any{"unit": u, "restart_on": []any{map[string]any{"cfg": changed}}, "reload_on": []any{map[string]any{"cfg": changed}}})
		require.True(t, r.Failed())
		assert.Contains(t, r.Msg(), `trigger "cfg" is in both restart_on and reload_on`)
	})
}

func TestFailuresAndSpecialUnits(t *testing.T) {
	t.Parallel()
	forBackends(t, testFailuresAndSpecialUnits)
}

func testFailuresAndSpecialUnits(t *testing.T, e *env) {

	t.Run("a process that exits at once fails the start with journal lines", func(t *testing.T) {
		require.NoError(t, e.t.WriteFile(context.Background(), "/etc/systemd/system/dies.service",
			[]byte("[Service]\nExecStart=/bin/sh -c 'echo dying-on-purpose; exit 3'\n"), 0o644))
		r := e.run(t, map[string]any{"unit": "dies"})
		require.True(t, r.Failed())
		assert.Contains(t, r.Msg(), "start dies.service failed: expected active")
		assert.Contains(t, r.Msg(), "dying-on-purpose", "journal lines are in the message")
		assert.NotEmpty(t, r.Strings("journal"))
	})

	t.Run("a start slower than timeout fails on time", func(t *testing.T) {
		e.unit(t, "slow", "ExecStartPre=/bin/sleep 30")
		began := time.Now()
		r := e.run(t, map[string]any{"unit": "slow", "timeout": "2s"})
		elapsed := time.Since(began)
		require.True(t, r.Failed())
		assert.Contains(t, r.Msg(), "deadline of 2s passed")
		assert.Contains(t, r.Msg(), "not rolled back")
		// ExecStartPre sleeps 30 s: a run back well before that was cut by its deadline,
		// whatever the machine's load adds to the 2 s.
		assert.Less(t, elapsed, 20*time.Second, "the deadline bounds the task")
	})

	t.Run("masked unit fails for running and for enabled", func(t *testing.T) {
		// Masking links /etc/systemd/system/UNIT to /dev/null, so the unit lives in /usr/lib.
		u := "m1.service"
		require.NoError(t, e.t.WriteFile(context.Background(), "/usr/lib/systemd/system/"+u,
			[]byte("[Service]\nExecStart="+fixtures.TestDaemonPath+" m1\n[Install]\nWantedBy=multi-user.target\n"), 0o644))
		e.t.MustExec(t, "systemctl", "mask", u)
		r := e.run(t, map[string]any{"unit": u})
		require.True(t, r.Failed())
		assert.Contains(t, r.Msg(), "is masked")
		r = e.run(t, map[string]any{"unit": u, "state": "stopped", "enabled": true})
		require.True(t, r.Failed())
		assert.Contains(t, r.Msg(), "cannot be enabled")
		r = e.run(t, map[string]any{"unit": u, "state": "stopped", "enabled": false})
		ok(t, r)
		assert.False(t, r.Changed())
	})

	t.Run("static unit with enabled: warning, no change", func(t *testing.T) {
		require.NoError(t, e.t.WriteFile(context.Background(), "/etc/systemd/system/st.service",
			[]byte("[Service]\nExecStart="+fixtures.TestDaemonPath+" st\n"), 0o644))
		r := e.run(t, map[string]any{"unit": "st", "state": "stopped", "enabled": true})
		ok(t, r)
		assert.False(t, r.Changed())
		require.Len(t, r.Strings("warnings"), 1)
		assert.Contains(t, r.Strings("warnings")[0], "unit file state is static")
	})

	t.Run("missing unit fails unless allowed", func(t *testing.T) {
		r := e.run(t, map[string]any{"unit": "nope"})
		require.True(t, r.Failed())
		assert.Contains(t, r.Msg(), "nope.service not found")
		r = e.run(t, map[string]any{"unit": "nope", "state": "stopped"})
		require.True(t, r.Failed())
		assert.Contains(t, r.Msg(), "allow_missing")
		r = e.run(t, map[string]any{"unit": "nope", "state": "stopped", "allow_missing": true})
		ok(t, r)
		assert.False(t, r.Changed())
		r = e.run(t, map[string]any{"unit": "nope", "allow_missing": true})
		require.True(t, r.Failed(), "allow_missing does not cover state: running")
	})

	t.Run("a unit file edited on disk is reloaded before the decision", func(t *testing.T) {
		u := e.unit(t, "ed")
		e.startDaemon(t, u)
		// Add ExecReload on disk; systemd's loaded copy does not have it yet.
		e.unit(t, "ed", reloadable)
		r := e.run(t, map[string]any{"unit": u, "reload_on": []any{changed}})
		ok(t, r)
		assert.Equal(t, []string{"daemon-reload", "reload"}, actions(r))
		assert.Contains(t, r.Strings("daemon_reload_reasons"), "systemd reports NeedDaemonReload=yes")
		_, reloads := fixtures.Events(t, e.t, "ed")
		assert.Equal(t, 1, reloads)
	})

	t.Run("a change NeedDaemonReload misses (old mtime, as after an rpm downgrade) is synced", func(t *testing.T) {
		u := e.unit(t, "old")
		e.startDaemon(t, u)
		e.unit(t, "old", reloadable)
		e.t.MustExec(t, "touch", "-d", "@1", "/etc/systemd/system/"+u)
		require.Contains(t, e.t.MustExec(t, "systemctl", "show", "-p", "NeedDaemonReload", u), "=no")
		r := e.run(t, map[string]any{"unit": u, "reload_on": []any{changed}})
		ok(t, r)
		assert.Equal(t, []string{"daemon-reload", "reload"}, actions(r))
		assert.Contains(t, r.Strings("daemon_reload_reasons")[0], "the manager says CanReload=false")
		_, reloads := fixtures.Events(t, e.t, "old")
		assert.Equal(t, 1, reloads)
	})

	t.Run("a recorded manager sync is performed without triggers", func(t *testing.T) {
		u := e.unit(t, "sy")
		e.startDaemon(t, u)
		e.t.Shell(t, "mkdir -p /var/lib/richt && echo 'test: unit files changed' > /var/lib/richt/manager-sync-due")
		r := e.run(t, map[string]any{"unit": u})
		ok(t, r)
		assert.Equal(t, []string{"daemon-reload"}, actions(r))
		e.t.MustExec(t, "test", "!", "-e", "/var/lib/richt/manager-sync-due")
	})

	t.Run("a failed restart is retried by the next run without a trigger, then cleared", func(t *testing.T) {
		u := e.unit(t, "rt")
		e.startDaemon(t, u)
		// Break the daemon so the restart fails.
		e.t.MustExec(t, "mv", fixtures.TestDaemonPath, fixtures.TestDaemonPath+".off")
		r := e.run(t, map[string]any{"unit": u, "restart_on": []any{changed}})
		e.t.MustExec(t, "mv", fixtures.TestDaemonPath+".off", fixtures.TestDaemonPath)
		require.True(t, r.Failed())
		assert.Contains(t, r.Msg(), "the restart stays due")
		e.t.MustExec(t, "test", "-e", "/var/lib/richt/pending/"+u+".json")

		// The unit failed, so the next run starts it; the start absorbs the pending restart.
		before := e.t.Snapshot(t, u)
		r = e.run(t, map[string]any{"unit": u, "restart_on": []any{unchanged}})
		ok(t, r)
		assert.Equal(t, []string{"start"}, actions(r))
		assert.Contains(t, r.String("pending_from_earlier_run"), "restart due since")
		assert.Equal(t, testenv.Started, testenv.Classify(before, e.t.Snapshot(t, u)))
		e.t.MustExec(t, "test", "!", "-e", "/var/lib/richt/pending/"+u+".json")

		// A pending restart recorded while the unit runs (stamped a microsecond after its
		// last activation) is carried out by the next run.
		e.t.Shell(t, `printf '{"reaction":"restart","since":"2026-01-01T00:00:00Z","at":{"boot_id":"'$(cat /proc/sys/kernel/random/boot_id)'","monotonic_us":'$(( $(systemctl show -p ActiveEnterTimestampMonotonic --value `+u+`) + 1 ))'}}' > /var/lib/richt/pending/`+u+`.json`)
		before = e.t.Snapshot(t, u)
		r = e.run(t, map[string]any{"unit": u, "restart_on": []any{unchanged}})
		ok(t, r)
		assert.Equal(t, []string{"restart"}, actions(r))
		assert.Equal(t, "restart", r.String("reaction"))
		assert.Equal(t, testenv.Restarted, testenv.Classify(before, e.t.Snapshot(t, u)))
		e.t.MustExec(t, "test", "!", "-e", "/var/lib/richt/pending/"+u+".json")

		// Started by hand after a reaction was recorded: the start served it.
		e.t.Shell(t, `printf '{"reaction":"restart","since":"2026-01-01T00:00:00Z","at":{"boot_id":"'$(cat /proc/sys/kernel/random/boot_id)'","monotonic_us":1}}' > /var/lib/richt/pending/`+u+`.json`)
		r = e.run(t, map[string]any{"unit": u, "restart_on": []any{unchanged}})
		ok(t, r)
		assert.Empty(t, actions(r))
		assert.Contains(t, r.String("pending_from_earlier_run"), "already served")
		e.t.MustExec(t, "test", "!", "-e", "/var/lib/richt/pending/"+u+".json")

		r = e.run(t, map[string]any{"unit": u, "restart_on": []any{unchanged}})
		ok(t, r)
		assert.False(t, r.Changed(), "cleared after verification")
	})

	t.Run("bad parameters fail before observing", func(t *testing.T) {
		for args, msg := range map[string]string{
			`{"unit": "-x"}`:                        `starts with "-"`,
			`{"unit": "a b"}`:                       "character systemd does not allow",
			`{"unit": "web@.service"}`:              "is a template",
			`{"unit": "x", "state": "restarted"}`:   "value of state must be one of: running, stopped",
			`{"unit": "x", "timeout": "soon"}`:      "not a duration",
			`{"unit": "x", "restart_on": ["s3cr"]}`: "restart_on[0]: a string is not a trigger",
			`{"unit": "x", "enabled": "perhaps"}`:   "not a valid boolean",
		} {
			var a map[string]any
			require.NoError(t, jsonUnmarshal(args, &a))
			r := e.run(t, a)
			assert.True(t, r.Failed(), args)
			assert.Contains(t, r.Msg(), msg, args)
		}
	})
}

// TestMain gives the package's tests a pool of pre-booted targets (docs/testenv.md).
func TestMain(m *testing.M) { os.Exit(testenv.RunWithPool(m)) }
