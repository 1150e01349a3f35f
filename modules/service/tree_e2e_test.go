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

// treeCheck is nginx's own check of its whole configuration: a tree validator (no %s).
const treeCheck = "/usr/sbin/nginx -t -q -c /etc/nginx/nginx.conf"

// tree is nginx as a service whose main configuration has the tree validator and whose
// conf.d site has none: nginx restarts for its package and reloads for either config.
type tree struct {
	nginx    string
	greeting string
	// upstream: the main configuration defines an upstream the site proxies /up to; the
	// two are valid only together.
	upstream bool
	// site replaces the site's content (a broken snippet).
	site     string
	validate string
	rollback bool
}

func newTree() tree { return tree{nginx: nginx1, greeting: "hello", validate: treeCheck} }

func (w tree) args() map[string]any {
	main := "# managed by the service module\n" + fixtures.ELNginxConf
	site := fmt.Sprintf("server {\n    listen 127.0.0.1:%d;\n    location / { return 200 \"%s\\n\"; }\n", webPort, w.greeting)
	if w.upstream {
		main = strings.Replace(main, "http {", "http {\n    upstream backend { server 127.0.0.1:9; }", 1)
		site += "    location /up { proxy_pass http://backend; }\n"
	}
	site += "}\n"
	if w.site != "" {
		site = w.site
	}
	return map[string]any{
		"name":     "web",
		"rollback": w.rollback,
		"packages": []any{map[string]any{"name": "nginx", "version": w.nginx}},
		"configs": []any{
			map[string]any{"name": "main", "path": "/etc/nginx/nginx.conf", "content": main, "validate": w.validate},
			map[string]any{"name": "site", "path": "/etc/nginx/conf.d/site.conf", "content": site},
		},
		"processes": []any{map[string]any{"unit": "nginx.service", "enabled": true, "timeout": testenv.ModuleTimeout(),
			"restart_on": []any{"package:nginx"}, "reload_on": []any{"config:main", "config:site"},
			"health": map[string]any{"http": fmt.Sprintf("http://127.0.0.1:%d/", webPort)}}},
	}
}

// brokenSite is a conf.d snippet nginx refuses, which nothing can validate on its own.
const brokenSite = "server {\n    lisen 127.0.0.1:8081;\n}\n"

// hostUntouched is what a refused run must leave as it found it: the site's content,
// nginx's main PID and its workers (a reload replaces them), no pending record, no
// rollback record, no temporary file beside the configs or in /tmp, and the host's mount
// table.
type hostUntouched struct {
	site, mounts, workers string
	pid                   int
}

func snapshotHost(t *testing.T, tg *testenv.Target) hostUntouched {
	t.Helper()
	pid := mainPID(t, tg, "nginx.service")
	return hostUntouched{
		site:    tg.MustExec(t, "cat", "/etc/nginx/conf.d/site.conf"),
		mounts:  tg.Shell(t, "cut -d' ' -f5 /proc/1/mountinfo | sort"),
		workers: workers(t, tg, pid),
		pid:     pid,
	}
}

// workers are the PIDs of nginx's worker processes under its master pid.
func workers(t *testing.T, tg *testenv.Target, pid int) string {
	t.Helper()
	w := tg.Shell(t, fmt.Sprintf("pgrep -P %d | sort", pid))
	require.NotEmpty(t, strings.TrimSpace(w), "nginx has workers")
	return w
}

