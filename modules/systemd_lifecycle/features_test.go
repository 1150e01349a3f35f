package systemd_lifecycle_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/richt/services/testenv"
	"github.com/richt/services/testenv/fixtures"
)

// server writes NAME.service: after delay seconds, systemd-socket-activate listens on
// 127.0.0.1:port and answers every connection with the shell script reply (its stdin and
// stdout are the connection), so a probe has something real to talk to.
func (e *env) server(t *testing.T, name string, port int, delay string, reply string) string {
	t.Helper()
	ctx := context.Background()
	script := "/usr/local/bin/" + name + "-reply"
	require.NoError(t, e.t.WriteFile(ctx, script, []byte("#!/bin/sh\n"+reply+"\n"), 0o755))
	content := fmt.Sprintf(`[Unit]
Description=test server %s

[Service]
ExecStart=/bin/sh -c 'sleep %s; exec systemd-socket-activate --listen=127.0.0.1:%d --accept --inetd %s'
`, name, delay, port, script)
	require.NoError(t, e.t.WriteFile(ctx, "/etc/systemd/system/"+name+".service", []byte(content), 0o644))
	e.t.LogUnitOnFailure(t, name+".service")
	return name + ".service"
}

// httpReply reads the request up to its empty line, then answers with a status line.
func httpReply(status string) string {
	return `cr=$(printf '\r')
while read -r l; do [ "$l" = "$cr" ] && break; done
printf 'HTTP/1.0 ` + status + `\r\nContent-Length: 0\r\n\r\n'`
}

