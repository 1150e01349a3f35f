package testenv_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/richt/services/testenv"
	"github.com/richt/services/testenv/fixtures"
)

func e2e(t testing.TB) {
	if testing.Short() {
		t.Skip("end-to-end: needs Docker")
	}
}

func TestWarmStart(t *testing.T) {
	t.Parallel()
	e2e(t)
	began := time.Now()
	tg := testenv.Start(t)
	t.Logf("start to ready: %s", time.Since(began).Round(time.Millisecond))
	assert.Equal(t, "running", strings.TrimSpace(tg.MustExec(t, "systemctl", "is-system-running")))
	assert.Contains(t, tg.MustExec(t, "systemctl", "--version"), "systemd")
}

// TestExtraPackagesMakeTheirOwnImage: WithPackages gives an image of its own, tagged by the
// package list, with the packages in it. It takes the daemons' image the service tests
// use (built once, or reused: EnsureImage's lock makes one build of it). It once removed
// an image of its own and built it again from Debian packages in every run, some 40 s of
// CPU; the tag is the hash of build.sh and the package list, so any change to what an
// image is made of builds it again anyway, and a fresh machine (CI) builds every image
// cold (docs/testenv.md, "Images").
func TestExtraPackagesMakeTheirOwnImage(t *testing.T) {
	t.Parallel()
	e2e(t)
	if os.Getenv("TESTENV_IMAGE") != "" {
		t.Skip("TESTENV_IMAGE is used as it is")
	}
	tag := testenv.ImageTag(testenv.Suite(), fixtures.DaemonPackages...)
	img, err := testenv.EnsureImage(context.Background(), fixtures.DaemonPackages...)
	require.NoError(t, err)
	assert.Equal(t, tag, img)
	assert.NotEqual(t, testenv.ImageTag(testenv.Suite()), tag, "a package list change gives a new image")
	tg := testenv.Start(t, testenv.WithPackages(fixtures.DaemonPackages...))
	for _, p := range fixtures.DaemonPackages {
		assert.Equal(t, "install ok installed", tg.MustExec(t, "dpkg-query", "-W", "-f", "${Status}", p), p)
	}
}

func TestBootFailureIsReportedClearly(t *testing.T) {
	t.Parallel()
	e2e(t)
	// A oneshot that multi-user.target wants and waits for, and that never finishes. It
	// needs nothing else (DefaultDependencies=no), so it is under way early in the boot;
	// on a loaded machine it may still be queued at the deadline, and either way the
	// message must name it with its job.
	unit := "[Unit]\nDescription=never finishes\nDefaultDependencies=no\nBefore=multi-user.target\n[Service]\nType=oneshot\nExecStart=/bin/sleep 600\n"
	ctx := context.Background()
	tg, err := testenv.StartContext(ctx,
		testenv.WithFile("/etc/systemd/system/stuck.service", []byte(unit), 0o644),
		testenv.WithFile("/etc/systemd/system/multi-user.target.d/stuck.conf", []byte("[Unit]\nWants=stuck.service\n"), 0o644),
		testenv.WithReadyTimeout(6*time.Second))
	if tg != nil {
		defer tg.Terminate(ctx)
	}
	require.Error(t, err)
	assert.Contains(t, err.Error(), "did not reach running or degraded within 6s")
	assert.Contains(t, err.Error(), "waiting on: ")
	assert.Regexp(t, `stuck\.service \(job start (running|waiting)\)`, err.Error())
}

func TestIdempotenceFailureNamesTheTask(t *testing.T) {
	t.Parallel()
	e2e(t)
	tg := testenv.Start(t)
	pb := filepath.Join(t.TempDir(), "changes.yml")
	require.NoError(t, os.WriteFile(pb, []byte(`- hosts: targets
  gather_facts: false
  tasks:
    - name: converged step
      ansible.builtin.raw: "true"
      changed_when: false
    - name: always reports a change
      ansible.builtin.raw: "true"
      changed_when: true
`), 0o644))
	r := testenv.Playbook{Path: pb, Targets: []*testenv.Target{tg}}.RunOK(t)
	assert.Equal(t, 1, r.Recap[tg.Name()].Changed)
	err := testenv.CheckIdempotent(r.ChangedTasks)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "always reports a change ("+tg.Name()+")")
	assert.NotContains(t, err.Error(), "converged step")
}

