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

// Real daemons from Debian's archive in EL's unit shape (fixtures.ELNginx, ELRedis):
// nginx Type=forking with PIDFile and ExecReload=nginx -s reload, redis Type=notify with
// no ExecReload, its configuration in Debian's /etc/redis (redis:redis 2770).
const (
	nginx1 = "2:1.26.3-1.el10.noarch"
	nginx2 = "2:1.26.3-2.el10.noarch"
	redis1 = "0:7.2.7-1.el10.noarch"
	// The ports the managed configurations listen on: not the daemons' defaults, so a
	// configuration that was not written cannot answer.
	webPort   = 8081
	redisPort = 6390
)

func daemonEnv(t *testing.T) *env {
	t.Helper()
	if testing.Short() {
		t.Skip("end-to-end: needs Docker")
	}
	e := &env{t: testenv.Start(t, testenv.WithPackages(fixtures.DaemonPackages...)),
		module: testenv.BuildModule(t, modules.Command, testenv.Named("service"))}
	fixtures.AsEL(t, e.t)
	repo := testenv.Repo(t, fixtures.ELNginx("1.el10"), fixtures.ELNginx("2.el10"), fixtures.ELRedis("1.el10"))
	require.NoError(t, e.t.AddRepo(context.Background(), "el", repo))
	e.t.LogUnitOnFailure(t, "nginx.service")
	e.t.LogUnitOnFailure(t, "redis.service")
	return e
}

// webService is the service under test: nginx and redis from one package set, nginx's
// main configuration (validated with nginx -t) and a conf.d site, a notes file nothing
// reads, and redis's configuration in Debian's /etc/redis; nginx restarts for its package
// and reloads for its configuration, redis restarts for its package and its configuration.
type webService struct {
	nginx, greeting, notes, maxmem string
	brokenMain                     bool // a main configuration nginx -t refuses
	state                          string
	// warmup puts a process ahead of nginx whose start takes seconds: the window between
	// the configs step and nginx's reaction in which a run can be killed.
	warmup bool
}

func newWeb() webService {
	return webService{nginx: nginx1, greeting: "hello", notes: "one", maxmem: "64mb", state: "present"}
}

func (w webService) args() map[string]any {
	// Not the package's own: a config the package ships as it is would need no write.
	main := "# managed by the service module\n" + fixtures.ELNginxConf
	if w.brokenMain {
		main = strings.Replace(main, "events {", "events {{", 1)
	}
	site := fmt.Sprintf("server {\n    listen 127.0.0.1:%d;\n    location / { return 200 \"%s\\n\"; }\n}\n", webPort, w.greeting)
	cache := fmt.Sprintf("bind 127.0.0.1\nport %d\nsupervised systemd\ndaemonize no\ndir /var/lib/redis\nlogfile \"\"\nmaxmemory %s\n", redisPort, w.maxmem)
	timeout := testenv.ModuleTimeout()
	nginx := map[string]any{"unit": "nginx.service", "enabled": true, "timeout": timeout,
		"restart_on": []any{"package:nginx"}, "reload_on": []any{"config:main", "config:site"},
		"health": map[string]any{"http": fmt.Sprintf("http://127.0.0.1:%d/", webPort)}}
	processes := []any{nginx,
		map[string]any{"unit": "redis.service", "enabled": true, "timeout": timeout,
			"restart_on": []any{"package:redis", "config:cache"},
			"health":     map[string]any{"tcp": fmt.Sprintf("127.0.0.1:%d", redisPort)}}}
	units := []any{}
	if w.warmup {
		units = append(units, map[string]any{"unit": "warmup.service",
			"content": "[Service]\nType=oneshot\nRemainAfterExit=yes\nExecStart=/bin/sleep 8\n"})
		processes = append([]any{map[string]any{"unit": "warmup.service", "timeout": timeout}}, processes...)
		nginx["after"] = []any{"warmup.service"}
	}
	return map[string]any{
		"name":  "web",
		"state": w.state,
		"packages": []any{
			map[string]any{"name": "nginx", "version": w.nginx},
			map[string]any{"name": "redis", "version": redis1},
		},
		"configs": []any{
			map[string]any{"name": "main", "path": "/etc/nginx/nginx.conf", "content": main, "validate": "/usr/sbin/nginx -t -q -c %s"},
			map[string]any{"name": "site", "path": "/etc/nginx/conf.d/site.conf", "content": site},
			map[string]any{"name": "notes", "path": "/etc/nginx/conf.d/NOTES", "content": w.notes},
			map[string]any{"name": "cache", "path": "/etc/redis/redis.conf", "content": cache, "owner": "redis", "group": "redis", "mode": "0640"},
		},
		"units":     units,
		"processes": processes,
	}
}