func TestSettleAndHealth(t *testing.T) {
	t.Parallel()
	forBackends(t, func(t *testing.T, e *env) {
		t.Run("a unit dying 1.5 s after its start fails settle: 3s", func(t *testing.T) {
			require.NoError(t, e.t.WriteFile(context.Background(), "/etc/systemd/system/dies.service",
				[]byte("[Service]\nExecStart=/bin/sh -c 'sleep 1.5; exit 1'\n"), 0o644))
			r := e.run(t, map[string]any{"unit": "dies", "settle": "3s"})
			require.True(t, r.Failed())
			assert.Contains(t, r.Msg(), "did not stay up after start")
			assert.Equal(t, []string{"start"}, actions(r))
		})

		u := e.server(t, "late", 18081, "1", "echo hello")
		t.Run("a TCP probe waits for a late bind", func(t *testing.T) {
			r := e.run(t, map[string]any{"unit": u, "health": map[string]any{"tcp": "127.0.0.1:18081"}})
			ok(t, r)
			assert.Equal(t, []string{"start"}, actions(r))
			h := r.Map("health")
			assert.Equal(t, true, h["healthy"])
			assert.Greater(t, h["attempts"], float64(1), "refused until the server bound, a second later")
			assert.Equal(t, []string{"start", "probe"}, r.Strings("plan"), "the passing probe is the start's proof: no default settle")
			assert.Equal(t, "running", r.Map("after")["state"], "checked again after the probe")
		})
		t.Run("a wildcard address probes loopback", func(t *testing.T) {
			r := e.run(t, map[string]any{"unit": u, "health": map[string]any{"tcp": "0.0.0.0:18081"}})
			ok(t, r)
			assert.Empty(t, actions(r), "converged, and healthy")
			assert.Contains(t, r.Map("health")["probe"], "127.0.0.1:18081")
		})

		t.Run("a probe that never answers fails on the deadline naming the address; converged, nothing is restarted", func(t *testing.T) {
			plain := e.unit(t, "mute")
			// The deadline ends the wait for a probe that never answers, after the start: long
			// enough for a start on a loaded machine, so it is the probe that runs out of time.
			r := e.run(t, map[string]any{"unit": plain, "health": map[string]any{"tcp": "127.0.0.1:18089"}, "timeout": "10s"})
			require.True(t, r.Failed())
			assert.Contains(t, r.Msg(), "127.0.0.1:18089")
			assert.Contains(t, r.Msg(), "not healthy")
			assert.Contains(t, r.Msg(), "this run's start was carried out; a failing probe does not restart anything")
			assert.Equal(t, []string{"start"}, actions(r))
			starts, _ := fixtures.Events(t, e.t, "mute")
			r = e.run(t, map[string]any{"unit": plain, "health": map[string]any{"tcp": "127.0.0.1:18089"}, "timeout": "1s", "restart_on": []any{unchanged}})
			require.True(t, r.Failed(), "a converged but unhealthy unit fails")
			assert.Empty(t, actions(r))
			assert.Contains(t, r.Msg(), "nothing was restarted", "this run did nothing to it")
			again, _ := fixtures.Events(t, e.t, "mute")
			assert.Equal(t, starts, again, "without being restarted")
		})

		t.Run("HTTP 503 fails naming 503; 200 passes", func(t *testing.T) {
			bad := e.server(t, "http503", 18082, "0", httpReply("503 Service Unavailable"))
			r := e.run(t, map[string]any{"unit": bad, "health": map[string]any{"http": "http://127.0.0.1:18082/health"}, "timeout": "10s"})
			require.True(t, r.Failed())
			assert.Contains(t, r.Msg(), "HTTP 503")
			good := e.server(t, "http200", 18083, "0", httpReply("200 OK"))
			ok(t, e.run(t, map[string]any{"unit": good, "health": map[string]any{"http": "http://127.0.0.1:18083/"}}))
		})

		t.Run("banner match and mismatch", func(t *testing.T) {
			b := e.server(t, "banner", 18084, "0", "echo 220 richt ready")
			ok(t, e.run(t, map[string]any{"unit": b, "health": map[string]any{"banner": "127.0.0.1:18084", "expect": "richt ready"}}))
			r := e.run(t, map[string]any{"unit": b, "health": map[string]any{"banner": "127.0.0.1:18084", "expect": "ESMTP"}, "timeout": "10s"})
			require.True(t, r.Failed())
			assert.Contains(t, r.Msg(), "220 richt ready", "the greeting read is quoted")
		})

		t.Run("malformed probes are refused before anything is observed", func(t *testing.T) {
			for _, probe := range []map[string]any{
				{"tcp": "127.0.0.1"}, {"tcp": "127.0.0.1:70000"}, {"http": "https://127.0.0.1/"},
				{"tcp": "127.0.0.1:1", "http": "http://127.0.0.1/"}, {"banner": "127.0.0.1:25"},
			} {
				r := e.run(t, map[string]any{"unit": "does-not-exist", "health": probe})
				require.True(t, r.Failed(), "%v", probe)
				assert.Contains(t, r.Msg(), "health", "%v", probe)
				assert.NotContains(t, r.Msg(), "not found", "refused before the unit was observed")
			}
		})
	})
}

func TestMaskUnmask(t *testing.T) {
	t.Parallel()
	forBackends(t, func(t *testing.T, e *env) {
		// A package's unit (a mask is a link in /etc/systemd/system, where this file is not).
		u := "mk.service"
		require.NoError(t, e.t.WriteFile(context.Background(), "/usr/lib/systemd/system/"+u,
			[]byte("[Service]\nExecStart="+fixtures.TestDaemonPath+" mk\n\n[Install]\nWantedBy=multi-user.target\n"), 0o644))
		e.t.MustExec(t, "systemctl", "daemon-reload")
		e.t.MustExec(t, "systemctl", "start", u)
		r := e.run(t, map[string]any{"unit": u, "state": "stopped", "masked": true})
		ok(t, r)
		assert.Equal(t, []string{"stop", "mask"}, actions(r), "stopped first")
		assert.Contains(t, e.t.MustExec(t, "systemctl", "show", "-p", "LoadState,ActiveState", u), "LoadState=masked")
		r = e.run(t, map[string]any{"unit": u, "state": "stopped", "masked": true})
		ok(t, r)
		assert.False(t, r.Changed(), "idempotent")
		r = e.run(t, map[string]any{"unit": u, "masked": false, "enabled": true})
		ok(t, r)
		assert.Equal(t, []string{"unmask", "enable", "start"}, actions(r))
		assert.Equal(t, "active\n", e.t.MustExec(t, "systemctl", "is-active", u))
		r = e.run(t, map[string]any{"unit": u, "masked": false, "enabled": true})
		ok(t, r)
		assert.False(t, r.Changed(), "idempotent")

		// A unit whose own file is in /etc/systemd/system cannot be masked: said plainly.
		own := e.unit(t, "etcunit")
		r = e.run(t, map[string]any{"unit": own, "state": "stopped", "masked": true})
		require.True(t, r.Failed())
		assert.Contains(t, r.Msg(), "cannot be masked, remove its file instead")
	})
}