func countLabelled(t *testing.T, label string) int {
	out, err := exec.Command("docker", "ps", "-aq", "--filter", "label="+label).Output()
	require.NoError(t, err)
	return len(strings.Fields(string(out)))
}

func TestCleanupLeavesNoContainers(t *testing.T) {
	t.Parallel()
	e2e(t)
	label := fmt.Sprintf("org.richt.testenv.test=cleanup-%d", time.Now().UnixNano())
	key, value, _ := strings.Cut(label, "=")
	t.Run("two targets", func(t *testing.T) {
		testenv.Start(t, testenv.WithLabel(key, value))
		testenv.Start(t, testenv.WithLabel(key, value))
		assert.Equal(t, 2, countLabelled(t, label))
	})
	assert.Equal(t, 0, countLabelled(t, label), "t.Cleanup removed every target")
}

func TestParallelTargets(t *testing.T) {
	t.Parallel()
	e2e(t)
	var mu sync.Mutex
	seen := map[string]bool{}
	for i := 0; i < 3; i++ {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			t.Parallel()
			tg := testenv.Start(t)
			require.NoError(t, tg.WriteFile(context.Background(), "/run/whoami", []byte(fmt.Sprint(i)), 0o644))
			assert.Equal(t, fmt.Sprint(i), tg.MustExec(t, "cat", "/run/whoami"))
			mu.Lock()
			defer mu.Unlock()
			assert.False(t, seen[tg.Name()], "names never clash")
			seen[tg.Name()] = true
		})
	}
}

func TestScenarioWithGoSteps(t *testing.T) {
	t.Parallel()
	e2e(t)
	unit := "[Service]\nExecStart=" + fixtures.TestDaemonPath + " sc\nExecReload=/bin/kill -HUP $MAINPID\n"
	var phases []string
	testenv.Scenario{
		Name: "go-steps",
		Log: func(format string, args ...any) {
			phases = append(phases, strings.Fields(fmt.Sprintf(format, args...))[2])
		},
		Prepare: testenv.Step{Func: func(tb testing.TB, ts []*testenv.Target) []string {
			fixtures.InstallTestDaemon(tb, ts[0])
			require.NoError(tb, ts[0].WriteFile(context.Background(), "/etc/systemd/system/sc.service", []byte(unit), 0o644))
			return nil
		}},
		Converge: testenv.Step{Func: func(tb testing.TB, ts []*testenv.Target) []string {
			if ts[0].Snapshot(tb, "sc.service").ActiveState == "active" {
				return nil
			}
			ts[0].MustExec(tb, "systemctl", "start", "sc.service")
			return []string{"start sc.service"}
		}},
		Verify: testenv.Step{Func: func(tb testing.TB, ts []*testenv.Target) []string {
			// A simple service is started once forked: a SIGHUP before its shell set its
			// trap ended it (a make test saw "stopped" here).
			fixtures.Events(tb, ts[0], "sc")
			before := ts[0].Snapshot(tb, "sc.service")
			ts[0].MustExec(tb, "systemctl", "reload", "sc.service")
			assert.Equal(tb, testenv.Reloaded, testenv.Classify(before, ts[0].Snapshot(tb, "sc.service")))
			before = ts[0].Snapshot(tb, "sc.service")
			ts[0].MustExec(tb, "systemctl", "restart", "sc.service")
			assert.Equal(tb, testenv.Restarted, testenv.Classify(before, ts[0].Snapshot(tb, "sc.service")))
			return nil
		}},
	}.Run(t)
	assert.Equal(t, []string{"create", "prepare", "converge", "idempotence", "verify", "destroy"}, phases)
}