// actions is what the service did to unit's process.
func actions(t *testing.T, r testenv.Result, unit string) []any {
	t.Helper()
	procs, _ := r["processes"].([]any)
	for _, p := range procs {
		if m := p.(map[string]any); m["unit"] == unit {
			a, _ := m["actions"].([]any)
			return a
		}
	}
	t.Fatalf("no process %s in the result: %v", unit, r["processes"])
	return nil
}

// answers waits until nginx's site answers want.
func answers(t *testing.T, tg *testenv.Target, want string) {
	t.Helper()
	fixtures.Answers(t, tg, fmt.Sprintf("http://127.0.0.1:%d/", webPort), want)
}

func mainPID(t *testing.T, tg *testenv.Target, unit string) int {
	t.Helper()
	pid := tg.Snapshot(t, unit).MainPID
	require.NotZero(t, pid, "%s has a main process", unit)
	return pid
}

func pids(t *testing.T, tg *testenv.Target) (web, cache int) {
	return mainPID(t, tg, "nginx.service"), mainPID(t, tg, "redis.service")
}

// TestServiceConfigsDriveRealDaemons is issue 31's end-to-end check with real daemons, in
// order on one host: check mode on a clean host, the real run, a config change that
// reloads, an unrelated one, a restart by name, a pin move, a failing validate, a SIGKILL
// between the config write and the reaction, and the removal.
func TestServiceConfigsDriveRealDaemons(t *testing.T) {
	t.Parallel()
	e := daemonEnv(t)
	tg := e.t
	debianRedisConf := tg.MustExec(t, "cat", "/etc/redis/redis.conf")
	redisDir := tg.MustExec(t, "stat", "-c", "%a %U %G", "/etc/redis")
	require.Equal(t, "2770 redis redis\n", redisDir, "Debian's layout: the daemon's own group may write its configuration directory")

	w := newWeb()
	check := e.run(t, with(w.args(), "_ansible_check_mode", true, "_ansible_diff", true))
	require.False(t, check.Failed(), check.Msg())
	for _, p := range check["processes"].([]any) {
		t.Logf("check mode's process: %v", p)
	}

	t.Run("check mode on a clean host predicts the config writes and reactions and changes nothing", func(t *testing.T) {
		assert.True(t, check.Changed())
		assert.Equal(t, []string{
			"packages install-nevra,install-nevra",
			"config /etc/nginx/nginx.conf [write]",
			"config /etc/nginx/conf.d/site.conf [write]",
			"config /etc/nginx/conf.d/NOTES [write]",
			"config /etc/redis/redis.conf [write]",
			"process nginx.service [enable daemon-reload start]",
			"process redis.service [enable start]",
		}, steps(check))
		assert.Contains(t, fmt.Sprint(check["diff"]), `return 200 "hello`, "the diff shows the configs to be written")
		res, err := tg.Exec(context.Background(), "rpm", "-q", "nginx", "redis")
		require.NoError(t, err)
		assert.Contains(t, res.Stdout, "package nginx is not installed")
		tg.MustExec(t, "test", "!", "-e", "/etc/nginx")
		assert.Equal(t, debianRedisConf, tg.MustExec(t, "cat", "/etc/redis/redis.conf"))
	})

	t.Run("the real run takes the same steps and both daemons answer", func(t *testing.T) {
		r := e.run(t, w.args())
		require.False(t, r.Failed(), r.Msg())
		// The transaction's file triggers reloaded the manager after nginx's unit file was
		// in place: the real run does not reload it again (issue 42), the one step check
		// mode plans that a real run can find done.
		plan, stepsOf := asRun(check, r)
		assert.Equal(t, stepsOf, steps(r))
		assert.Equal(t, plan, r["plan"], "check mode's plan is the real run's")
		t.Logf("the service's plan: %v", r["plan"])
		answers(t, tg, "hello")
		assert.Equal(t, "PONG\n", tg.MustExec(t, "redis-cli", "-p", fmt.Sprint(redisPort), "ping"))
		assert.Equal(t, "640 redis redis\n", tg.MustExec(t, "stat", "-c", "%a %U %G", "/etc/redis/redis.conf"))
		assert.Equal(t, redisDir, tg.MustExec(t, "stat", "-c", "%a %U %G", "/etc/redis"), "the directory is left as the package made it")

		r = e.run(t, w.args())
		require.False(t, r.Failed(), r.Msg())
		assert.False(t, r.Changed(), "converged: %v", r["plan"])
	})

	t.Run("a config change reloads: same main PID, the new configuration answers", func(t *testing.T) {
		web, cache := pids(t, tg)
		w.greeting = "reloaded"
		r := e.run(t, w.args())
		require.False(t, r.Failed(), r.Msg())
		assert.Equal(t, []any{"reload"}, actions(t, r, "nginx.service"))
		assert.Empty(t, actions(t, r, "redis.service"))
		answers(t, tg, "reloaded")
		web2, cache2 := pids(t, tg)
		assert.Equal(t, web, web2, "a reload keeps nginx's master")
		assert.Equal(t, cache, cache2)
	})

	t.Run("an unrelated config change reacts nowhere", func(t *testing.T) {
		web, cache := pids(t, tg)
		w.notes = "two"
		r := e.run(t, w.args())
		require.False(t, r.Failed(), r.Msg())
		assert.True(t, r.Changed())
		assert.Empty(t, actions(t, r, "nginx.service"))
		assert.Empty(t, actions(t, r, "redis.service"))
		assert.Equal(t, "two", tg.MustExec(t, "cat", "/etc/nginx/conf.d/NOTES"))
		web2, cache2 := pids(t, tg)
		assert.Equal(t, web, web2)
		assert.Equal(t, cache, cache2)
	})

	t.Run("a config named in restart_on restarts only its process", func(t *testing.T) {
		web, cache := pids(t, tg)
		w.maxmem = "32mb"
		r := e.run(t, w.args())
		require.False(t, r.Failed(), r.Msg())
		assert.Equal(t, []any{"restart"}, actions(t, r, "redis.service"))
		assert.Empty(t, actions(t, r, "nginx.service"))
		web2, cache2 := pids(t, tg)
		assert.Equal(t, web, web2)
		assert.NotEqual(t, cache, cache2)
		assert.Contains(t, tg.MustExec(t, "redis-cli", "-p", fmt.Sprint(redisPort), "config", "get", "maxmemory"), "33554432")
	})

	t.Run("a package pin move restarts only the processes that name it", func(t *testing.T) {
		web, cache := pids(t, tg)
		since := strings.TrimSpace(tg.MustExec(t, "date", "+%s"))
		w.nginx = nginx2
		r := e.run(t, w.args())
		require.False(t, r.Failed(), r.Msg())
		t.Logf("the service's plan: %v", r["plan"])
		assert.Contains(t, tg.MustExec(t, "rpm", "-q", "nginx"), "nginx-1.26.3-2.el10")
		web2, cache2 := pids(t, tg)
		assert.NotEqual(t, web, web2, "nginx restarted")
		starts := tg.MustExec(t, "sh", "-c", "journalctl -u nginx.service --since @"+since+" -o cat | grep -c '^Started nginx.service' || true")
		assert.Equal(t, "1\n", starts, "once: by its package's scriptlet or by the service, not both (actions %v)", actions(t, r, "nginx.service"))
		assert.Equal(t, cache, cache2, "redis does not name package:nginx")
		assert.Empty(t, actions(t, r, "redis.service"))
		answers(t, tg, "reloaded")
		r = e.run(t, w.args())
		require.False(t, r.Failed(), r.Msg())
		assert.False(t, r.Changed(), "converged: %v", r["plan"])
	})

	t.Run("a failing validate changes nothing", func(t *testing.T) {
		web, cache := pids(t, tg)
		mainBefore := tg.MustExec(t, "cat", "/etc/nginx/nginx.conf")
		bad := w
		bad.brokenMain, bad.greeting, bad.maxmem = true, "never", "16mb"
		r := e.run(t, bad.args())
		require.True(t, r.Failed(), "nginx -t refuses the main configuration")
		assert.Contains(t, r.Msg(), `config "main"`)
		assert.Contains(t, r.Msg(), "nginx", "the validator's words")
		t.Logf("the message: %s", r.Msg())
		assert.Equal(t, mainBefore, tg.MustExec(t, "cat", "/etc/nginx/nginx.conf"))
		assert.NotContains(t, tg.MustExec(t, "cat", "/etc/nginx/conf.d/site.conf"), "never", "no config after it is written")
		assert.NotContains(t, tg.MustExec(t, "cat", "/etc/redis/redis.conf"), "16mb")
		tg.MustExec(t, "test", "!", "-e", "/var/lib/richt/pending/nginx.service.json")
		tg.MustExec(t, "test", "!", "-e", "/var/lib/richt/pending/redis.service.json")
		tg.MustExec(t, "sh", "-c", "! ls -a /etc/nginx /etc/nginx/conf.d /etc/redis | grep -q richt", "no temporary file left")
		web2, cache2 := pids(t, tg)
		assert.Equal(t, web, web2)
		assert.Equal(t, cache, cache2)
		answers(t, tg, "reloaded")
	})

	t.Run("reload_on a unit that cannot reload is refused before any change", func(t *testing.T) {
		a := w
		a.maxmem = "8mb"
		args := a.args()
		procs := args["processes"].([]any)
		redis := procs[len(procs)-1].(map[string]any)
		redis["restart_on"], redis["reload_on"] = []any{"package:redis"}, []any{"config:cache"}
		r := e.run(t, args)
		require.True(t, r.Failed(), "redis.service has no ExecReload")
		assert.Contains(t, r.Msg(), "reload_on")
		assert.Equal(t, "process redis.service", r["failed_step"])
		assert.False(t, r.Changed(), "refused before any step")
		assert.Empty(t, r["processes"])
		t.Logf("the message: %s", r.Msg())
		assert.NotContains(t, tg.MustExec(t, "cat", "/etc/redis/redis.conf"), "8mb")
		tg.MustExec(t, "test", "!", "-e", "/var/lib/richt/pending/redis.service.json")
	})

	t.Run("a SIGKILL between the config write and the reaction leaves the reaction for the next run", func(t *testing.T) {
		web, _ := pids(t, tg)
		w.warmup, w.greeting = true, "after the kill"
		args, err := json.Marshal(testenv.ModuleArgs(e.module, w.args()))
		require.NoError(t, err)
		bin, err := tg.InstallModule(context.Background(), e.module)
		require.NoError(t, err)
		require.NoError(t, tg.WriteFile(context.Background(), "/var/tmp/web-args.json", args, 0o600))
		// The run writes the site, then starts warmup.service (8 s) before nginx's turn:
		// killed once the site is written and warmup is starting.
		out := tg.Shell(t, fmt.Sprintf(`%s /var/tmp/web-args.json >/var/tmp/web-out 2>&1 & p=$!
i=0; until grep -q 'after the kill' /etc/nginx/conf.d/site.conf 2>/dev/null && [ "$(systemctl show -p ActiveState --value warmup.service)" = activating ]; do i=$((i+1)); [ $i -lt 600 ] || break; sleep 0.05; done
kill -9 $p; wait $p; echo "module exit $?"`, bin))
		t.Logf("the kill: %s", strings.TrimSpace(out))
		require.Contains(t, out, "module exit 137", "killed")
		assert.Contains(t, tg.MustExec(t, "cat", "/var/lib/richt/pending/nginx.service.json"), "reload", "the reaction is recorded")
		answers(t, tg, "reloaded")

		r := e.run(t, w.args())
		require.False(t, r.Failed(), r.Msg())
		assert.Equal(t, []any{"reload"}, actions(t, r, "nginx.service"), "carried out once, by the next run")
		answers(t, tg, "after the kill")
		web2, _ := pids(t, tg)
		assert.Equal(t, web, web2)
		tg.MustExec(t, "test", "!", "-e", "/var/lib/richt/pending/nginx.service.json")
		r = e.run(t, w.args())
		require.False(t, r.Failed(), r.Msg())
		assert.False(t, r.Changed(), "nothing owed: %v", r["plan"])
	})

	t.Run("absent removes only what was declared", func(t *testing.T) {
		tg.MustExec(t, "sh", "-c", "echo kept > /etc/nginx/conf.d/site.conf.rpmsave; echo kept > /etc/nginx/conf.d/other.conf")
		w.state = "absent"
		r := e.run(t, w.args())
		require.False(t, r.Failed(), r.Msg())
		t.Logf("the service's plan: %v", r["plan"])
		for _, u := range []string{"nginx.service", "redis.service", "warmup.service"} {
			assert.Equal(t, "inactive", tg.Snapshot(t, u).ActiveState, u)
		}
		res, err := tg.Exec(context.Background(), "rpm", "-q", "nginx", "redis")
		require.NoError(t, err)
		assert.Equal(t, "package nginx is not installed\npackage redis is not installed\n", res.Stdout)
		for _, p := range []string{"/etc/nginx/nginx.conf", "/etc/nginx/conf.d/site.conf", "/etc/nginx/conf.d/NOTES", "/etc/redis/redis.conf", "/etc/systemd/system/warmup.service"} {
			tg.MustExec(t, "test", "!", "-e", p)
		}
		assert.Equal(t, "kept\n", tg.MustExec(t, "cat", "/etc/nginx/conf.d/site.conf.rpmsave"))
		assert.Equal(t, "kept\n", tg.MustExec(t, "cat", "/etc/nginx/conf.d/other.conf"))
		assert.Equal(t, redisDir, tg.MustExec(t, "stat", "-c", "%a %U %G", "/etc/redis"))
		r = e.run(t, w.args())
		require.False(t, r.Failed(), r.Msg())
		assert.False(t, r.Changed())
	})
}
