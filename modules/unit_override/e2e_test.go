package unit_override_test

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/richt/services/modules"
	"github.com/richt/services/testenv"
	"github.com/richt/services/testenv/fixtures"
)

type env struct {
	t                        *testenv.Target
	override, lifecycle, rpm string
}

// countingSystemctl sits first in PATH and logs every daemon-reload before running the
// real systemctl, so tests can count them.
const countingSystemctl = `#!/bin/sh
[ "$1" = daemon-reload ] && echo reload >> /var/tmp/daemon-reloads
exec /usr/bin/systemctl "$@"
`

func newEnv(t *testing.T) *env {
	t.Helper()
	if testing.Short() {
		t.Skip("end-to-end: needs Docker")
	}
	repo := testenv.Repo(t, fixtures.DemoPackage("1.0"))
	e := &env{
		t:        testenv.Start(t),
		override: testenv.BuildModule(t, modules.Command, testenv.Named("unit_override")),
		lifecycle: testenv.BuildModule(t, modules.Command, testenv.Named("systemd_lifecycle"),
			testenv.Defaults(map[string]any{"timeout": testenv.ModuleTimeout()})), // 5s is for an idle host
		rpm: testenv.BuildModule(t, modules.Command, testenv.Named("rpm_exact")),
	}
	ctx := context.Background()
	require.NoError(t, e.t.AddRepo(ctx, "fixtures", repo))
	require.NoError(t, e.t.WriteFile(ctx, "/usr/local/bin/systemctl", []byte(countingSystemctl), 0o755))
	r := e.t.RunModule(t, e.rpm, map[string]any{"name": "demo", "version": "0:1.0-1.noarch"})
	require.False(t, r.Failed(), r.Msg())
	e.t.MustExec(t, "systemctl", "daemon-reload")
	e.t.MustExec(t, "systemctl", "start", "demo.service")
	e.t.LogUnitOnFailure(t, "demo.service")
	return e
}

func (e *env) reloads(t *testing.T) int {
	res, err := e.t.Exec(context.Background(), "cat", "/var/tmp/daemon-reloads")
	require.NoError(t, err)
	return strings.Count(res.Stdout, "reload")
}

func (e *env) override_(t *testing.T, args map[string]any) testenv.Result {
	t.Helper()
	return e.t.RunModule(t, e.override, args)
}

func (e *env) show(t *testing.T, unit, prop string) string {
	return strings.TrimSpace(e.t.MustExec(t, "systemctl", "show", "--value", "-p", prop, unit))
}

