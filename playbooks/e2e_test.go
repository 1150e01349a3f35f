// Package playbooks_test runs the collection the way Ansible users do: real
// ansible-playbook runs (Debian's ansible-core) against systemd targets.
package playbooks_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/richt/services/modules"
	"github.com/richt/services/testenv"
	"github.com/richt/services/testenv/fixtures"
)

var root, _ = filepath.Abs("..")

// collection stages the collection once (make build), as users get it; TestMain removes it.
var collection = sync.OnceValues(func() (string, error) {
	dir, err := os.MkdirTemp("", "richt-collection-")
	if err != nil {
		return "", err
	}
	sharedTempDirs.add(dir)
	out, err := exec.Command("make", "-C", root, "build", "BUILD="+dir).CombinedOutput()
	if err != nil {
		return "", &buildError{string(out)}
	}
	return dir, nil
})

type buildError struct{ out string }

func (e *buildError) Error() string { return "make build: " + e.out }

// repo is the fixture repository: demo 1.0 and 2.0, and a bystander package.
func repo(tb testing.TB) string {
	other := testenv.Package{Name: "other", Version: "1.0", Files: map[string]testenv.File{"/usr/share/other/README": {Content: "bystander\n"}}}
	return testenv.Repo(tb, fixtures.DemoPackage("1.0"), fixtures.DemoPackage("2.0"), other)
}

// target starts a target with the fixture repository's files in place but no .repo file:
// demo.yml writes that itself, as a play does for a repository it introduces.
func target(t *testing.T) *testenv.Target {
	t.Helper()
	if testing.Short() {
		t.Skip("end-to-end: needs Docker and ansible-playbook")
	}
	tg := testenv.Start(t)
	require.NoError(t, tg.CopyDir(context.Background(), repo(t), "/srv/richt-repos/fixtures"))
	tg.LogUnitOnFailure(t, "demo.service")
	return tg
}

func withRepoFile(t *testing.T, tg *testenv.Target) {
	require.NoError(t, tg.AddRepo(context.Background(), "fixtures", repo(t)))
}

func play(t *testing.T, path string, targets ...*testenv.Target) testenv.Playbook {
	t.Helper()
	coll, err := collection()
	require.NoError(t, err)
	if !filepath.IsAbs(path) {
		path = filepath.Join(root, "playbooks", path)
	}
	// Pipelining on, as users who want speed set it: the collection's fast path runs the
	// modules (fastpath_test.go covers its fallbacks to Ansible's normal path).
	return testenv.Playbook{Path: path, Targets: targets, CollectionsPath: coll, Env: []string{"ANSIBLE_PIPELINING=1"}}
}

func events(t *testing.T, tg *testenv.Target) (starts, reloads int) {
	out := tg.MustExec(t, "cat", "/run/demo/events")
	return strings.Count(out, "start "), strings.Count(out, "reload ")
}