func TestTimerAndSocketUnits(t *testing.T) {
	t.Parallel()
	forBackends(t, func(t *testing.T, e *env) {
		ctx := context.Background()
		e.unit(t, "tick")
		require.NoError(t, e.t.WriteFile(ctx, "/etc/systemd/system/tick.timer", []byte("[Timer]\nOnActiveSec=1h\n\n[Install]\nWantedBy=timers.target\n"), 0o644))
		r := e.run(t, map[string]any{"unit": "tick.timer", "enabled": true})
		ok(t, r)
		assert.Subset(t, actions(r), []string{"enable", "start"})
		assert.Contains(t, e.t.MustExec(t, "systemctl", "show", "-p", "ActiveState,SubState", "tick.timer"), "SubState=waiting")
		r = e.run(t, map[string]any{"unit": "tick.timer", "enabled": true})
		ok(t, r)
		assert.False(t, r.Changed())

		// A socket-activated service: restarting the service leaves its socket listening.
		e.unit(t, "sock")
		require.NoError(t, e.t.WriteFile(ctx, "/etc/systemd/system/sock.socket", []byte("[Socket]\nListenStream=127.0.0.1:18091\n\n[Install]\nWantedBy=sockets.target\n"), 0o644))
		r = e.run(t, map[string]any{"unit": "sock.socket", "health": map[string]any{"tcp": "127.0.0.1:18091"}})
		ok(t, r)
		assert.Contains(t, actions(r), "start")
		assert.Equal(t, "active\n", e.t.MustExec(t, "systemctl", "is-active", "sock.socket"), "listening (or running its service once the probe connected)")
		ok(t, e.run(t, map[string]any{"unit": "sock.service"}))
		r = e.run(t, map[string]any{"unit": "sock.service", "restart_on": []any{changed}})
		ok(t, r)
		assert.Equal(t, []string{"restart"}, actions(r))
		assert.Equal(t, "active\n", e.t.MustExec(t, "systemctl", "is-active", "sock.socket"), "the socket stays through its service's restart")
		r = e.run(t, map[string]any{"unit": "sock.socket", "health": map[string]any{"tcp": "127.0.0.1:18091"}})
		ok(t, r)
		assert.False(t, r.Changed(), "the socket kept listening through the service's restart")
	})
}

