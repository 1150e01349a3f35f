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

// nginx3 is a build that installs and cannot start: it ships a conf.d file nginx -t
// refuses (fixtures.ELNginxBroken), and EL's unit runs nginx -t before the start.
const nginx3 = "2:1.26.3-3.el10.noarch"

func rollbackEnv(t *testing.T) *env {
	t.Helper()
	if testing.Short() {
		t.Skip("end-to-end: needs Docker")
	}
	e := &env{t: testenv.Start(t, testenv.WithPackages(fixtures.DaemonPackages...)),
		module: testenv.BuildModule(t, modules.Command, testenv.Named("service"))}
	fixtures.AsEL(t, e.t)
	repo := testenv.Repo(t, fixtures.ELNginx("1.el10"), fixtures.ELNginx("2.el10"), fixtures.ELNginxBroken("3.el10"))
	require.NoError(t, e.t.AddRepo(context.Background(), "el", repo))
	e.t.LogUnitOnFailure(t, "nginx.service")
	return e
}

// guarded is nginx as a service with rollback: its build, a conf.d site on its own port,
// optionally a drop-in; nginx restarts for each, and its health probe asks the site. The
// reload wiring users use for a config (reload_on) is proven in proof_e2e_test.go.
type guarded struct {
	nginx, greeting string
	status          int // the status the site answers with; the probe wants a 2xx
	dropin          string
	rollback        bool
	// timeout is nginx's step deadline: start and probe; empty for the 45s that fits a
	// start on a loaded machine.
	timeout string
}

// snippetCheck validates a conf.d snippet on its own: nginx -t of a main configuration
// that includes only the new file (docs/configs.md: a lone server block is no
// configuration).
const snippetCheck = `/bin/sh -c "printf 'pid /tmp/v.pid; events {} http { include %s; }' > /tmp/v.conf && /usr/sbin/nginx -t -q -c /tmp/v.conf"`

func newGuarded() guarded {
	return guarded{nginx: nginx1, greeting: "good", status: 200, rollback: true}
}

func (g guarded) args() map[string]any {
	site := fmt.Sprintf("server {\n    listen 127.0.0.1:%d;\n    location / { return %d \"%s\\n\"; }\n}\n", webPort, g.status, g.greeting)
	// The probe's deadline is the step's: a probe that never answers fails once it has
	// passed. Long enough for a loaded machine's start, short enough for a test; a step
	// whose probe is meant never to pass sets its own (below), so the test does not wait
	// out a deadline sized for a slow start.
	timeout := g.timeout
	if timeout == "" {
		timeout = "45s"
	}
	nginx := map[string]any{"unit": "nginx.service", "enabled": true, "timeout": timeout,
		"restart_on": []any{"package:nginx", "config:site"},
		"health":     map[string]any{"http": fmt.Sprintf("http://127.0.0.1:%d/", webPort)}}
	dropins := []any{}
	if g.dropin != "" {
		dropins = append(dropins, map[string]any{"unit": "nginx.service", "name": "50-tuning.conf", "content": g.dropin})
		nginx["restart_on"] = []any{"package:nginx", "config:site", "dropin:nginx.service/50-tuning.conf"}
	}
	return map[string]any{
		"name":     "web",
		"rollback": g.rollback,
		"packages": []any{map[string]any{"name": "nginx", "version": g.nginx}},
		"configs": []any{
			map[string]any{"name": "site", "path": "/etc/nginx/conf.d/site.conf", "content": site, "validate": snippetCheck},
		},
		"dropins":   dropins,
		"processes": []any{nginx},
	}
}

// leftNothing checks that a run that ended left no rollback record, no saved file and
// no temporary file, and keeps only the installed build.
func leftNothing(t *testing.T, tg *testenv.Target, build string) {
	t.Helper()
	assert.Equal(t, "", strings.TrimSpace(tg.Shell(t, "ls -A /var/lib/richt/rollback 2>/dev/null || true")), "no rollback record is left")
	assert.Equal(t, "nginx-"+strings.Replace(build, ":", "~", 1)+".rpm", strings.TrimSpace(tg.Shell(t, "ls /var/cache/richt/rpms/web-*/")),
		"only the installed build is kept")
	assert.Equal(t, "", strings.TrimSpace(tg.Shell(t, "ls -A /etc/nginx/conf.d | grep richt || true")), "no temporary file")
}

func installed(t *testing.T, tg *testenv.Target) string {
	t.Helper()
	return strings.TrimSpace(tg.MustExec(t, "rpm", "-q", "--qf", "%{EPOCH}:%{VERSION}-%{RELEASE}.%{ARCH}", "nginx"))
}

