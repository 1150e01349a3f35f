package service_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/richt/services/modules"
	"github.com/richt/services/testenv"
	"github.com/richt/services/testenv/fixtures"
)

type env struct {
	t      *testenv.Target
	module string
}

func newEnv(t *testing.T) *env {
	t.Helper()
	if testing.Short() {
		t.Skip("end-to-end: needs Docker")
	}
	e := &env{t: testenv.Start(t), module: testenv.BuildModule(t, modules.Command, testenv.Named("service"))}
	repo := testenv.Repo(t, fixtures.DemoPackage("1.0"), fixtures.DemoPackage("2.0"))
	require.NoError(t, e.t.AddRepo(context.Background(), "fixtures", repo))
	e.t.LogUnitOnFailure(t, "demo.service")
	return e
}

// demo is the demo service (fixtures.DemoService) with the demo play's health probe.
func demo(version, level string) map[string]any {
	args := fixtures.DemoService(version, level)
	args["processes"] = []any{map[string]any{"unit": "demo.service", "enabled": true, "timeout": testenv.ModuleTimeout(),
		"health": map[string]any{"banner": "127.0.0.1:8080", "expect": "demo ready"}}}
	return args
}

const (
	v1 = "0:1.0-1.noarch"
	v2 = "0:2.0-1.noarch"
)

func (e *env) run(t *testing.T, args map[string]any, extra ...string) testenv.Result {
	t.Helper()
	return e.t.RunModuleEnv(t, e.module, args, extra...)
}

func with(args map[string]any, kv ...any) map[string]any {
	out := map[string]any{}
	for k, v := range args {
		out[k] = v
	}
	for i := 0; i+1 < len(kv); i += 2 {
		out[kv[i].(string)] = kv[i+1]
	}
	return out
}

func (e *env) events(t *testing.T) (starts, reloads int) {
	res, err := e.t.Exec(context.Background(), "cat", "/run/demo/events")
	require.NoError(t, err)
	return strings.Count(res.Stdout, "start "), strings.Count(res.Stdout, "reload ")
}

// steps is what each step did, in order: the packages operation, each config's plan,
// each file's operation, each process's actions.
func steps(r testenv.Result) []string {
	var out []string
	if p := r.Map("packages"); p != nil {
		var ops []string
		for _, e := range p["packages"].([]any) {
			ops = append(ops, fmt.Sprint(e.(map[string]any)["operation"]))
		}
		out = append(out, "packages "+strings.Join(ops, ","))
	}
	for _, c := range r["configs"].([]any) {
		m := c.(map[string]any)
		out = append(out, fmt.Sprintf("config %v %v", m["path"], m["plan"]))
	}
	for _, f := range r["files"].([]any) {
		m := f.(map[string]any)
		out = append(out, fmt.Sprintf("file %v %v", m["path"], m["operation"]))
	}
	for _, p := range r["processes"].([]any) {
		m := p.(map[string]any)
		out = append(out, fmt.Sprintf("process %v %v", m["unit"], m["actions"]))
	}
	return out
}

