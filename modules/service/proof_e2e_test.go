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

// Issue 42, items 1 and 6: a reload counts only once it took effect, and one change gets
// one reaction however many runs race. Reloads are wired as users wire them (reload_on a
// config), with rollback and a health probe on the address the service answers on now,
// and no settle in the task.

// proofEnv is a target with the EL-shaped daemons (fixtures.ELNginx) and hupd, a daemon
// reloaded by kill -HUP (fixtures.HupDaemon).
func proofEnv(t *testing.T) *env {
	t.Helper()
	if testing.Short() {
		t.Skip("end-to-end: needs Docker")
	}
	e := &env{t: testenv.Start(t, testenv.WithPackages(fixtures.DaemonPackages...)),
		module: testenv.BuildModule(t, modules.Command, testenv.Named("service"))}
	fixtures.AsEL(t, e.t)
	repo := testenv.Repo(t, fixtures.ELNginx("1.el10"))
	require.NoError(t, e.t.AddRepo(context.Background(), "el", repo))
	fixtures.InstallHupDaemon(t, e.t)
	e.t.LogUnitOnFailure(t, "nginx.service")
	e.t.LogUnitOnFailure(t, "hupd.service")
	return e
}

// movedPort is where a configuration that moves the listener puts it: valid, and not
// where the probe (and every client) looks.
const movedPort = 8082

// reloadedNginx is nginx whose main configuration holds its site: a change of it reloads
// (nginx -s reload), the probe asks the site.
func reloadedNginx(port int, greeting string) map[string]any {
	main := fmt.Sprintf(`worker_processes 1;
error_log /var/log/nginx/error.log;
pid /run/nginx.pid;
events {
    worker_connections 64;
}
http {
    access_log off;
    server {
        listen 127.0.0.1:%d;
        location / { return 200 "%s\n"; }
    }
}
`, port, greeting)
	return map[string]any{
		"name":     "web",
		"rollback": true,
		"packages": []any{map[string]any{"name": "nginx", "version": nginx1}},
		"configs": []any{map[string]any{"name": "main", "path": "/etc/nginx/nginx.conf", "content": main,
			"validate": "/usr/sbin/nginx -t -q -c %s"}},
		"processes": []any{map[string]any{"unit": "nginx.service", "enabled": true, "timeout": "45s",
			"restart_on": []any{"package:nginx"}, "reload_on": []any{"config:main"},
			"health": map[string]any{"http": fmt.Sprintf("http://127.0.0.1:%d/", webPort)}}},
	}
}

// hupService is hupd as a service: its unit, its configuration (reload_on), rollback, a
// tcp probe on the port it listens on now.
func hupService(port int, greeting string) map[string]any {
	return map[string]any{
		"name":     "hup",
		"rollback": true,
		"units":    []any{map[string]any{"unit": "hupd.service", "content": fixtures.HupUnit}},
		"configs": []any{map[string]any{"name": "conf", "path": "/etc/hupd.conf",
			"content": fmt.Sprintf("port %d\ngreeting %s\n", port, greeting)}},
		"processes": []any{map[string]any{"unit": "hupd.service", "timeout": "45s", "reload_on": []any{"config:conf"},
			"health": map[string]any{"tcp": fmt.Sprintf("127.0.0.1:%d", hupPort)}}},
	}
}

const hupPort = 8091

// hupEvents counts hupd's starts and reloads.
func hupEvents(t *testing.T, tg *testenv.Target) (starts, reloads int) {
	t.Helper()
	out := tg.Shell(t, "cat /run/hupd/events 2>/dev/null || true")
	return strings.Count(out, "start "), strings.Count(out, "reload ")
}

// greets reads what hupd greets a connection on port with ("" when nothing listens).
func greets(t *testing.T, tg *testenv.Target, port int) string {
	t.Helper()
	return strings.TrimSpace(tg.Shell(t, fmt.Sprintf(`timeout 5 bash -c 'exec 3<>/dev/tcp/127.0.0.1/%d && cat <&3' 2>/dev/null || true`, port)))
}

// failedAndRolledBack checks a run whose reload was not proven: failed, naming that, and
// rolled back, healthy.
func failedAndRolledBack(t *testing.T, r testenv.Result) {
	t.Helper()
	require.True(t, r.Failed(), "the reload onto a configuration that does not answer where the probe asks must fail the task: %v", r)
	t.Logf("the message: %s", r.Msg())
	assert.Contains(t, r.Msg(), "not proven", "the reload's proof failed")
	assert.Contains(t, r.Msg(), "the previous state is back and healthy")
	rb := r.Map("rolled_back")
	require.NotNil(t, rb, "rolled_back: %v", r)
	assert.Equal(t, true, rb["healthy"])
}