func (h hostUntouched) check(t *testing.T, tg *testenv.Target, greeting string) {
	t.Helper()
	assert.Equal(t, h.site, tg.MustExec(t, "cat", "/etc/nginx/conf.d/site.conf"), "the site is as it was")
	assert.Equal(t, h.mounts, tg.Shell(t, "cut -d' ' -f5 /proc/1/mountinfo | sort"), "no mount is left on the host")
	assert.Equal(t, "", strings.TrimSpace(tg.Shell(t, "grep -l richt-tree /proc/*/mountinfo 2>/dev/null || true")), "no process holds the validator's namespace")
	assert.Equal(t, h.pid, mainPID(t, tg, "nginx.service"), "nginx keeps its main PID")
	assert.Equal(t, h.workers, workers(t, tg, h.pid), "nginx was not reloaded: the same workers")
	assert.Equal(t, "", strings.TrimSpace(tg.Shell(t, "ls -A /var/lib/richt/pending/ 2>/dev/null | grep nginx || true")), "no pending record")
	assert.Equal(t, "", strings.TrimSpace(tg.Shell(t, "ls -A /var/lib/richt/rollback 2>/dev/null || true")), "no rollback record")
	assert.Equal(t, "", strings.TrimSpace(tg.Shell(t, "ls -A /etc/nginx /etc/nginx/conf.d /tmp | grep richt || true")), "no temporary file")
	answers(t, tg, greeting)
}

func treeEnv(t *testing.T) *env {
	t.Helper()
	if testing.Short() {
		t.Skip("end-to-end: needs Docker")
	}
	e := &env{t: testenv.Start(t, testenv.WithPackages(fixtures.DaemonPackages...)),
		module: testenv.BuildModule(t, modules.Command, testenv.Named("service"))}
	fixtures.AsEL(t, e.t)
	repo := testenv.Repo(t, fixtures.ELNginx("1.el10"))
	require.NoError(t, e.t.AddRepo(context.Background(), "el", repo))
	e.t.LogUnitOnFailure(t, "nginx.service")
	return e
}