func TestServiceModule(t *testing.T) {
	t.Parallel()
	e := newEnv(t)

	t.Run("check mode on a clean host predicts everything and changes nothing", func(t *testing.T) {
		check := e.run(t, with(demo(v1, "info"), "_ansible_check_mode", true, "_ansible_diff", true))
		require.False(t, check.Failed(), check.Msg())
		assert.True(t, check.Changed())
		assert.Equal(t, []string{
			"packages install-nevra",
			"file /etc/systemd/system/demo.service.d/10-reload.conf create",
			"file /etc/systemd/system/demo.service.d/20-level.conf create",
			"process demo.service [enable daemon-reload start]",
		}, steps(check))
		assert.Contains(t, check.Map("diff")["after"], "Environment=DEMO_LEVEL=info")
		res, err := e.t.Exec(context.Background(), "rpm", "-q", "demo")
		require.NoError(t, err)
		assert.NotZero(t, res.ExitCode, "nothing installed")
		e.t.MustExec(t, "test", "!", "-e", "/etc/systemd/system/demo.service.d")

		t.Run("the real run takes the same steps", func(t *testing.T) {
			r := e.run(t, demo(v1, "info"))
			require.False(t, r.Failed(), r.Msg())
			assert.Equal(t, steps(check), steps(r))
			assert.Equal(t, check["plan"], r["plan"], "one plan for the whole service, check mode's the real run's")
			t.Logf("the service's plan: %v", r["plan"])
			assert.Equal(t, "active", e.t.Snapshot(t, "demo.service").ActiveState)
			assert.Equal(t, "enabled", e.t.Snapshot(t, "demo.service").UnitFileState)
			starts, reloads := e.events(t)
			assert.Equal(t, 1, starts)
			assert.Equal(t, 0, reloads)
		})
	})

	t.Run("idempotent", func(t *testing.T) {
		r := e.run(t, demo(v1, "info"))
		require.False(t, r.Failed(), r.Msg())
		assert.False(t, r.Changed())
		starts, _ := e.events(t)
		assert.Equal(t, 1, starts)
	})

	t.Run("a pin moves: one restart", func(t *testing.T) {
		r := e.run(t, demo(v2, "info"))
		require.False(t, r.Failed(), r.Msg())
		assert.True(t, r.Changed())
		assert.Equal(t, "demo-2.0-1.noarch\n", e.t.MustExec(t, "rpm", "-q", "demo"))
		starts, reloads := e.events(t)
		assert.Equal(t, 2, starts, "one restart for the package change")
		assert.Equal(t, 0, reloads)
	})

	t.Run("a reloading drop-in changes: one reload", func(t *testing.T) {
		r := e.run(t, demo(v2, "debug"))
		require.False(t, r.Failed(), r.Msg())
		starts, reloads := e.events(t)
		assert.Equal(t, 2, starts)
		assert.Equal(t, 1, reloads)
		assert.Contains(t, e.t.MustExec(t, "systemctl", "show", "-p", "Environment", "demo.service"), "DEMO_LEVEL=debug")
	})

	t.Run("a step that fails leaves no reaction owed", func(t *testing.T) {
		starts, _ := e.events(t)
		r := e.run(t, demo("0:3.0-1.noarch", "debug")) // no such build in the repository
		assert.True(t, r.Failed())
		assert.Equal(t, "packages", r.String("failed_step"))
		e.t.MustExec(t, "test", "!", "-e", "/var/lib/richt/pending/demo.service.json")
		r = e.run(t, demo(v2, "debug"))
		require.False(t, r.Failed(), r.Msg())
		after, _ := e.events(t)
		assert.Equal(t, starts, after, "no restart for a change that never happened")
	})

	t.Run("every step's arguments are checked before anything runs", func(t *testing.T) {
		args := demo(v1, "debug")
		args["processes"] = []any{map[string]any{"unit": "demo.service", "settle": "soon"}}
		r := e.run(t, args)
		assert.True(t, r.Failed())
		assert.Contains(t, r.Msg(), "processes[0] (demo.service)")
		assert.Equal(t, "demo-2.0-1.noarch\n", e.t.MustExec(t, "rpm", "-q", "demo"), "the pin did not move")
	})

	t.Run("killed between its steps, the next run carries out the restart", func(t *testing.T) {
		// The process step talks to systemd through systemctl here, which hangs: the
		// packages step has run (1.0 back), the restart it causes has not.
		before, _ := e.events(t)
		args, err := json.Marshal(demo(v1, "debug"))
		require.NoError(t, err)
		require.NoError(t, e.t.WriteFile(context.Background(), "/var/tmp/service-args.json", args, 0o600))
		bin, err := e.t.InstallModule(context.Background(), e.module)
		require.NoError(t, err)
		require.NoError(t, e.t.WriteFile(context.Background(), "/usr/local/bin/systemctl", []byte("#!/bin/sh\ntouch /var/tmp/systemctl-called\nexec sleep 61\n"), 0o755))
		out := e.t.Shell(t, fmt.Sprintf(`RICHT_SYSTEMD_BACKEND=systemctl %s /var/tmp/service-args.json >/dev/null 2>&1 & p=$!
for i in $(seq 600); do [ -e /var/tmp/systemctl-called ] && break; sleep 0.1; done
kill -9 $p; wait $p; echo "module exit $?"; rm -f /usr/local/bin/systemctl; pkill -f '^sleep 61$' || true`, bin))
		assert.Contains(t, out, "module exit 137")
		assert.Equal(t, "demo-1.0-1.noarch\n", e.t.MustExec(t, "rpm", "-q", "demo"), "the packages step ran")
		starts, _ := e.events(t)
		require.Equal(t, before, starts, "the restart it owes has not happened")
		e.t.MustExec(t, "test", "-e", "/var/lib/richt/pending/demo.service.json")

		r := e.run(t, demo(v1, "debug"))
		require.False(t, r.Failed(), r.Msg())
		starts, _ = e.events(t)
		assert.Equal(t, before+1, starts, "the owed restart, once")
		e.t.MustExec(t, "test", "!", "-e", "/var/lib/richt/pending/demo.service.json")
		r = e.run(t, demo(v1, "debug"))
		assert.False(t, r.Changed())
	})

	t.Run("removal: the reverse order and one manager reload", func(t *testing.T) {
		r := e.run(t, with(demo(v1, "debug"), "state", "absent"))
		require.False(t, r.Failed(), r.Msg())
		assert.True(t, r.Changed())
		assert.Equal(t, []string{
			"packages remove",
			"file /etc/systemd/system/demo.service.d/10-reload.conf remove",
			"file /etc/systemd/system/demo.service.d/20-level.conf remove",
			"process demo.service [disable stop]",
		}, steps(r), "processes first, then files, then packages (steps lists them by kind)")
		assert.Equal(t, "performed", r.String("manager_reload"))
		res, err := e.t.Exec(context.Background(), "rpm", "-q", "demo")
		require.NoError(t, err)
		assert.NotZero(t, res.ExitCode)
		assert.Equal(t, "not-found", strings.TrimSpace(e.t.MustExec(t, "systemctl", "show", "--value", "-p", "LoadState", "demo.service")))
		r = e.run(t, with(demo(v1, "debug"), "state", "absent"))
		require.False(t, r.Failed(), r.Msg())
		assert.False(t, r.Changed())
	})

	t.Run("bad input names the parameter and changes nothing", func(t *testing.T) {
		args := demo(v1, "info")
		args["packages"] = []any{map[string]any{"name": "demo", "version": v1, "timeout": "1m"}, map[string]any{"name": "other", "timeout": "2m"}}
		r := e.run(t, args)
		assert.True(t, r.Failed())
		assert.Contains(t, r.Msg(), `packages[1]: timeout "2m0s" differs from "1m0s"`)
		args = demo(v1, "info")
		args["processes"] = []any{map[string]any{"unit": "demo.service", "after": []any{"nope.service"}}}
		r = e.run(t, args)
		assert.Contains(t, r.Msg(), "demo.service is after nope.service, which is not a process of this service")
		res, err := e.t.Exec(context.Background(), "rpm", "-q", "demo")
		require.NoError(t, err)
		assert.NotZero(t, res.ExitCode)
	})

	t.Run("a mode given as a number, as YAML reads 0600", func(t *testing.T) {
		args := map[string]any{"name": "modes", "units": []any{map[string]any{"unit": "richt-mode.service", "mode": 384,
			"content": "[Service]\nExecStart=/bin/true\n"}}}
		r := e.run(t, args)
		require.False(t, r.Failed(), r.Msg())
		assert.Equal(t, "600", strings.TrimSpace(e.t.MustExec(t, "stat", "-c", "%a", "/etc/systemd/system/richt-mode.service")))
	})
}