func TestDemoScenario(t *testing.T) {
	t.Parallel()
	tg := target(t)
	demo := play(t, "demo.yml", tg)

	r := demo.RunOK(t)
	require.Positive(t, r.Changed())
	s := tg.Snapshot(t, "demo.service")
	require.Equal(t, "active", s.ActiveState)
	require.Equal(t, "enabled", s.UnitFileState)

	t.Run("second run reports no change", func(t *testing.T) {
		r := demo.RunOK(t)
		assert.Zero(t, r.Changed(), "changed tasks: %v", r.ChangedTasks)
	})

	t.Run("check and diff on a changed inventory show the changes and change nothing", func(t *testing.T) {
		before := tg.Snapshot(t, "demo.service")
		p := demo
		p.ExtraVars = map[string]any{"demo_version": "0:2.0-1.noarch", "demo_level": "debug"}
		p.Args = []string{"--check", "--diff"}
		r := p.RunOK(t)
		assert.Contains(t, r.Output, "+demo-0:2.0-1.noarch")
		assert.Contains(t, r.Output, "-demo-0:1.0-1.noarch")
		assert.Contains(t, r.Output, "+Environment=DEMO_LEVEL=debug")
		assert.Contains(t, r.ChangedTasks, "richt.services.service : Service demo ("+tg.Name()+")", "the role's one task")
		assert.Contains(t, tg.MustExec(t, "rpm", "-q", "demo"), "demo-1.0-1")
		assert.Contains(t, tg.MustExec(t, "cat", "/etc/systemd/system/demo.service.d/20-level.conf"), "DEMO_LEVEL=info")
		assert.Equal(t, testenv.Untouched, testenv.Classify(before, tg.Snapshot(t, "demo.service")))
	})

	t.Run("a drop-in change reloads, same PID", func(t *testing.T) {
		starts, reloads := events(t, tg)
		before := tg.Snapshot(t, "demo.service")
		p := demo
		p.ExtraVars = map[string]any{"demo_level": "debug"}
		p.RunOK(t)
		after := tg.Snapshot(t, "demo.service")
		assert.Equal(t, testenv.Reloaded, testenv.Classify(before, after))
		assert.Equal(t, before.MainPID, after.MainPID)
		s2, r2 := events(t, tg)
		assert.Equal(t, starts, s2)
		assert.Equal(t, reloads+1, r2)
		assert.Contains(t, tg.MustExec(t, "systemctl", "show", "-p", "Environment", "demo.service"), "DEMO_LEVEL=debug")
	})

	t.Run("a version change restarts once", func(t *testing.T) {
		starts, reloads := events(t, tg)
		before := tg.Snapshot(t, "demo.service")
		p := demo
		p.ExtraVars = map[string]any{"demo_version": "0:2.0-1.noarch", "demo_level": "debug"}
		p.RunOK(t)
		assert.Equal(t, testenv.Restarted, testenv.Classify(before, tg.Snapshot(t, "demo.service")))
		s2, r2 := events(t, tg)
		assert.Equal(t, starts+1, s2)
		assert.Equal(t, reloads, r2)
		assert.Contains(t, tg.MustExec(t, "rpm", "-q", "demo"), "demo-2.0-1")
	})

	t.Run("config and package change in one run: one restart, no reload", func(t *testing.T) {
		starts, reloads := events(t, tg)
		p := demo
		p.ExtraVars = map[string]any{"demo_version": "0:1.0-1.noarch", "demo_level": "warn"}
		p.RunOK(t)
		s2, r2 := events(t, tg)
		assert.Equal(t, starts+1, s2)
		assert.Equal(t, reloads, r2)
		assert.Contains(t, tg.MustExec(t, "systemctl", "show", "-p", "Description", "demo.service"), "demo daemon 1.0")
	})

	t.Run("state absent removes what it declared and nothing else", func(t *testing.T) {
		tg.MustExec(t, "dnf", "-y", "-q", "install-n", "other")
		tg.Shell(t, "printf '[Service]\\nEnvironment=ADMIN=1\\n' > /etc/systemd/system/demo.service.d/99-admin.conf")
		r := play(t, "removal.yml", tg).RunOK(t)
		assert.Positive(t, r.Changed())
		res, _ := tg.Exec(context.Background(), "rpm", "-q", "demo")
		assert.NotEqual(t, 0, res.ExitCode, "demo removed")
		tg.MustExec(t, "rpm", "-q", "other")
		tg.MustExec(t, "test", "!", "-e", "/etc/systemd/system/demo.service.d/10-reload.conf")
		tg.MustExec(t, "test", "!", "-e", "/etc/systemd/system/demo.service.d/20-level.conf")
		tg.MustExec(t, "test", "-e", "/etc/systemd/system/demo.service.d/99-admin.conf")
		assert.Contains(t, tg.MustExec(t, "systemctl", "show", "-p", "ActiveState", "demo.service"), "inactive")
		r = play(t, "removal.yml", tg).RunOK(t)
		assert.Zero(t, r.Changed(), "removal is idempotent: %v", r.ChangedTasks)
	})

	// The state the bench's converge from clean starts from: the package and the drop-in
	// directory gone, the unit still enabled (rpm -e keeps the wants link), so systemd holds
	// it as not-found. Started without a manager reload, systemd loads the reinstalled unit
	// file but not the new drop-in directory (systemd 252 does not even flag
	// NeedDaemonReload); the role's one sync before the start is what brings them in.
	t.Run("a reinstall under a kept wants link starts with its new drop-ins", func(t *testing.T) {
		tg.Shell(t, "rm -rf /etc/systemd/system/demo.service.d && "+
			"ln -sf /usr/lib/systemd/system/demo.service /etc/systemd/system/multi-user.target.wants/demo.service && "+
			"systemctl daemon-reload")
		require.Contains(t, tg.MustExec(t, "systemctl", "show", "-p", "LoadState", "demo.service"), "not-found")
		demo.RunOK(t)
		show := tg.MustExec(t, "systemctl", "show", "-p", "ActiveState", "-p", "Environment", "-p", "NeedDaemonReload", "-p", "DropInPaths", "demo.service")
		assert.Contains(t, show, "ActiveState=active")
		assert.Contains(t, show, "Environment=DEMO_LEVEL=info")
		assert.Contains(t, show, "NeedDaemonReload=no")
		assert.Contains(t, show, "/etc/systemd/system/demo.service.d/10-reload.conf")
	})
}