// A user's unit, by the module run as that user with neither XDG_RUNTIME_DIR nor a
// session bus in its environment (as become_user or su leave it).
func TestUserScope(t *testing.T) {
	t.Parallel()
	forBackends(t, func(t *testing.T, e *env) {
		ctx := context.Background()
		uid := e.t.AddUserWithManager(t, "alice")
		require.NoError(t, e.t.WriteFile(ctx, "/home/alice/.config/systemd/user/hello.service",
			[]byte("[Unit]\nDescription=hello\n\n[Service]\nExecStart=/bin/sleep infinity\nExecReload=/bin/kill -HUP $MAINPID\n\n[Install]\nWantedBy=default.target\n"), 0o644))
		e.t.MustExec(t, "chown", "-R", "alice:alice", "/home/alice/.config")
		asAlice := func(args map[string]any) testenv.Result {
			t.Helper()
			return runAs(t, e, "alice", args)
		}
		r := asAlice(map[string]any{"unit": "hello", "scope": "user", "enabled": true})
		ok(t, r)
		assert.Subset(t, actions(r), []string{"enable", "start"})
		userctl := fmt.Sprintf("XDG_RUNTIME_DIR=/run/user/%d systemctl --user ", uid)
		assert.Equal(t, "active\n", e.t.Shell(t, "runuser -u alice -- env "+userctl+"is-active hello.service"))
		assert.Equal(t, "enabled\n", e.t.Shell(t, "runuser -u alice -- env "+userctl+"is-enabled hello.service"))
		r = asAlice(map[string]any{"unit": "hello", "scope": "user", "enabled": true})
		ok(t, r)
		assert.False(t, r.Changed(), "idempotent")
		r = asAlice(map[string]any{"unit": "hello", "scope": "user", "restart_on": []any{changed}})
		ok(t, r)
		assert.Equal(t, []string{"restart"}, actions(r))
		// Records of a user's units live in that user's home, owned by the user.
		assert.Equal(t, "alice 755\n", e.t.MustExec(t, "stat", "-c", "%U %a", "/home/alice/.local/state/richt/pending"))
		e.t.MustExec(t, "test", "!", "-e", "/var/lib/richt/pending/hello.service.json")
	})
}

// runAs runs the module as user, with XDG_RUNTIME_DIR and DBUS_SESSION_BUS_ADDRESS removed
// from its environment.
func runAs(t *testing.T, e *env, user string, args map[string]any) testenv.Result {
	t.Helper()
	// The first run as root installs the binary in the target.
	e.t.RunModuleEnv(t, e.module, map[string]any{"unit": "none-such", "state": "stopped", "allow_missing": true})
	bin, err := e.t.InstallModule(context.Background(), e.module)
	require.NoError(t, err)
	data, err := json.Marshal(testenv.ModuleArgs(e.module, args))
	require.NoError(t, err)
	path := "/var/tmp/args-" + user + ".json"
	require.NoError(t, e.t.WriteFile(context.Background(), path, data, 0o600))
	e.t.MustExec(t, "chown", user, path)
	out := e.t.Shell(t, fmt.Sprintf("cd / && runuser -u %s -- env -u XDG_RUNTIME_DIR -u DBUS_SESSION_BUS_ADDRESS RICHT_SYSTEMD_BACKEND=%s %s %s",
		user, e.backend, bin, path))
	var r testenv.Result
	require.NoError(t, json.Unmarshal([]byte(out), &r), out)
	return r
}

// A unit whose processes come and go (a loop of short-lived children, as the demo daemon's
// `sleep 1` loop): a child that ends while a run decides its mappings has ended, it does
// not map deleted files. Before, once its root stopped resolving every path it mapped
// looked deleted, and the run reported replaced files, restarting the unit under
// restart_on: [libraries] (seen once in make test's foreign-build check, whose emulated
// module reads slowly). Forty runs against a unit that starts a child every few
// milliseconds: no run reports a process, none restarts.
func TestChildrenThatEndMidScanAreNotStale(t *testing.T) {
	t.Parallel()
	e := newEnv(t, backends[0])
	require.NoError(t, e.t.WriteFile(context.Background(), "/etc/systemd/system/churn.service",
		[]byte("[Service]\nExecStart=/bin/sh -c 'while :; do /bin/sleep 0.002; done'\n"), 0o644))
	ok(t, e.run(t, map[string]any{"unit": "churn"}))
	for i := range 40 {
		r := e.run(t, map[string]any{"unit": "churn", "restart_on": []any{"libraries"}})
		ok(t, r)
		if !assert.Empty(t, actions(r), "run %d", i) || !assert.Nil(t, r["libraries"], "run %d", i) {
			break
		}
	}
}