// Unit files and drop-ins without a process: no process step syncs the manager, so the
// service reloads it itself, once, and says so.
func TestServiceFilesWithoutProcessesReloadTheManager(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	const unit = "richt-plain.service"
	args := func(description, env string) map[string]any {
		a := map[string]any{"name": "plain", "units": []any{map[string]any{"unit": unit,
			"content": "[Unit]\nDescription=" + description + "\n[Service]\nExecStart=/bin/sleep infinity\n"}}}
		if env != "" {
			a["dropins"] = []any{map[string]any{"unit": unit, "name": "10-env.conf", "content": "[Service]\nEnvironment=" + env + "\n"}}
		}
		return a
	}
	show := func(prop string) string {
		return strings.TrimSpace(e.t.MustExec(t, "systemctl", "show", "--value", "-p", prop, unit))
	}
	r := e.run(t, args("first", ""))
	require.False(t, r.Failed(), r.Msg())
	// Running, the unit stays loaded: what systemd has loaded is what the next run must sync.
	e.t.MustExec(t, "systemctl", "daemon-reload")
	e.t.MustExec(t, "systemctl", "start", unit)
	t.Cleanup(func() { _, _ = e.t.Exec(context.Background(), "systemctl", "stop", unit) })

	r = e.run(t, args("second", "RICHT_PLAIN=1"))
	require.False(t, r.Failed(), r.Msg())
	assert.True(t, r.Changed())
	assert.Equal(t, "no", show("NeedDaemonReload"), "the unit file and drop-in the run wrote are loaded")
	assert.Equal(t, "second", show("Description"))
	assert.Contains(t, show("Environment"), "RICHT_PLAIN=1")
	assert.Equal(t, "performed", r.String("manager_reload"))
	assert.Contains(t, r["plan"], "daemon-reload")

	r = e.run(t, args("second", "RICHT_PLAIN=1"))
	require.False(t, r.Failed(), r.Msg())
	assert.False(t, r.Changed())
	assert.Empty(t, r.String("manager_reload"), "nothing changed: no reload")
}