func TestSecretsStayOutOfAllOutput(t *testing.T) {
	t.Parallel()
	tg := target(t)
	withRepoFile(t, tg)
	tg.MustExec(t, "dnf", "-y", "-q", "install-n", "demo")
	for _, args := range [][]string{{"--diff"}, {"-vvv", "--diff"}} {
		p := play(t, filepath.Join(root, "playbooks/testdata/secret.yml"), tg)
		p.Args = args
		r := p.RunOK(t)
		assert.NotContains(t, r.Output, "s3cr3t", "ansible-playbook %v output", args)
		assert.Contains(t, r.Output, "content is not a valid unit file: line 2")
	}
	assert.Contains(t, tg.MustExec(t, "cat", "/etc/systemd/system/sec.service.d/10-token.conf"), "s3cr3t-token-4711")
}

func TestBecomeFromUnprivilegedUser(t *testing.T) {
	t.Parallel()
	tg := target(t)
	tg.Shell(t, `echo 'deploy:x:1500:1500::/home/deploy:/bin/sh' >> /etc/passwd &&
		echo 'deploy:x:1500:' >> /etc/group && echo 'deploy:*:19000:0:99999:7:::' >> /etc/shadow &&
		mkdir -p /home/deploy && chown deploy:deploy /home/deploy &&
		echo 'deploy ALL=(ALL) NOPASSWD:ALL' > /etc/sudoers.d/deploy && chmod 0440 /etc/sudoers.d/deploy`)
	p := play(t, "demo.yml", tg)
	p.HostVars = map[string]any{"ansible_user": "deploy", "ansible_become": true, "ansible_become_method": "sudo"}
	r := p.RunOK(t)
	assert.Positive(t, r.Changed())
	assert.Equal(t, "active", tg.Snapshot(t, "demo.service").ActiveState)
	assert.Contains(t, tg.MustExec(t, "stat", "-c", "%U", "/etc/systemd/system/demo.service.d/10-reload.conf"), "root")
	// The fast path cached the binary for the effective user (root), not the login user:
	// one build that holds every module the demo uses, with the stamp of its verification.
	coll, err := collection()
	require.NoError(t, err)
	hash := buildHash(t, coll)
	cached := strings.Fields(tg.MustExec(t, "ls", "/root/.cache/richt.services"))
	assert.Equal(t, []string{buildFile + "-" + hash, buildFile + "-" + hash + ".ok"}, cached)
	res, err := tg.Exec(context.Background(), "test", "-e", "/home/deploy/.cache")
	require.NoError(t, err)
	assert.NotZero(t, res.ExitCode)
}