// rolledBack checks a failed run whose rollback put build and greeting back.
func rolledBack(t *testing.T, tg *testenv.Target, r testenv.Result, cause, build, greeting string) {
	t.Helper()
	require.True(t, r.Failed(), "the change fails")
	t.Logf("message: %s", r.Msg())
	assert.Contains(t, r.Msg(), cause, "the message names the first failure")
	assert.Contains(t, r.Msg(), "the previous state is back and healthy")
	rb, _ := r["rolled_back"].(map[string]any)
	require.NotNil(t, rb, "rolled_back: %v", r)
	assert.Equal(t, true, rb["healthy"])
	assert.Equal(t, build, installed(t, tg))
	answers(t, tg, greeting)
	assert.Equal(t, "active\n", tg.MustExec(t, "systemctl", "is-active", "nginx.service"))
}

// TestRollbackPutsTheLastGoodStateBack is issue 32's end-to-end check: nginx from Debian's
// archive in EL's unit shape, a service with rollback: a new build that cannot start, a
// config that passes its validator but fails the probe, a drop-in that breaks the start;
// each time the previous build, files and process come back and answer, the task fails
// naming the cause, and the same run again does the same and leaves nothing behind. Then
// a rollback that could not be done is refused before any change, and a SIGKILL at each
// step of a failing run and of its rollback leaves a host the next run ends all old.
func TestRollbackPutsTheLastGoodStateBack(t *testing.T) {
	t.Parallel()
	e := rollbackEnv(t)
	tg := e.t
	g := newGuarded()

	t.Run("a rollback that could not be done is refused before any change", func(t *testing.T) {
		plain := g
		plain.rollback = false
		r := e.run(t, plain.args())
		require.False(t, r.Failed(), r.Msg())
		answers(t, tg, "good")
		// The build installed now leaves every repository; nothing kept it.
		tg.Shell(t, "mv /etc/yum.repos.d/el.repo /root/el.repo.off")
		defer tg.Shell(t, "mv /root/el.repo.off /etc/yum.repos.d/el.repo")
		only2 := testenv.Repo(t, fixtures.ELNginx("2.el10"))
		require.NoError(t, tg.AddRepo(context.Background(), "el2", only2))
		defer tg.Shell(t, "rm -f /etc/yum.repos.d/el2.repo")
		up := g
		up.nginx, up.greeting = nginx2, "newer"
		for _, check := range []bool{true, false} {
			r := e.run(t, with(up.args(), "_ansible_check_mode", check))
			require.True(t, r.Failed(), "refused (check mode %v)", check)
			assert.Contains(t, r.Msg(), "nginx-"+nginx1+", which a rollback would install, cannot be installed again")
			assert.Contains(t, r.Msg(), "nothing was changed")
			assert.Equal(t, "rollback", r["failed_step"])
			assert.False(t, r.Changed())
		}
		assert.Equal(t, nginx1, installed(t, tg))
		answers(t, tg, "good")
		assert.Equal(t, "", strings.TrimSpace(tg.Shell(t, "ls -A /var/lib/richt/rollback 2>/dev/null || true")))
	})

	t.Run("converged with rollback: the installed build is kept, no record", func(t *testing.T) {
		r := e.run(t, g.args())
		require.False(t, r.Failed(), r.Msg())
		// Nothing changes: nothing to put back, and nothing is kept yet.
		assert.Nil(t, r["rollback"])
		g.greeting = "kept"
		r = e.run(t, g.args())
		require.False(t, r.Failed(), r.Msg())
		assert.Equal(t, []any{"restart"}, actions(t, r, "nginx.service"))
		answers(t, tg, "kept")
		tg.MustExec(t, "test", "!", "-e", "/var/lib/richt/rollback/web.json")
	})

	t.Run("check mode says what a rollback would put back", func(t *testing.T) {
		up := g
		up.nginx = nginx3
		r := e.run(t, with(up.args(), "_ansible_check_mode", true))
		require.False(t, r.Failed(), r.Msg())
		plan, _ := r["rollback"].(map[string]any)
		require.NotNil(t, plan, "rollback: %v", r)
		assert.Equal(t, []any{map[string]any{"name": "nginx", "restore": []any{"nginx-" + nginx1}}}, plan["packages"])
		assert.Contains(t, fmt.Sprint(r["plan"]), "rollback: keep nginx-"+nginx1)
		assert.Equal(t, nginx1, installed(t, tg))
	})

	t.Run("a new build that cannot start: the previous build comes back and answers, twice", func(t *testing.T) {
		up := g
		up.nginx = nginx3
		for range 2 {
			r := e.run(t, up.args())
			rolledBack(t, tg, r, "process nginx.service", nginx1, "kept")
			rb := r["rolled_back"].(map[string]any)
			assert.Equal(t, []any{map[string]any{"name": "nginx", "restore": []any{"nginx-" + nginx1}, "from": []any{"nginx-" + nginx3}}}, rb["packages"])
			leftNothing(t, tg, nginx1)
			tg.MustExec(t, "test", "!", "-e", "/etc/nginx/conf.d/build.conf")
		}
	})

	t.Run("a config that passes its validator but fails the probe: the previous config comes back", func(t *testing.T) {
		bad := g
		bad.status, bad.greeting = 503, "unavailable"
		// The probe never passes, so the step always runs to its deadline: 10s, as for
		// every probe meant to fail (docs/testenv.md), enough for nginx's restart before
		// it on a loaded machine and for the rollback's restart and passing probe after.
		bad.timeout = "10s"
		for range 2 {
			r := e.run(t, bad.args())
			rolledBack(t, tg, r, "health", nginx1, "kept")
			assert.Contains(t, tg.MustExec(t, "cat", "/etc/nginx/conf.d/site.conf"), `"kept`)
			leftNothing(t, tg, nginx1)
		}
	})

	t.Run("a drop-in that breaks the start: removed again, the process answers", func(t *testing.T) {
		bad := g
		bad.dropin = "[Service]\nExecStartPre=/bin/false\n"
		for range 2 {
			r := e.run(t, bad.args())
			rolledBack(t, tg, r, "process nginx.service", nginx1, "kept")
			tg.MustExec(t, "test", "!", "-e", "/etc/systemd/system/nginx.service.d/50-tuning.conf")
			assert.Equal(t, "no\n", tg.MustExec(t, "systemctl", "show", "-p", "NeedDaemonReload", "--value", "nginx.service"))
			leftNothing(t, tg, nginx1)
		}
	})

	// A SIGKILL of the module at each step of a failing run and of its rollback: the
	// next run with the same arguments ends all old and answering, and leaves nothing.
	kills := []struct {
		name, when string
		revert     bool
	}{
		{"after the record, before the packages step", `ls /var/lib/richt/rollback/*.json >/dev/null 2>&1`, false},
		{"between the new build and the failing start", `rpm -q nginx | grep -q 3.el10`, false},
		{"during the rollback", `grep -qs '"phase": "restoring"' /var/lib/richt/rollback/*.json`, false},
		{"during the rollback, and the old arguments back", `grep -qs '"phase": "restoring"' /var/lib/richt/rollback/*.json`, true},
	}
	for _, k := range kills {
		t.Run("a SIGKILL "+k.name+": the next run ends all old", func(t *testing.T) {
			up := g
			up.nginx = nginx3
			// The next run: the same arguments, or (the last kill) the old ones back, as a
			// user who reverts the change runs them.
			next, fails := up, true
			if k.revert {
				next, fails = g, false
			}
			args, err := json.Marshal(testenv.ModuleArgs(e.module, up.args()))
			require.NoError(t, err)
			bin, err := tg.InstallModule(context.Background(), e.module)
			require.NoError(t, err)
			require.NoError(t, tg.WriteFile(context.Background(), "/var/tmp/rollback-args.json", args, 0o600))
			out := tg.Shell(t, fmt.Sprintf(`%s /var/tmp/rollback-args.json >/var/tmp/rollback-out 2>&1 & p=$!
i=0; until %s; do i=$((i+1)); [ $i -lt 1200 ] || break; sleep 0.025; done
kill -9 $p; wait $p; echo "module exit $?"`, bin, k.when))
			t.Logf("the kill: %s", strings.TrimSpace(out))
			t.Logf("after the kill: %s; record: %s", installed(t, tg), tg.Shell(t, "cat /var/lib/richt/rollback/*.json 2>/dev/null | tr -d '\\n' | cut -c1-300 || true"))
			r := e.run(t, next.args())
			if fails {
				rolledBack(t, tg, r, "process nginx.service", nginx1, "kept")
			} else {
				require.False(t, r.Failed(), r.Msg())
				assert.Equal(t, nginx1, installed(t, tg))
				answers(t, tg, "kept")
			}
			leftNothing(t, tg, nginx1)
			tg.MustExec(t, "test", "!", "-e", "/var/lib/richt/pending/nginx.service.json")
		})
	}

	t.Run("a change that works ends the record and keeps only the new build", func(t *testing.T) {
		// The kills above started nginx more often than its StartLimitBurst allows
		// within StartLimitIntervalSec (5 in 10 s); a host does not change that fast.
		tg.MustExec(t, "systemctl", "reset-failed", "nginx.service")
		up := g
		up.nginx, up.greeting = nginx2, "newer"
		r := e.run(t, up.args())
		require.False(t, r.Failed(), r.Msg())
		answers(t, tg, "newer")
		assert.Equal(t, nginx2, installed(t, tg))
		leftNothing(t, tg, nginx2)
	})
}