func TestDropInLifecycle(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	dropIn := "/etc/systemd/system/demo.service.d/10-env.conf"

	t.Run("create a drop-in for the package's unit: one daemon-reload, systemd sees it", func(t *testing.T) {
		n := e.reloads(t)
		r := e.override_(t, map[string]any{"unit": "demo.service", "name": "10-env.conf", "content": "[Service]\nEnvironment=LEVEL=one\n", "_ansible_diff": true})
		require.False(t, r.Failed(), r.Msg())
		assert.True(t, r.Changed())
		assert.Equal(t, "create", r.String("operation"))
		assert.Equal(t, dropIn, r.String("path"))
		assert.Equal(t, "performed", r.String("daemon_reload"))
		assert.Equal(t, n+1, e.reloads(t))
		assert.Equal(t, "LEVEL=one", e.show(t, "demo.service", "Environment"))
		assert.Equal(t, "", r.Map("diff")["before"])
		assert.Contains(t, r.Map("diff")["after"], "Environment=LEVEL=one")
		assert.Equal(t, false, r.Map("reload_capable")["capable"])
	})

	t.Run("change it: changed, one daemon-reload, systemd's view updated", func(t *testing.T) {
		n := e.reloads(t)
		r := e.override_(t, map[string]any{"unit": "demo", "name": "10-env.conf", "content": "[Service]\nEnvironment=LEVEL=two\n", "_ansible_diff": true})
		require.False(t, r.Failed(), r.Msg())
		assert.Equal(t, "update", r.String("operation"))
		assert.Equal(t, n+1, e.reloads(t))
		assert.Equal(t, "LEVEL=two", e.show(t, "demo.service", "Environment"))
		assert.Contains(t, r.Map("diff")["before"], "LEVEL=one")
		assert.Contains(t, r.Map("diff")["after"], "LEVEL=two")
	})

	t.Run("same content again: no change, no daemon-reload", func(t *testing.T) {
		n := e.reloads(t)
		r := e.override_(t, map[string]any{"unit": "demo", "name": "10-env.conf", "content": "[Service]\nEnvironment=LEVEL=two\n"})
		require.False(t, r.Failed(), r.Msg())
		assert.False(t, r.Changed())
		assert.Equal(t, "none", r.String("daemon_reload"))
		assert.Equal(t, n, e.reloads(t))
	})

	t.Run("invalid content fails and leaves the old file untouched", func(t *testing.T) {
		before := e.t.MustExec(t, "cat", dropIn)
		r := e.override_(t, map[string]any{"unit": "demo", "name": "10-env.conf", "content": "[Service]\nEnvironment=LEVEL=three\n[Broken\n"})
		require.True(t, r.Failed())
		assert.Contains(t, r.Msg(), "content is not a valid unit file: line 3")
		assert.Equal(t, before, e.t.MustExec(t, "cat", dropIn))
	})

	t.Run("a drop-in that adds ExecReload makes the package unit reload-capable", func(t *testing.T) {
		r := e.override_(t, map[string]any{"unit": "demo", "name": "20-reload.conf", "content": "[Service]\nExecReload=/bin/kill -HUP $MAINPID\n"})
		require.False(t, r.Failed(), r.Msg())
		assert.Equal(t, true, r.Map("reload_capable")["capable"])
		pid := e.show(t, "demo.service", "MainPID")
		l := e.t.RunModule(t, e.lifecycle, map[string]any{"unit": "demo", "reload_on": []any{map[string]any{"dropin": map[string]any(r)}}})
		require.False(t, l.Failed(), l.Msg())
		assert.Equal(t, []string{"reload"}, l.Strings("actions"))
		assert.Equal(t, pid, e.show(t, "demo.service", "MainPID"), "a reload keeps the process")
		assert.Contains(t, e.t.MustExec(t, "cat", "/run/demo/events"), "reload ")
	})

	t.Run("a drop-in that resets ExecReload makes reload_on fail in preparation", func(t *testing.T) {
		r := e.override_(t, map[string]any{"unit": "demo", "name": "30-noreload.conf", "content": "[Service]\nExecReload=\n"})
		require.False(t, r.Failed(), r.Msg())
		assert.Equal(t, false, r.Map("reload_capable")["capable"])
		assert.Contains(t, r.Map("reload_capable")["reason"], "30-noreload.conf")
		l := e.t.RunModule(t, e.lifecycle, map[string]any{"unit": "demo", "reload_on": []any{false}})
		require.True(t, l.Failed())
		assert.Contains(t, l.Msg(), "reset (empty assignment) by /etc/systemd/system/demo.service.d/30-noreload.conf")
	})

	t.Run("check mode reports and changes nothing", func(t *testing.T) {
		n := e.reloads(t)
		r := e.override_(t, map[string]any{"unit": "demo", "name": "30-noreload.conf", "state": "absent", "_ansible_check_mode": true, "_ansible_diff": true})
		require.False(t, r.Failed(), r.Msg())
		assert.True(t, r.Changed())
		assert.Equal(t, "remove", r.String("operation"))
		assert.Equal(t, true, r.Map("reload_capable")["capable"], "predicted: without the reset, 20-reload.conf counts")
		e.t.MustExec(t, "test", "-f", "/etc/systemd/system/demo.service.d/30-noreload.conf")
		assert.Equal(t, n, e.reloads(t))
	})

	t.Run("state absent removes the files and the emptied directory", func(t *testing.T) {
		for _, n := range []string{"10-env.conf", "20-reload.conf", "30-noreload.conf"} {
			r := e.override_(t, map[string]any{"unit": "demo", "name": n, "state": "absent"})
			require.False(t, r.Failed(), r.Msg())
			assert.True(t, r.Changed())
		}
		e.t.MustExec(t, "test", "!", "-e", "/etc/systemd/system/demo.service.d")
		assert.Equal(t, "", e.show(t, "demo.service", "Environment"))
		r := e.override_(t, map[string]any{"unit": "demo", "name": "10-env.conf", "state": "absent"})
		assert.False(t, r.Changed())
	})
}