func TestTwoTargetsWithTwoForks(t *testing.T) {
	t.Parallel()
	a, b := target(t), target(t)
	p := play(t, "demo.yml", a, b)
	p.Args = []string{"--forks", "2"}
	p.Env = []string{"ANSIBLE_PIPELINING=0"} // the whole demo once through Ansible's normal path
	r := p.RunOK(t)
	require.Len(t, r.Recap, 2)
	for host, rc := range r.Recap {
		assert.Positive(t, rc.Changed, host)
	}
	for _, tg := range []*testenv.Target{a, b} {
		assert.Equal(t, "active", tg.Snapshot(t, "demo.service").ActiveState)
	}
}

func TestModulesNeedNoPythonOnTheTarget(t *testing.T) {
	t.Parallel()
	tg := target(t)
	withRepoFile(t, tg)
	tg.MustExec(t, "dnf", "-y", "-q", "install-nevra", "demo-0:1.0-1.noarch")
	tg.Shell(t, "rm -f /usr/bin/python3*")
	p := play(t, filepath.Join(root, "playbooks/testdata/nopython.yml"), tg)
	r := p.RunOK(t)
	assert.Positive(t, r.Changed())
	assert.Equal(t, "active", tg.Snapshot(t, "nopy.service").ActiveState)
}

func TestGalaxyBuildInstallAndDocs(t *testing.T) {
	t.Parallel()
	tg := target(t)
	// The tarball ansible-galaxy built from the stage for the execution environment's
	// test (one build per process: one costs about 5 s of CPU, most of it compressing
	// the builds for every architecture).
	build, err := eeCollection()
	require.NoError(t, err)
	fresh := t.TempDir()
	b, err := exec.Command("ansible-galaxy", "collection", "install", "-p", fresh, build.tarball).CombinedOutput()
	require.NoError(t, err, string(b))
	for _, m := range modules.Names() {
		fi, err := os.Stat(filepath.Join(fresh, "ansible_collections/richt/services/plugins/modules", m))
		require.NoError(t, err)
		assert.NotZero(t, fi.Mode()&0o111, "%s is executable after install", m)
	}
	// Every module for every architecture EL ships, as a link the installed collection
	// keeps to that architecture's build.
	for _, arch := range []string{"x86_64", "aarch64", "ppc64le", "s390x"} {
		for _, m := range modules.Names() {
			link := filepath.Join(fresh, "ansible_collections/richt/services/bin", arch, m)
			target, err := filepath.EvalSymlinks(link)
			require.NoError(t, err, "%s build of %s", arch, m)
			assert.Equal(t, "richt-modules-"+arch, filepath.Base(target))
		}
	}
	for _, f := range []string{"bin/SHA256SUMS", "plugins/plugin_utils/fastpath.py", "plugins/action/fastpath.py", "meta/runtime.yml"} {
		assert.FileExists(t, filepath.Join(fresh, "ansible_collections/richt/services", f))
	}

	docs := map[string][]string{
		"rpm_exact":         {"name", "version", "state", "manager", "timeout", "unit_files_changed", "operation"},
		"unit_override":     {"unit", "name", "content", "path", "mode", "owner", "group", "sensitive", "daemon_reload", "reload_capable"},
		"systemd_lifecycle": {"unit", "state", "enabled", "timeout", "restart_on", "reload_on", "allow_missing", "reaction", "actions"},
		"service":           {"name", "state", "packages", "units", "dropins", "processes", "failed_step", "recorded"},
	}
	for _, m := range modules.Names() {
		require.Contains(t, docs, m, "every module's documentation is checked")
	}
	// One ansible-doc for all modules (a run costs about a second of CPU): it prints each
	// page after a "> RICHT.SERVICES.NAME" line.
	args := []string{}
	for _, m := range modules.Names() {
		args = append(args, "richt.services."+m)
	}
	cmd := exec.Command("ansible-doc", args...)
	cmd.Env = append(os.Environ(), "ANSIBLE_COLLECTIONS_PATH="+fresh, "ANSIBLE_NOCOLOR=1")
	b, err = cmd.CombinedOutput()
	require.NoError(t, err, string(b))
	pages := map[string]string{}
	for _, page := range strings.Split("\n"+string(b), "\n> RICHT.SERVICES.")[1:] {
		name, _, _ := strings.Cut(page, " ")
		pages[strings.ToLower(name)] = page
	}
	for m, words := range docs {
		require.Contains(t, pages, m, "ansible-doc shows %s", m)
		for _, w := range words {
			assert.Contains(t, pages[m], w, "ansible-doc %s mentions %s", m, w)
		}
	}
	cmd = exec.Command("ansible-doc", "-l", "richt.services")
	cmd.Env = append(os.Environ(), "ANSIBLE_COLLECTIONS_PATH="+fresh)
	b, err = cmd.CombinedOutput()
	require.NoError(t, err, string(b))
	for m := range docs {
		assert.Contains(t, string(b), "richt.services."+m)
	}

	p := play(t, filepath.Join(root, "playbooks/testdata/installed.yml"), tg)
	p.CollectionsPath = fresh
	p.RunOK(t)
}