// Removing a service's package that another package requires: refused before anything
// changes, naming the dependent, unless remove_dependents says the dependents may go too.
func TestServiceRemovalRefusesToTakeDependents(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	lib := testenv.Package{Name: "richt-deplib", Version: "1.0"}
	app := testenv.Package{Name: "richt-depapp", Version: "1.0", Requires: []string{"richt-deplib"}}
	require.NoError(t, e.t.AddRepo(context.Background(), "dependents", testenv.Repo(t, lib, app)))
	e.t.MustExec(t, "dnf", "-y", "-q", "install", "richt-depapp")
	installed := func(name string) bool {
		res, err := e.t.Exec(context.Background(), "rpm", "-q", name)
		require.NoError(t, err)
		return res.ExitCode == 0
	}
	require.True(t, installed("richt-deplib"))
	args := map[string]any{"name": "deplib", "state": "absent", "packages": []any{map[string]any{"name": "richt-deplib"}}}

	check := e.run(t, with(args, "_ansible_check_mode", true))
	assert.True(t, check.Failed(), "check mode refuses too")
	assert.Contains(t, check.Msg(), "richt-depapp")

	r := e.run(t, args)
	require.True(t, r.Failed(), "refused")
	assert.Contains(t, r.Msg(), "richt-depapp-1.0-1.noarch")
	assert.Contains(t, r.Msg(), "remove_dependents")
	assert.Equal(t, "packages", r.String("failed_step"))
	assert.False(t, r.Changed())
	assert.True(t, installed("richt-deplib"), "nothing removed")
	assert.True(t, installed("richt-depapp"), "nothing removed")

	r = e.run(t, with(args, "remove_dependents", true))
	require.False(t, r.Failed(), r.Msg())
	assert.True(t, r.Changed())
	assert.Equal(t, []string{"richt-depapp-1.0-1.noarch"}, r.Strings("removed_dependents"))
	assert.False(t, installed("richt-deplib"))
	assert.False(t, installed("richt-depapp"), "the dependent went with it, as the task allowed")
}

// A drop-in whose write meets a full disk is not written (the old file stays in place):
// the run fails saying so, and the reaction it recorded ahead for the drop-in is withdrawn,
// so the next run, with nothing to change, neither reloads nor restarts the unit.
func TestServiceFailedWriteOwesNoReaction(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	r := e.run(t, demo(v1, "info"))
	require.False(t, r.Failed(), r.Msg())
	starts, reloads := e.events(t)

	// A full 64 KiB tmpfs over the drop-ins, holding copies of them; unmounted, the
	// originals are as they were.
	const dir = "/etc/systemd/system/demo.service.d"
	e.t.Shell(t, `d=`+dir+`; rm -rf /var/tmp/keep && mkdir /var/tmp/keep && cp -a $d/. /var/tmp/keep/ &&
mount -t tmpfs -o size=64k richt-full $d && cp -a /var/tmp/keep/. $d/ && { dd if=/dev/zero of=$d/.fill bs=4k 2>/dev/null || true; }`)
	r = e.run(t, demo(v1, "debug"))
	e.t.Shell(t, `umount `+dir+` && rm -rf /var/tmp/keep`)
	require.True(t, r.Failed())
	assert.Contains(t, r.Msg(), "no space left on device")
	assert.Equal(t, "file demo.service/20-level.conf", r.String("failed_step"))
	assert.Contains(t, r["plan"], "withdraw-pending demo.service")
	e.t.MustExec(t, "test", "!", "-e", "/var/lib/richt/pending/demo.service.json")
	assert.Contains(t, e.t.MustExec(t, "cat", dir+"/20-level.conf"), "DEMO_LEVEL=info", "the old drop-in in place")

	r = e.run(t, demo(v1, "info"))
	require.False(t, r.Failed(), r.Msg())
	assert.False(t, r.Changed(), "nothing to change, nothing owed")
	s, l := e.events(t)
	assert.Equal(t, starts, s, "no restart for a write that never happened")
	assert.Equal(t, reloads, l, "no reload for a write that never happened")
}