// TestNginxReloadsAreProven: nginx in EL's unit shape, whose `nginx -s reload` returns
// while the old workers still answer. A change that works reloads once and passes; a
// valid configuration that moves the listener elsewhere fails the task (its old workers
// answered the probe at first) and the rollback puts the old configuration back, serving.
func TestNginxReloadsAreProven(t *testing.T) {
	t.Parallel()
	e := proofEnv(t)
	tg := e.t
	r := e.run(t, reloadedNginx(webPort, "one"))
	require.False(t, r.Failed(), r.Msg())
	answers(t, tg, "one")

	t.Run("a configuration that works reloads once and passes", func(t *testing.T) {
		master := mainPID(t, tg, "nginx.service")
		r := e.run(t, reloadedNginx(webPort, "two"))
		require.False(t, r.Failed(), r.Msg())
		assert.Equal(t, []any{"reload"}, actions(t, r, "nginx.service"))
		t.Logf("nginx's plan: %v", r["processes"])
		answers(t, tg, "two")
		assert.Equal(t, master, mainPID(t, tg, "nginx.service"), "a reload keeps the master")
		r = e.run(t, reloadedNginx(webPort, "two"))
		require.False(t, r.Failed(), r.Msg())
		assert.False(t, r.Changed(), "converged")
	})

	for round := 1; round <= 2; round++ {
		t.Run(fmt.Sprintf("a valid configuration that moves the listener fails and is rolled back (run %d)", round), func(t *testing.T) {
			good := tg.MustExec(t, "cat", "/etc/nginx/nginx.conf")
			r := e.run(t, reloadedNginx(movedPort, "moved"))
			failedAndRolledBack(t, r)
			assert.Equal(t, good, tg.MustExec(t, "cat", "/etc/nginx/nginx.conf"), "the old configuration is back")
			answers(t, tg, "two")
			assert.Equal(t, "active\n", tg.MustExec(t, "systemctl", "is-active", "nginx.service"))
			res, err := tg.Exec(context.Background(), "curl", "-s", "--max-time", "5", fmt.Sprintf("http://127.0.0.1:%d/", movedPort))
			require.NoError(t, err)
			assert.NotEqual(t, 0, res.ExitCode, "nothing answers where the failed configuration listened")
			tg.MustExec(t, "test", "!", "-e", "/var/lib/richt/pending/nginx.service.json")
		})
	}
}

// TestASignalledReloadCountsOnlyOnceItTookEffect: the same with a plain
// ExecReload=/bin/kill -HUP $MAINPID daemon (fixtures.HupDaemon), whose listener moves a
// moment after the signal; kill returns at once, so the reload job ends before it.
func TestASignalledReloadCountsOnlyOnceItTookEffect(t *testing.T) {
	t.Parallel()
	e := proofEnv(t)
	tg := e.t
	r := e.run(t, hupService(hupPort, "one"))
	require.False(t, r.Failed(), r.Msg())
	assert.Equal(t, "one", greets(t, tg, hupPort))

	t.Run("a configuration that works reloads once and passes", func(t *testing.T) {
		_, before := hupEvents(t, tg)
		pid := mainPID(t, tg, "hupd.service")
		r := e.run(t, hupService(hupPort, "two"))
		require.False(t, r.Failed(), r.Msg())
		assert.Equal(t, []any{"reload"}, actions(t, r, "hupd.service"))
		_, after := hupEvents(t, tg)
		assert.Equal(t, before+1, after, "one reload")
		assert.Equal(t, "two", greets(t, tg, hupPort))
		assert.Equal(t, pid, mainPID(t, tg, "hupd.service"))
	})

	for round := 1; round <= 2; round++ {
		t.Run(fmt.Sprintf("a configuration that moves the listener fails and is rolled back (run %d)", round), func(t *testing.T) {
			r := e.run(t, hupService(hupPort+round, "moved"))
			failedAndRolledBack(t, r)
			assert.Equal(t, fmt.Sprintf("port %d\ngreeting two\n", hupPort), tg.MustExec(t, "cat", "/etc/hupd.conf"), "the old configuration is back")
			assert.Equal(t, "two", greets(t, tg, hupPort), "and serving")
			assert.Equal(t, "", greets(t, tg, hupPort+round), "nothing where the failed configuration listened")
			tg.MustExec(t, "test", "!", "-e", "/var/lib/richt/pending/hupd.service.json")
		})
	}
}