// BenchmarkDemoScenario runs the demo role's full Molecule sequence (create → prepare →
// converge → idempotence → verify → destroy) and reports the median
// (go test -run '^$' -bench DemoScenario -benchtime 5x ./playbooks).
func BenchmarkDemoScenario(b *testing.B) {
	if testing.Short() {
		b.Skip("end-to-end")
	}
	coll, err := collection()
	require.NoError(b, err)
	dir := repo(b)
	var d []time.Duration
	for i := 0; i < b.N; i++ {
		began := time.Now()
		testenv.Scenario{
			Name:            "demo",
			CollectionsPath: coll,
			Log:             func(string, ...any) {},
			Prepare: testenv.Step{Func: func(tb testing.TB, ts []*testenv.Target) []string {
				require.NoError(tb, ts[0].CopyDir(context.Background(), dir, "/srv/richt-repos/fixtures"))
				return nil
			}},
			Converge: testenv.Step{Playbook: filepath.Join(root, "playbooks", "demo.yml")},
			Verify: testenv.Step{Func: func(tb testing.TB, ts []*testenv.Target) []string {
				s := ts[0].Snapshot(tb, "demo.service")
				if s.ActiveState != "active" || s.UnitFileState != "enabled" {
					tb.Fatalf("demo.service is %s/%s", s.ActiveState, s.UnitFileState)
				}
				return nil
			}},
		}.Run(b)
		d = append(d, time.Since(began))
	}
	b.ReportMetric(fixtures.Median(d).Seconds(), "s-median-scenario")
}

// `ansible-playbook --check` of the role for a service that is not installed yet: the
// packages task predicts the install, and the processes task plans for the unit that
// install brings instead of failing on a missing unit. Nothing on the host changes.
func TestRoleCheckModeOnACleanHost(t *testing.T) {
	t.Parallel()
	tg := target(t)
	// Its repositories are configured, as on any host a service is planned for (rpm_exact's
	// check mode asks DNF whether the transaction could run).
	withRepoFile(t, tg)
	p := play(t, "demo.yml", tg)
	p.Args = []string{"--check", "--diff"}
	r := p.RunOK(t)
	assert.Positive(t, r.Changed(), "check mode predicts the whole service")
	// Ansible wraps a warning at the terminal's width.
	assert.Contains(t, strings.Join(strings.Fields(r.Output), " "), "not installed yet; check mode plans for the unit the predicted package change installs")

	res, err := tg.Exec(t.Context(), "rpm", "-q", "demo")
	require.NoError(t, err)
	assert.NotZero(t, res.ExitCode, "no package installed")
	res, err = tg.Exec(t.Context(), "test", "-e", "/etc/systemd/system/demo.service.d")
	require.NoError(t, err)
	assert.NotZero(t, res.ExitCode, "no drop-in written")
	assert.Equal(t, "not-found", strings.TrimSpace(tg.MustExec(t, "systemctl", "show", "--value", "-p", "LoadState", "demo.service")))

	// The real run then does what check mode said, and check mode on the converged host
	// predicts nothing.
	p.Args = nil
	assert.Positive(t, p.RunOK(t).Changed())
	assert.Equal(t, "active", tg.Snapshot(t, "demo.service").ActiveState)
	p.Args = []string{"--check"}
	assert.Zero(t, p.RunOK(t).Changed())
}
