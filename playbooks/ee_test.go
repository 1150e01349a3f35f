package playbooks_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/richt/services/ee"
	"github.com/richt/services/ee/runner"
	"github.com/richt/services/testenv"
)

// eeBuild is the collection as make ee takes it: the staged tree (a collections path) and
// the tarball built from it.
type eeBuild struct{ dir, tarball string }

// eeCollection builds the collection's tarball once, from the stage the package's other
// tests use (collection(), make build), with make collection's own command
// (ansible-galaxy collection build in the staged tree): one test process compiles the
// modules for four architectures once, not once for the stage and again for make
// collection. The image installs the collection from the tarball, and the plain
// ansible-playbook runs the test compares with use the same stage; the Galaxy test installs
// the same tarball. (Tests that import the stage's plugins may leave __pycache__ in it:
// ansible-galaxy leaves those out.)
var eeCollection = sync.OnceValues(func() (eeBuild, error) {
	dir, err := collection()
	if err != nil {
		return eeBuild{}, err
	}
	out, err := os.MkdirTemp("", "richt-ee-collection-")
	if err != nil {
		return eeBuild{}, err
	}
	sharedTempDirs.add(out)
	cmd := exec.Command("ansible-galaxy", "collection", "build", "--force", "--output-path", out)
	cmd.Dir = filepath.Join(dir, "ansible_collections", "richt", "services")
	if msg, err := cmd.CombinedOutput(); err != nil {
		return eeBuild{}, fmt.Errorf("ansible-galaxy collection build in %s: %w\n%s", cmd.Dir, err, msg)
	}
	tarballs, err := filepath.Glob(filepath.Join(out, "richt-services-*.tar.gz"))
	if err != nil || len(tarballs) != 1 {
		return eeBuild{}, fmt.Errorf("ansible-galaxy collection build left %d tarballs in %s: %v", len(tarballs), out, err)
	}
	return eeBuild{dir: dir, tarball: tarballs[0]}, nil
})

// sharedTempDirs are the directories the package's tests share through a sync.Once (no
// test's t.TempDir outlives the others), removed by TestMain once every test has ended.
var sharedTempDirs tempDirs

type tempDirs struct {
	mu   sync.Mutex
	dirs []string
}

func (d *tempDirs) add(dir string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.dirs = append(d.dirs, dir)
}

func (d *tempDirs) removeAll() {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, dir := range d.dirs {
		if err := os.RemoveAll(dir); err != nil {
			fmt.Fprintf(os.Stderr, "remove %s: %v\n", dir, err)
		}
	}
	d.dirs = nil
}

// TestMain runs the package's tests with a pool of pre-booted targets (docs/testenv.md)
// and removes its shared temporary directories after all of them.
func TestMain(m *testing.M) {
	code := testenv.RunWithPool(m)
	sharedTempDirs.removeAll()
	os.Exit(code)
}