// TestTreeValidatorsJudgeTheWholeNginxTree is issue 42's end-to-end check of tree
// validators (item 3) and of a rollback with nothing to put back (item 5), with nginx in
// EL's unit shape: a broken conf.d snippet that has no validator of its own, next to a main
// configuration whose validator is nginx -t of the whole tree, is refused (in check mode
// too) with nginx's words and nothing written; a main configuration and a site valid only
// together are written in one run and reloaded once; with rollback, a refused config and a
// pin to a build no repository has touch nothing; a SIGKILL while a tree validator runs
// leaves nothing behind.
func TestTreeValidatorsJudgeTheWholeNginxTree(t *testing.T) {
	t.Parallel()
	e := treeEnv(t)
	tg := e.t
	w := newTree()

	t.Run("the first run writes both configs after the tree validator passed", func(t *testing.T) {
		r := e.run(t, w.args())
		require.False(t, r.Failed(), r.Msg())
		t.Logf("the plan: %v", r["plan"])
		assert.Contains(t, r["plan"], "config main: validate-tree")
		answers(t, tg, "hello")
	})

	for _, check := range []bool{true, false} {
		t.Run(fmt.Sprintf("a broken snippet with no validator of its own is refused (check mode %v)", check), func(t *testing.T) {
			h := snapshotHost(t, tg)
			bad := w
			bad.site = brokenSite
			r := e.run(t, with(bad.args(), "_ansible_check_mode", check))
			require.True(t, r.Failed(), "nginx -t refuses the new tree")
			t.Logf("the message: %s", r.Msg())
			assert.Equal(t, "config main", r["failed_step"])
			assert.Contains(t, r.Msg(), `the tree validator "`+treeCheck+`"`)
			assert.Contains(t, r.Msg(), "site (/etc/nginx/conf.d/site.conf)", "names the config that changed")
			assert.Contains(t, r.Msg(), `unknown directive "lisen"`, "nginx's words")
			assert.Contains(t, r.Msg(), "nothing was written")
			assert.False(t, r.Changed())
			h.check(t, tg, "hello")
		})
	}

	t.Run("a main configuration and a site valid only together: both written, reloaded once", func(t *testing.T) {
		up := w
		up.upstream, up.greeting = true, "together"
		r := e.run(t, up.args())
		require.False(t, r.Failed(), r.Msg())
		answers(t, tg, "together")
		// Now both drop the upstream: the new main with the old site (a %s validator's
		// view) is refused by nginx; the new tree is valid.
		h := snapshotHost(t, tg)
		apart := w
		apart.greeting = "apart"
		r = e.run(t, apart.args())
		require.False(t, r.Failed(), r.Msg())
		assert.Equal(t, []any{"reload"}, actions(t, r, "nginx.service"), "one reload for both configs")
		assert.Equal(t, h.pid, mainPID(t, tg, "nginx.service"))
		answers(t, tg, "apart")
		assert.NotContains(t, tg.MustExec(t, "cat", "/etc/nginx/nginx.conf"), "upstream")
		w = apart
	})

	t.Run("with rollback, a config the tree validator refuses: nothing had changed, nothing rolled back", func(t *testing.T) {
		h := snapshotHost(t, tg)
		bad := w
		bad.site, bad.rollback = brokenSite, true
		r := e.run(t, bad.args())
		require.True(t, r.Failed())
		t.Logf("the message: %s", r.Msg())
		assert.Contains(t, r.Msg(), "nothing had changed")
		assert.Contains(t, r.Msg(), `unknown directive "lisen"`)
		assert.False(t, r.Changed())
		assert.Nil(t, r["rolled_back"])
		h.check(t, tg, "apart")
	})

	t.Run("with rollback, a pin to a build no repository has: nothing had changed, nothing rolled back", func(t *testing.T) {
		h := snapshotHost(t, tg)
		pin := w
		pin.nginx, pin.rollback = "2:1.26.3-9.el10.noarch", true
		r := e.run(t, pin.args())
		require.True(t, r.Failed())
		t.Logf("the message: %s", r.Msg())
		assert.Contains(t, r.Msg(), "nothing had changed")
		assert.False(t, r.Changed())
		assert.Nil(t, r["rolled_back"])
		assert.Equal(t, nginx1, installed(t, tg))
		h.check(t, tg, "apart")
	})

	t.Run("a SIGKILL while a tree validator runs leaves no mount, no file, no record; the next run is clean", func(t *testing.T) {
		h := snapshotHost(t, tg)
		slow := w
		slow.greeting = "after the kill"
		// A validator that forks a child, says it runs (a file outside /tmp reaches the
		// host), then waits.
		slow.validate = `/bin/sh -c "sleep 301 & touch /var/tmp/tree-validator-runs; exec sleep 300"`
		args, err := json.Marshal(testenv.ModuleArgs(e.module, slow.args()))
		require.NoError(t, err)
		bin, err := tg.InstallModule(context.Background(), e.module)
		require.NoError(t, err)
		require.NoError(t, tg.WriteFile(context.Background(), "/var/tmp/tree-args.json", args, 0o600))
		out := tg.Shell(t, fmt.Sprintf(`rm -f /var/tmp/tree-validator-runs
%s /var/tmp/tree-args.json >/var/tmp/tree-out 2>&1 & p=$!
i=0; until [ -e /var/tmp/tree-validator-runs ]; do i=$((i+1)); [ $i -lt 1200 ] || break; sleep 0.05; done
grep -c richt-tree /proc/$(pgrep -x sleep | head -1)/mountinfo || true
kill -9 $p; wait $p; echo "module exit $?"
i=0; while pgrep -x sleep >/dev/null; do i=$((i+1)); [ $i -lt 200 ] || break; sleep 0.05; done
pgrep -a -x sleep || echo "no validator left"`, bin))
		t.Logf("the kill: %s", strings.TrimSpace(out))
		require.Contains(t, out, "module exit 137", "killed while the validator ran")
		assert.Contains(t, out, "no validator left", "the validator and its child died with the module")
		h.check(t, tg, "apart")

		next := w
		next.greeting = "after the kill"
		r := e.run(t, next.args())
		require.False(t, r.Failed(), r.Msg())
		assert.Equal(t, []any{"reload"}, actions(t, r, "nginx.service"))
		answers(t, tg, "after the kill")
		r = e.run(t, next.args())
		require.False(t, r.Failed(), r.Msg())
		assert.False(t, r.Changed(), "converged: %v", r["plan"])
	})
}
