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

const nginxPort = 8081

// nginxTarget is a target where nginx comes from an RPM in EL's shape (fixtures.ELNginx
// around Debian's nginx) and the repository carrying it is configured.
func nginxTarget(t *testing.T) *testenv.Target {
	t.Helper()
	if testing.Short() {
		t.Skip("end-to-end: needs Docker and ansible-playbook")
	}
	tg := testenv.Start(t, testenv.WithPackages(fixtures.DaemonPackages...))
	fixtures.AsEL(t, tg)
	require.NoError(t, tg.AddRepo(context.Background(), "el", testenv.Repo(t, fixtures.ELNginx("1.el10"), fixtures.ELNginx("2.el10"))))
	tg.LogUnitOnFailure(t, "nginx.service")
	return tg
}

// greets waits until nginx answers want.
func greets(t *testing.T, tg *testenv.Target, want string) {
	t.Helper()
	fixtures.Answers(t, tg, fmt.Sprintf("http://127.0.0.1:%d/", nginxPort), want)
}

// TestNginxExample runs the worked example playbooks/nginx.yml as its header says, then
// the role with one config (testdata/nginx-role.yml) on the same host.
func TestNginxExample(t *testing.T) {
	t.Parallel()
	tg := nginxTarget(t)
	vars := func(version, greeting string) map[string]any {
		return map[string]any{"nginx_version": version, "nginx_port": nginxPort, "nginx_greeting": greeting, "nginx_hosts": "targets"}
	}
	example := play(t, "nginx.yml", tg)
	example.ExtraVars = vars(fixtures.ELNginx("1.el10").EVRA(), "hello")

	r := example.RunOK(t)
	assert.Equal(t, 1, r.Changed(), "one task: %v", r.ChangedTasks)
	greets(t, tg, "hello")
	s := tg.Snapshot(t, "nginx.service")
	assert.Equal(t, "enabled", s.UnitFileState)
	r = example.RunOK(t)
	assert.Zero(t, r.Changed(), "converged: %v", r.ChangedTasks)

	t.Run("a new greeting reloads nginx: same main PID", func(t *testing.T) {
		before := tg.Snapshot(t, "nginx.service")
		p := example
		p.ExtraVars = vars(fixtures.ELNginx("1.el10").EVRA(), "reloaded")
		p.Args = []string{"--diff"}
		r := p.RunOK(t)
		assert.Contains(t, r.Output, `+        return 200 "reloaded\n";`)
		greets(t, tg, "reloaded")
		assert.Equal(t, before.MainPID, tg.Snapshot(t, "nginx.service").MainPID)
	})

	t.Run("a broken site is refused by the main config's tree validator: nothing written", func(t *testing.T) {
		before := tg.Snapshot(t, "nginx.service")
		site := tg.MustExec(t, "cat", "/etc/nginx/conf.d/site.conf")
		p := example
		// An unbalanced quote in the site's return: nginx -t of the whole tree refuses it.
		p.ExtraVars = vars(fixtures.ELNginx("1.el10").EVRA(), `broken" twice`)
		r := p.Run(t)
		require.NotZero(t, r.Failed(), "the task fails: %s", r.Output)
		assert.Contains(t, r.Output, "the tree validator")
		assert.Contains(t, r.Output, "site (/etc/nginx/conf.d/site.conf)")
		assert.Equal(t, site, tg.MustExec(t, "cat", "/etc/nginx/conf.d/site.conf"), "nothing written")
		assert.Equal(t, before.MainPID, tg.Snapshot(t, "nginx.service").MainPID)
		greets(t, tg, "reloaded")
	})

	t.Run("the role passes service_configs and the reactions through", func(t *testing.T) {
		before := tg.Snapshot(t, "nginx.service")
		role := play(t, "testdata/nginx-role.yml", tg)
		role.ExtraVars = vars(fixtures.ELNginx("1.el10").EVRA(), "from the role")
		r := role.RunOK(t)
		assert.Equal(t, []string{"richt.services.service : Service nginx (" + tg.Name() + ")"}, r.ChangedTasks, "the role's one task")
		greets(t, tg, "from the role")
		assert.Equal(t, before.MainPID, tg.Snapshot(t, "nginx.service").MainPID, "reloaded, not restarted")
		r = role.RunOK(t)
		assert.Zero(t, r.Changed())
	})

	t.Run("a new build restarts nginx", func(t *testing.T) {
		before := tg.Snapshot(t, "nginx.service")
		p := example
		p.ExtraVars = vars(fixtures.ELNginx("2.el10").EVRA(), "hello")
		p.RunOK(t)
		assert.Contains(t, tg.MustExec(t, "rpm", "-q", "nginx"), "nginx-1.26.3-2.el10")
		assert.NotEqual(t, before.MainPID, tg.Snapshot(t, "nginx.service").MainPID)
		greets(t, tg, "hello")
	})
}