// raceService is a service whose one part, a config or a drop-in of race.service
// (dropin), is reloaded into testd (fixtures.TestDaemon, which records every SIGHUP). gate
// makes the run hold after that part is written and before its reload: a config whose
// validator waits until the test lets it go, or, for a drop-in (written after the
// configs), a process ahead of testd whose start waits so.
func raceService(level int, dropin, gate bool) map[string]any {
	units := []any{map[string]any{"unit": "race.service", "content": "[Service]\nExecStart=" + fixtures.TestDaemonPath + " race\nExecReload=/bin/kill -HUP $MAINPID\n"}}
	configs := []any{}
	dropins := []any{}
	ref := "config:level"
	if dropin {
		ref = "dropin:race.service/20-level.conf"
		dropins = append(dropins, map[string]any{"unit": "race.service", "name": "20-level.conf", "content": fmt.Sprintf("[Service]\nEnvironment=RACE_LEVEL=%d\n", level)})
	} else {
		configs = append(configs, map[string]any{"name": "level", "path": "/etc/race.conf", "content": fmt.Sprintf("level %d\n", level)})
	}
	race := map[string]any{"unit": "race.service", "timeout": testenv.ModuleTimeout(), "reload_on": []any{ref}}
	processes := []any{race}
	switch {
	case gate && dropin:
		units = append(units, map[string]any{"unit": "race-gate.service",
			"content": "[Service]\nType=oneshot\nRemainAfterExit=yes\nExecStart=/bin/sh -c 'while [ ! -e /run/race-go ]; do sleep 0.05; done'\n"})
		processes = []any{map[string]any{"unit": "race-gate.service", "timeout": testenv.ModuleTimeout()}, race}
	case gate:
		configs = append(configs, map[string]any{"name": "gate", "path": "/etc/race-gate.conf", "content": fmt.Sprintf("round %d\n", level),
			"validate": `/bin/sh -c "while [ ! -e /run/race-go ]; do sleep 0.05; done" %s`})
	}
	return map[string]any{"name": "race", "units": units, "configs": configs, "dropins": dropins, "processes": processes}
}

// TestTwoRunsOfOneServiceReloadOnce is the race the soak met by chance (issue 42, item 5),
// made to happen every round: two runs of one service change one config (or one drop-in).
// The first writes it and then holds (raceService's gate); the second finds it written,
// nothing of its own to write, and the first run's reload recorded as pending: it reloads.
// Then the first run goes on to its process step, where its trigger says the part
// changed. It must find that change served by the second run's verified reload, sent
// after the part was in place: one reload per round, 20 rounds in a row.
func TestTwoRunsOfOneServiceReloadOnce(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	tg := e.t
	fixtures.InstallTestDaemon(t, tg)
	bin, err := tg.InstallModule(context.Background(), e.module)
	require.NoError(t, err)
	for _, part := range []struct {
		name, path, written string
		dropin              bool
	}{
		{name: "a config", path: "/etc/race.conf", written: "level %d"},
		{name: "a drop-in", path: "/etc/systemd/system/race.service.d/20-level.conf", written: "Environment=RACE_LEVEL=%d", dropin: true},
	} {
		t.Run(part.name, func(t *testing.T) {
			r := e.run(t, raceService(0, part.dropin, false))
			require.False(t, r.Failed(), r.Msg())
			for round := 1; round <= 20; round++ {
				_, before := fixtures.Events(t, tg, "race")
				for name, args := range map[string]map[string]any{"first": raceService(round, part.dropin, true), "second": raceService(round, part.dropin, false)} {
					data, err := json.Marshal(testenv.ModuleArgs(e.module, args))
					require.NoError(t, err)
					require.NoError(t, tg.WriteFile(context.Background(), "/var/tmp/race-"+name+".json", data, 0o600))
				}
				out := tg.Shell(t, fmt.Sprintf(`rm -f /run/race-go; systemctl stop race-gate.service 2>/dev/null
%[1]s /var/tmp/race-first.json >/var/tmp/race-first.out 2>&1 & p=$!
i=0; until grep -qx '%[3]s' %[2]s 2>/dev/null; do i=$((i+1)); [ $i -lt 1200 ] || break; sleep 0.05; done
%[1]s /var/tmp/race-second.json >/var/tmp/race-second.out 2>&1
touch /run/race-go; wait $p
cat /var/tmp/race-first.out; echo; echo race-between; cat /var/tmp/race-second.out`, bin, part.path, fmt.Sprintf(part.written, round)))
				first, second, _ := strings.Cut(out, "race-between\n")
				var rf, rs testenv.Result
				require.NoError(t, json.Unmarshal([]byte(strings.TrimSpace(first)), &rf), "round %d, the first run: %s", round, first)
				require.NoError(t, json.Unmarshal([]byte(strings.TrimSpace(second)), &rs), "round %d, the second run: %s", round, second)
				require.False(t, rf.Failed(), "round %d: %s", round, rf.Msg())
				require.False(t, rs.Failed(), "round %d: %s", round, rs.Msg())
				assert.Contains(t, actions(t, rs, "race.service"), "reload", "round %d: the second run carries out the first's pending reload", round)
				_, after := fixtures.Events(t, tg, "race")
				require.Equal(t, before+1, after, "round %d: one reload for one change (the first run's process: %v)", round, rf["processes"])
			}
		})
	}
}