func TestFullUnitAndSync(t *testing.T) {
	t.Parallel()
	e := newEnv(t)

	t.Run("a full unit no package provides, then started by systemd_lifecycle", func(t *testing.T) {
		r := e.override_(t, map[string]any{"unit": "own.service", "content": "[Unit]\nDescription=owned\n[Service]\nExecStart=/usr/bin/demo-daemon\n[Install]\nWantedBy=multi-user.target\n"})
		require.False(t, r.Failed(), r.Msg())
		assert.Equal(t, "/etc/systemd/system/own.service", r.String("path"))
		l := e.t.RunModule(t, e.lifecycle, map[string]any{"unit": "own", "enabled": true, "restart_on": []any{map[string]any(r)}})
		require.False(t, l.Failed(), l.Msg())
		assert.Equal(t, []string{"enable", "start"}, l.Strings("actions"))
		assert.Equal(t, "active", e.show(t, "own.service", "ActiveState"))
	})

	t.Run("daemon_reload false: recorded, and the next systemd_lifecycle performs it", func(t *testing.T) {
		n := e.reloads(t)
		r := e.override_(t, map[string]any{"unit": "demo", "name": "50-late.conf", "content": "[Service]\nEnvironment=LATE=yes\n", "daemon_reload": false})
		require.False(t, r.Failed(), r.Msg())
		assert.Equal(t, "needed", r.String("daemon_reload"))
		assert.Equal(t, n, e.reloads(t))
		e.t.MustExec(t, "test", "-f", "/var/lib/richt/manager-sync-due")
		// No trigger: the durable record alone makes it sync. The systemctl backend lets
		// the wrapper count the reload (over D-Bus it would not pass through systemctl).
		l := e.t.RunModuleEnv(t, e.lifecycle, map[string]any{"unit": "demo"}, "RICHT_SYSTEMD_BACKEND=systemctl")
		require.False(t, l.Failed(), l.Msg())
		assert.Equal(t, []string{"daemon-reload"}, l.Strings("actions"))
		assert.Equal(t, n+1, e.reloads(t))
		assert.Equal(t, "LATE=yes", e.show(t, "demo.service", "Environment"))
		e.t.MustExec(t, "test", "!", "-e", "/var/lib/richt/manager-sync-due")
	})

	t.Run("sensitive hides the content everywhere", func(t *testing.T) {
		const secret = "TOKEN=s3cr3t-value-4711"
		for _, args := range []map[string]any{
			{"unit": "demo", "name": "60-secret.conf", "content": "[Service]\nEnvironment=" + secret + "\n", "sensitive": true, "mode": "0600", "_ansible_diff": true},
			{"unit": "demo", "name": "60-secret.conf", "content": "[Service]\nEnvironment=" + secret + "-2\n", "sensitive": "yes", "mode": "0600", "_ansible_diff": true},
			{"unit": "demo", "name": "60-secret.conf", "content": "[Service]\nEnvironment=" + secret + "\n[Bad\n", "sensitive": true, "_ansible_diff": true},
			{"unit": "demo", "name": "60-secret.conf", "content": "[Service]\nEnvironment=" + secret + "\n", "sensitive": true, "bogus": 1},
			// A value validation refuses still hides the content in the refusal.
			{"unit": "demo", "name": "60-secret.conf", "content": "[Service]\nEnvironment=" + secret + "\n", "sensitive": " yes"},
			{"unit": "demo", "name": "60-secret.conf", "content": "[Service]\nEnvironment=" + secret + "\n", "sensitive": "maybe"},
		} {
			out, err := e.t.RunModuleRaw(context.Background(), e.override, args)
			require.NoError(t, err)
			assert.NotContains(t, out, "s3cr3t", "args %v", args["content"] != nil)
			var r map[string]any
			require.NoError(t, json.Unmarshal([]byte(out), &r))
		}
		assert.Contains(t, e.t.MustExec(t, "cat", "/etc/systemd/system/demo.service.d/60-secret.conf"), secret+"-2")
	})

	t.Run("a 0600 file is never observed with other bits set", func(t *testing.T) {
		dir := "/etc/systemd/system/demo.service.d"
		// A watcher lists the mode of every file in the directory (temporary files
		// included) as fast as it can while the module rewrites the file.
		e.t.Shell(t, "nohup sh -c 'while [ ! -e /var/tmp/stop ]; do stat -c \"%a %n\" "+dir+"/* "+dir+"/.* 2>/dev/null; done > /var/tmp/modes' >/dev/null 2>&1 &")
		for i := 0; i < 15; i++ {
			r := e.override_(t, map[string]any{"unit": "demo", "name": "70-private.conf", "mode": "0600", "daemon_reload": false,
				"content": "[Service]\nEnvironment=ROUND=" + strconv.Itoa(i) + "\n"})
			require.False(t, r.Failed(), r.Msg())
		}
		e.t.MustExec(t, "touch", "/var/tmp/stop")
		modes := e.t.MustExec(t, "cat", "/var/tmp/modes")
		seen := 0
		for _, l := range strings.Split(modes, "\n") {
			if strings.Contains(l, "70-private") {
				seen++
				assert.True(t, strings.HasPrefix(l, "600 "), "observed %q", l)
			}
		}
		assert.Greater(t, seen, 10, "the watcher saw the file")
		assert.Equal(t, "600", strings.TrimSpace(e.t.MustExec(t, "stat", "-c", "%a", dir+"/70-private.conf")))
	})

	t.Run("mode and owner changes alone need no daemon-reload", func(t *testing.T) {
		n := e.reloads(t)
		r := e.override_(t, map[string]any{"unit": "demo", "name": "70-private.conf", "mode": "0640", "group": "0",
			"content": "[Service]\nEnvironment=ROUND=14\n"})
		require.False(t, r.Failed(), r.Msg())
		assert.Equal(t, "attributes", r.String("operation"))
		assert.Equal(t, "none", r.String("daemon_reload"))
		assert.Equal(t, n, e.reloads(t))
		assert.Equal(t, "640", strings.TrimSpace(e.t.MustExec(t, "stat", "-c", "%a", "/etc/systemd/system/demo.service.d/70-private.conf")))
	})

	t.Run("bad parameters change nothing", func(t *testing.T) {
		for _, c := range []struct {
			args map[string]any
			msg  string
		}{
			{map[string]any{"unit": "demo", "name": "x.txt", "content": "[Service]\n"}, "must be a file name ending in .conf"},
			{map[string]any{"unit": "demo", "name": "../x.conf", "content": "[Service]\n"}, "must not start with"},
			{map[string]any{"unit": "demo", "name": "a/b.conf", "content": "[Service]\n"}, "not allowed in a drop-in name"},
			{map[string]any{"unit": "demo", "content": "[Service]\n", "path": "/tmp/demo.service"}, `the only allowed value is "/etc/systemd/system/demo.service"`},
			{map[string]any{"unit": "demo"}, "state is present but all of the following are missing: content"},
			{map[string]any{"unit": "demo", "content": "[Service]\n", "mode": "rw"}, "not an octal file mode"},
			{map[string]any{"unit": "demo", "content": "[Service]\n", "owner": "nobody-here"}, `owner: "nobody-here" is not a known name`},
		} {
			r := e.override_(t, c.args)
			assert.True(t, r.Failed(), "%v", c.args)
			assert.Contains(t, r.Msg(), c.msg)
		}
		e.t.MustExec(t, "test", "!", "-e", "/etc/systemd/system/demo.service")
	})
}