// BenchmarkWarmStart measures, from a cached image, how long a test waits for a ready
// target, side by side with what the same boot costs by hand, and reports the medians
// (go test -bench WarmStart -benchtime 5x ./testenv):
//
//   - s-median-ready: testenv.Start as tests call it, in a test process whose pool has a
//     spare of that kind booted ahead (RunWithPool);
//   - s-median-boot: testenv.Start of a target the pool does not serve (a label), which
//     boots while the test waits;
//   - s-median-bare: `docker run -d` of the same image with the same options, then
//     `docker exec … systemctl is-system-running` again and again, without a pause, until
//     it says running or degraded;
//   - ready/bare: the first over the last.
//
// Each measurement starts on a quiet pool (no spare booting), so no boot of one side runs
// during the other's.
func BenchmarkWarmStart(b *testing.B) {
	e2e(b)
	img, err := testenv.EnsureImage(context.Background())
	if err != nil {
		b.Fatal(err)
	}
	b.StopTimer()
	// The pool boots spares from a kind's second start on: two plain starts first, so the
	// measured ones find theirs.
	for i := 0; i < 2; i++ {
		_ = testenv.Start(b).Terminate(context.Background())
	}
	var ready, boot, bare []time.Duration
	for i := 0; i < b.N; i++ {
		testenv.WaitForSpares()
		d, err := bareStart(img)
		if err != nil {
			b.Fatal(err)
		}
		bare = append(bare, d)

		testenv.WaitForSpares()
		began := time.Now()
		tg := testenv.Start(b, testenv.WithLabel("bench", "unpooled"))
		boot = append(boot, time.Since(began))
		_ = tg.Terminate(context.Background())

		testenv.WaitForSpares()
		b.StartTimer()
		began = time.Now()
		tg = testenv.Start(b)
		ready = append(ready, time.Since(began))
		b.StopTimer()
		_ = tg.Terminate(context.Background())
	}
	b.ReportMetric(fixtures.Median(ready).Seconds(), "s-median-ready")
	b.ReportMetric(fixtures.Median(boot).Seconds(), "s-median-boot")
	b.ReportMetric(fixtures.Median(bare).Seconds(), "s-median-bare")
	b.ReportMetric(fixtures.Median(ready).Seconds()/fixtures.Median(bare).Seconds(), "ready/bare")
}

// bareStart boots image the way a script would without testenv, with the options testenv
// gives its targets, and returns the time from `docker run` to the first `running` or
// `degraded`; the container is removed afterwards.
func bareStart(image string) (time.Duration, error) {
	cgroup := "/sys/fs/cgroup:/sys/fs/cgroup:rw"
	if fi, err := os.Stat("/sys/fs/cgroup/unified"); err == nil && fi.IsDir() {
		cgroup = "/sys/fs/cgroup/unified:/sys/fs/cgroup:rw"
	}
	began := time.Now()
	out, err := exec.Command("docker", "run", "-d", "--label", testenv.LabelKey+"=bare",
		"--cgroupns=host", "-v", cgroup, "--tmpfs", "/run:rw,exec", "--tmpfs", "/run/lock:rw",
		"--cap-add", "ALL", "--cap-drop", "SYS_RESOURCE",
		"--security-opt", "seccomp=unconfined", "--security-opt", "apparmor=unconfined",
		image, "/sbin/init").Output()
	if err != nil {
		return 0, fmt.Errorf("docker run %s: %w", image, err)
	}
	id := strings.TrimSpace(string(out))
	defer exec.Command("docker", "rm", "-f", "-v", id).Run()
	for time.Since(began) < time.Minute {
		state, _ := exec.Command("docker", "exec", id, "systemctl", "is-system-running").Output()
		if s := strings.TrimSpace(string(state)); s == "running" || s == "degraded" {
			return time.Since(began), nil
		}
	}
	return 0, fmt.Errorf("bare %s: systemd not up after a minute", id)
}