// eeImage builds the execution environment once per test process, or reuses the image
// with the same content key (make ee's).
var eeImage = sync.OnceValues(func() (ee.Image, error) {
	build, err := eeCollection()
	if err != nil {
		return ee.Image{}, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	return ee.Ensure(ctx, ee.Options{Definition: filepath.Join(root, "execution-environment.yml"), Collection: build.tarball})
})

// machineCredential is what an AWX machine credential with privilege escalation gives a
// job: a login user, the key (env/ssh_key, loaded into ansible-runner's ssh-agent) and
// become through sudo.
var machineCredential = map[string]any{"ansible_user": "deploy", "ansible_become": true, "ansible_become_method": "sudo"}

// eeInventory addresses each target by its address on Docker's bridge, which the worker's
// container reaches as this process does.
func eeInventory(t *testing.T, targets ...*testenv.Target) map[string]any {
	t.Helper()
	hosts := map[string]any{}
	for _, tg := range targets {
		a, err := tg.SSH(t.Context())
		require.NoError(t, err)
		vars := a.HostVars()
		delete(vars, "ansible_ssh_private_key_file") // the key comes from env/ssh_key
		vars["ansible_python_interpreter"] = "/usr/bin/python3"
		for k, v := range machineCredential {
			vars[k] = v
		}
		hosts[tg.Name()] = vars
	}
	return map[string]any{"all": map[string]any{"children": map[string]any{"targets": map[string]any{"hosts": hosts}}}}
}

// demoProject is the demo play as a project directory: demo.yml and the vars file it reads.
func demoProject(t *testing.T) map[string][]byte {
	t.Helper()
	files := map[string][]byte{}
	for _, rel := range []string{"demo.yml", "vars/demo_service.yml"} {
		data, err := os.ReadFile(filepath.Join(root, "playbooks", rel))
		require.NoError(t, err)
		files[rel] = data
	}
	return files
}

// resultKeys are a result's keys, less those a callback shows or hides by verbosity.
func resultKeys(res map[string]any) []string {
	var keys []string
	for k := range res {
		if strings.HasPrefix(k, "_ansible") || k == "invocation" || k == "diff" || k == "exception" {
			continue
		}
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// volatileKeys are the keys, at any depth of the service's result, whose values differ
// between two runs that did the same: the equality check leaves them out.
var volatileKeys = map[string]string{
	"changed_at":          "when the change was made, on the target's clock",
	"files_placed":        "boot id and monotonic microseconds",
	"main_pid":            "a PID",
	"journal":             "journal lines, with times and PIDs",
	"transaction_log":     "named by the transaction's start time",
	"transaction_scope":   "named by the transaction's start time",
	"earlier_transaction": "an earlier transaction's time-named record",
	"stdout":              "DNF's output, with download times and speeds",
	"stderr":              "DNF's output",
	"attempts":            "the health probe's tries until it answered",
	"observed":            "memo or rpm-query: a memo is only kept when the RPM database had settled, a race with the clock",
}

// stableResult is res without the keys resultKeys leaves out (top level, as the callback
// prints) and without volatileKeys at any depth, with the times in its strings masked.
func stableResult(res map[string]any) map[string]any {
	out := map[string]any{}
	for _, k := range resultKeys(res) {
		if _, volatile := volatileKeys[k]; !volatile {
			out[k] = stable(res[k])
		}
	}
	return out
}

func stable(v any) any {
	switch x := v.(type) {
	case map[string]any:
		out := map[string]any{}
		for k, e := range x {
			if _, volatile := volatileKeys[k]; !volatile {
				out[k] = stable(e)
			}
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = stable(e)
		}
		return out
	case string:
		// A time inside a message ("restart due since 2026-12-02T15:04:44Z") is the
		// target's clock: the rest of the message must still match.
		return rfc3339.ReplaceAllString(x, "<time>")
	}
	return v
}

var rfc3339 = regexp.MustCompile(`\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)`)

var verboseResult = regexp.MustCompile(`^(ok|changed|failed|skipping): \[([^\]]+)\] => (\{.*\})\s*$`)

// plainResults are the results ansible-playbook -v printed for the task named task, by
// host.
func plainResults(t *testing.T, out, task string) map[string]map[string]any {
	t.Helper()
	res := map[string]map[string]any{}
	current := ""
	sc := bufio.NewScanner(strings.NewReader(out))
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		line := sc.Text()
		if rest, ok := strings.CutPrefix(line, "TASK ["); ok {
			current = rest
			continue
		}
		if !strings.Contains(current, task) {
			continue
		}
		if m := verboseResult.FindStringSubmatch(line); m != nil {
			var r map[string]any
			require.NoError(t, json.Unmarshal([]byte(m[3]), &r), "result line %q", line)
			res[m[2]] = r
		}
	}
	return res
}

func lastLines(s string, n int) string {
	l := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(l) > n {
		l = l[len(l)-n:]
	}
	return strings.Join(l, "\n")
}

// The demo the way AWX and Ansible Automation Platform run a job: the private data dir
// packed by `ansible-runner transmit` on the "controller", run by `ansible-runner worker`
// in the execution environment's container (the execution node), the events and artifacts
// written back by `ansible-runner process`, over SSH with a machine credential (a login
// user, its key, become through sudo) to two targets at once. Each job's results equal a
// plain ansible-playbook run of the same play (ansible-core 2.19, the image's generation)
// on a target of its own: per-host ok and changed counts, and the role's one task's result
// (its keys and values, less volatileKeys).
func TestExecutionEnvironmentJobPath(t *testing.T) {
	t.Parallel()
	job1, job2, plain := target(t), target(t), target(t)
	jobTargets := []*testenv.Target{job1, job2}
	controller := controllers[1].command
	if _, err := exec.LookPath(controller); err != nil {
		t.Fatalf("%s not found (make test runs .ci/setup-host, which installs it): %v", controller, err)
	}
	img, err := eeImage()
	require.NoError(t, err)
	t.Logf("execution environment %s (%d MB)", img.Tag, img.Size/1e6)
	build, err := eeCollection()
	require.NoError(t, err)
	coll := build.dir
	hash := buildHash(t, coll)
	for _, tg := range append(jobTargets, plain) {
		sshSudoer(t, tg, "deploy")
	}
	access, err := job1.SSH(t.Context())
	require.NoError(t, err)
	key, err := os.ReadFile(access.KeyFile)
	require.NoError(t, err)
	inventory, project := eeInventory(t, jobTargets...), demoProject(t)

	n := 0
	runJob := func(t *testing.T, extra map[string]any, cmdline string) runner.Result {
		t.Helper()
		n++
		dir := t.TempDir()
		d := runner.DataDir{Project: project, Inventory: inventory, SSHKey: key, ExtraVars: extra, Cmdline: cmdline,
			// Pipelining on, as users who want speed set it in the job template's
			// environment: the collection's fast path runs the modules inside the worker.
			EnvVars: map[string]string{"ANSIBLE_PIPELINING": "1", "ANSIBLE_HOST_KEY_CHECKING": "False", "ANSIBLE_NOCOLOR": "1"}}
		require.NoError(t, d.Write(filepath.Join(dir, "private")))
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
		defer cancel()
		j := runner.Job{Image: img.Tag, Dir: filepath.Join(dir, "private"), Out: filepath.Join(dir, "out"), Playbook: "demo.yml", Ident: fmt.Sprintf("job%d", n)}
		res, err := j.Run(ctx)
		require.NoError(t, err)
		require.Equal(t, "successful", res.Status, "job %s (rc %d):\n%s", j.Ident, res.RC, lastLines(res.Stdout(), 60))
		assert.Equal(t, 0, res.RC)
		return res
	}
	runPlain := func(t *testing.T, extra map[string]any, args ...string) testenv.PlaybookResult {
		t.Helper()
		p := testenv.Playbook{Path: filepath.Join(root, "playbooks/demo.yml"), Targets: []*testenv.Target{plain},
			CollectionsPath: coll, Connection: "ssh", Command: controller, Env: []string{"ANSIBLE_PIPELINING=1"},
			HostVars: machineCredential, ExtraVars: extra, Args: append([]string{"-v"}, args...)}
		return p.RunOK(t)
	}
	// equal holds a job's per-host counts and the role's one task's result (keys, and
	// values less volatileKeys) to the plain run's; it returns the job's service results
	// by host.
	equal := func(t *testing.T, job runner.Result, p testenv.PlaybookResult) map[string]map[string]any {
		t.Helper()
		stats, err := job.Stats()
		require.NoError(t, err)
		want, ok := p.Recap[plain.Name()]
		require.True(t, ok, "the plain run's recap names %s:\n%s", plain.Name(), lastLines(p.Output, 30))
		plainService := plainResults(t, p.Output, "Service demo")[plain.Name()]
		require.NotNil(t, plainService, "the plain run printed the service task's result (-v):\n%s", lastLines(p.Output, 40))
		got := map[string]map[string]any{}
		for _, tg := range jobTargets {
			s, ok := stats[tg.Name()]
			require.True(t, ok, "the job's stats name %s: %v", tg.Name(), stats)
			assert.Equal(t, runner.HostStats{Ok: want.Ok, Changed: want.Changed}, runner.HostStats{Ok: s.Ok, Changed: s.Changed}, "%s: ok and changed as in the plain run", tg.Name())
			assert.Zero(t, s.Failures+s.Unreachable, tg.Name())
		}
		// The role is one task of the service module: one result per host.
		results := job.TaskResults("richt.services.service")
		require.Len(t, results, len(jobTargets), "one service result per host")
		for _, e := range results {
			assert.Equal(t, "runner_on_ok", e.Event, "%s: %s", e.Host(), e.Stdout)
			res := e.Res()
			assert.Equal(t, resultKeys(plainService), resultKeys(res), "%s: the service result has the plain run's keys", e.Host())
			assert.Equal(t, plainService["changed"], res["changed"], "%s: changed as in the plain run", e.Host())
			// packages, files, processes, plan, ...: the plain run's values, less the
			// volatile ones.
			assert.Equal(t, stableResult(plainService), stableResult(res), "%s: the service result's values as in the plain run", e.Host())
			got[e.Host()] = res
		}
		return got
	}

	t.Run("first job converges through the fast path inside the worker, as root under become", func(t *testing.T) {
		for _, tg := range append(jobTargets, plain) {
			tg.MustExec(t, "rm", "-rf", cache)
		}
		job := runJob(t, nil, "-vvv")
		results := equal(t, job, runPlain(t, nil))
		for host, res := range results {
			assert.Equal(t, true, res["changed"], host)
		}
		log := fastLog(job.Stdout())
		assert.Contains(t, log, "installed "+buildFile+"-"+hash[:12], "the fast path installed the build from inside the worker")
		assert.Contains(t, log, "ran cached service")
		assert.NotContains(t, job.Stdout(), "AnsiballZ_service", "pipelined: no module file written")
		for _, tg := range jobTargets {
			s := tg.Snapshot(t, "demo.service")
			assert.Equal(t, "active", s.ActiveState, tg.Name())
			assert.Equal(t, "enabled", s.UnitFileState, tg.Name())
			// become: the build is cached in the effective user's (root's) home, 0700,
			// under its content hash; nothing in the login user's.
			assert.Equal(t, "regular file 700 root", strings.TrimSpace(tg.MustExec(t, "stat", "-c", "%F %a %U", cache+"/"+buildFile+"-"+hash)), tg.Name())
			res, err := tg.Exec(t.Context(), "test", "-e", "/home/deploy/.cache/richt.services")
			require.NoError(t, err)
			assert.NotZero(t, res.ExitCode, "%s: nothing in the login user's home", tg.Name())
		}
	})

	t.Run("second job changes nothing", func(t *testing.T) {
		job := runJob(t, nil, "")
		for host, res := range equal(t, job, runPlain(t, nil)) {
			assert.Equal(t, false, res["changed"], host)
		}
		stats, err := job.Stats()
		require.NoError(t, err)
		for host, s := range stats {
			assert.Zero(t, s.Changed, host)
		}
	})

	t.Run("check mode reports the change and changes nothing", func(t *testing.T) {
		before := map[string]testenv.UnitSnapshot{}
		for _, tg := range jobTargets {
			before[tg.Name()] = tg.Snapshot(t, "demo.service")
		}
		extra := map[string]any{"demo_version": "0:2.0-1.noarch", "demo_level": "debug"}
		job := runJob(t, extra, "--check --diff")
		for host, res := range equal(t, job, runPlain(t, extra, "--check", "--diff")) {
			assert.Equal(t, true, res["changed"], "%s: check mode reports the change", host)
		}
		for _, tg := range jobTargets {
			assert.Contains(t, tg.MustExec(t, "rpm", "-q", "demo"), "demo-1.0-1", tg.Name())
			assert.Contains(t, tg.MustExec(t, "cat", "/etc/systemd/system/demo.service.d/20-level.conf"), "DEMO_LEVEL=info", tg.Name())
			assert.Equal(t, testenv.Untouched, testenv.Classify(before[tg.Name()], tg.Snapshot(t, "demo.service")), tg.Name())
		}
	})
}