func TestCopyDirKeepsModesAndGetsCurrentTimes(t *testing.T) {
	t.Parallel()
	e2e(t)
	tg := testenv.Start(t)
	src := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(src, "sub dir"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(src, "plain"), []byte("plain\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(src, "sub dir", "it's a tool"), []byte("#!/bin/sh\necho tool\n"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(src, "secret"), []byte("s\n"), 0o600))
	// /run is a tmpfs, which Docker's copy API cannot write into. Through the agent, then
	// through Docker's API: the same tree.
	ctx := context.Background()
	for _, via := range []string{"agent", "docker"} {
		if via == "docker" {
			tg.DropAgent()
		}
		require.NoError(t, tg.CopyDir(ctx, src, "/run/copied-"+via+"/x"))
		out := tg.Shell(t, `cd /run/copied-`+via+`/x && stat -c '%a %U %n' . plain secret "sub dir" "sub dir/it's a tool" && "./sub dir/it's a tool" &&
		find . -newermt '2000-01-01' -type f | wc -l && ls -A /var/tmp | grep -c richt-stage || true`)
		assert.Equal(t, "755 root .\n644 root plain\n600 root secret\n755 root sub dir\n755 root sub dir/it's a tool\ntool\n3\n0\n", out, via)
	}
	// A second copy over the first replaces its files; a directory already there keeps
	// its mode, and a link to a directory stays a link, as cp -R left them.
	require.NoError(t, tg.StartAgent(ctx))
	require.NoError(t, os.WriteFile(filepath.Join(src, "plain"), []byte("again\n"), 0o644))
	require.NoError(t, os.Chmod(filepath.Join(src, "plain"), 0o640))
	tg.Shell(t, `chmod 0700 "/run/copied-agent/x/sub dir" && mkdir -p /run/elsewhere && mv "/run/copied-docker/x/sub dir" /run/elsewhere/ && ln -s "/run/elsewhere/sub dir" "/run/copied-docker/x/sub dir"`)
	for _, via := range []string{"agent", "docker"} {
		require.NoError(t, tg.CopyDir(ctx, src, "/run/copied-"+via+"/x"))
	}
	assert.Equal(t, "640 again\n", tg.Shell(t, "printf '%s ' $(stat -c %a /run/copied-agent/x/plain); cat /run/copied-agent/x/plain"))
	assert.Equal(t, "700\n", tg.Shell(t, `stat -c %a "/run/copied-agent/x/sub dir"`))
	assert.Equal(t, "symbolic link\ntool\n", tg.Shell(t, `stat -c %F "/run/copied-docker/x/sub dir"; "/run/elsewhere/sub dir/it's a tool"`))
}

// A binary built with Defaults gets them in every run that does not set the key: here a
// start that outlasts the module's own 5s deadline goes through on the test-wide one,
// while the same start without the defaults runs out of time.
func TestDefaultsReachTheModule(t *testing.T) {
	t.Parallel()
	e2e(t)
	tg := testenv.Start(t)
	plain := testenv.BuildModule(t, "./cmd/richt-modules", testenv.Named("systemd_lifecycle"))
	loaded := testenv.BuildModule(t, "./cmd/richt-modules", testenv.Named("systemd_lifecycle"),
		testenv.Defaults(map[string]any{"timeout": testenv.ModuleTimeout()}))
	for _, u := range []string{"slow-a", "slow-b"} {
		require.NoError(t, tg.WriteFile(context.Background(), "/etc/systemd/system/"+u+".service",
			[]byte("[Service]\nExecStartPre=/bin/sleep 7\nExecStart=/bin/sleep infinity\n"), 0o644))
	}
	r := tg.RunModule(t, plain, map[string]any{"unit": "slow-a"})
	require.True(t, r.Failed(), "a 7 s start passes the module's 5s default")
	assert.Contains(t, r.Msg(), "deadline of 5s passed")
	r = tg.RunModule(t, loaded, map[string]any{"unit": "slow-b"})
	require.False(t, r.Failed(), r.Msg())
	assert.Equal(t, "active\n", tg.MustExec(t, "systemctl", "is-active", "slow-b.service"))
}

// Every playbook run carries the test-wide deadline as a variable, for module_defaults.
func TestPlaybookGetsModuleTimeout(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("runs ansible-playbook")
	}
	if _, err := exec.LookPath("ansible-playbook"); err != nil {
		t.Skip("ansible-playbook not installed")
	}
	path := filepath.Join(t.TempDir(), "var.yml")
	require.NoError(t, os.WriteFile(path, []byte(`- hosts: localhost
  connection: local
  gather_facts: false
  tasks:
    - ansible.builtin.assert:
        that: [testenv_module_timeout == want]
`), 0o600))
	testenv.Playbook{Path: path, ExtraVars: map[string]any{"want": testenv.ModuleTimeout()}}.RunOK(t)
	r := testenv.Playbook{Path: path, ExtraVars: map[string]any{testenv.ModuleTimeoutVar: "3m", "want": "3m"}}.Run(t)
	assert.Zero(t, r.ExitCode, "ExtraVars outrank it:\n%s", r.Output)
}

// TestMain gives this package's tests (and BenchmarkWarmStart) a pool of pre-booted targets.
func TestMain(m *testing.M) { os.Exit(testenv.RunWithPool(m)) }
