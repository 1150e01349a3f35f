package runner

import (
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestDataDirWrite(t *testing.T) {
	dir := t.TempDir()
	d := DataDir{
		Project:   map[string][]byte{"demo.yml": []byte("- hosts: all\n"), "vars/demo_service.yml": []byte("x: 1\n")},
		Inventory: map[string]any{"all": map[string]any{"hosts": map[string]any{"t0": map[string]any{"ansible_host": "172.17.0.2"}}}},
		SSHKey:    []byte("KEY\n"),
		EnvVars:   map[string]string{"ANSIBLE_PIPELINING": "1"},
		ExtraVars: map[string]any{"demo_level": "debug"},
		Cmdline:   "--check --diff",
	}
	require.NoError(t, d.Write(dir))
	read := func(rel string) string {
		data, err := os.ReadFile(filepath.Join(dir, rel))
		require.NoError(t, err)
		return string(data)
	}
	assert.Equal(t, "- hosts: all\n", read("project/demo.yml"))
	assert.Equal(t, "x: 1\n", read("project/vars/demo_service.yml"))
	assert.JSONEq(t, `{"all": {"hosts": {"t0": {"ansible_host": "172.17.0.2"}}}}`, read("inventory/hosts.json"))
	assert.JSONEq(t, `{"ANSIBLE_PIPELINING": "1"}`, read("env/envvars"))
	assert.JSONEq(t, `{"demo_level": "debug"}`, read("env/extravars"))
	assert.Equal(t, "--check --diff", read("env/cmdline"))
	fi, err := os.Stat(filepath.Join(dir, "env/ssh_key"))
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), fi.Mode().Perm(), "the key is the job's secret")

	for name, bad := range map[string]DataDir{
		"no project":         {},
		"escape the project": {Project: map[string][]byte{"../x.yml": nil}},
		"absolute path":      {Project: map[string][]byte{"/etc/x.yml": nil}},
	} {
		assert.Error(t, bad.Write(t.TempDir()), name)
	}
}

func TestReadArtifacts(t *testing.T) {
	dir := t.TempDir()
	write := func(rel, content string) {
		p := filepath.Join(dir, rel)
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(content), 0o600))
	}
	write("status", "successful\n")
	write("rc", "0\n")
	// Written in counter order 10, 2, 3: the file names do not sort by counter.
	write("job_events/10-c.json", `{"event": "playbook_on_stats", "counter": 10, "uuid": "c", "stdout": "PLAY RECAP",
		"event_data": {"ok": {"t0": 2, "t1": 2}, "changed": {"t0": 1}, "failures": {}, "dark": {}, "skipped": {"t1": 1}}}`)
	write("job_events/2-a.json", `{"event": "runner_on_start", "counter": 2, "uuid": "a",
		"event_data": {"host": "t0", "task": "Service demo", "task_action": "richt.services.service"}}`)
	write("job_events/3-b.json", `{"event": "runner_on_ok", "counter": 3, "uuid": "b", "stdout": "changed: [t0]",
		"event_data": {"host": "t0", "task": "Service demo", "task_action": "richt.services.service", "res": {"changed": true, "processes": []}}}`)
	res, err := ReadArtifacts(dir)
	require.NoError(t, err)
	assert.Equal(t, "successful", res.Status)
	assert.Equal(t, 0, res.RC)
	require.Len(t, res.Events, 3)
	assert.Equal(t, []int{2, 3, 10}, []int{res.Events[0].Counter, res.Events[1].Counter, res.Events[2].Counter})
	stats, err := res.Stats()
	require.NoError(t, err)
	assert.Equal(t, map[string]HostStats{"t0": {Ok: 2, Changed: 1}, "t1": {Ok: 2, Skipped: 1}}, stats)
	results := res.TaskResults("richt.services.service")
	require.Len(t, results, 1, "the start event is not a result")
	assert.Equal(t, "t0", results[0].Host())
	assert.Equal(t, "Service demo", results[0].Task())
	assert.Equal(t, true, results[0].Res()["changed"])
	assert.Equal(t, "changed: [t0]\nPLAY RECAP\n", res.Stdout())

	_, err = ReadArtifacts(t.TempDir())
	assert.ErrorContains(t, err, "artifacts")
	_, err = (Result{}).Stats()
	assert.ErrorContains(t, err, "no playbook_on_stats event")
}

// fakeDocker puts a docker on PATH that plays the three stages without containers:
// transmit prints a stream, worker reads it and exits FAKE_WORKER_RC, process reads the
// worker's output and (FAKE_STATUS set) writes status, rc and one stats event under the
// /out mount's src's artifacts/IDENT. Every call's arguments go to FAKE_DOCKER_LOG.
func fakeDocker(t *testing.T) (log string) {
	t.Helper()
	bin := t.TempDir()
	script := `#!/bin/sh
echo "$*" >>"$FAKE_DOCKER_LOG"
vol= ident= prev=
for a; do
	# The --mount value whose dst is /out, its src field unquoted (the test dirs' paths hold
	# commas from subtest names, no double quotes).
	if [ "$prev" = --mount ]; then
		case $a in *,dst=/out) vol=${a#type=bind,}; vol=${vol%,dst=/out}; vol=${vol#\"}; vol=${vol%\"}; vol=${vol#src=} ;; esac
	fi
	[ "$prev" = --ident ] && ident=$a
	prev=$a
done
case " $* " in
*" rm -f "*) exit 0 ;;
*" ansible-runner transmit "*) echo STREAM; exit "${FAKE_TRANSMIT_RC:-0}" ;;
*" ansible-runner worker "*)
	[ -n "$FAKE_WORKER_SLEEP" ] && exec sleep 600
	read -r line; [ "$line" = STREAM ] || { echo "worker read $line" >&2; exit 99; }
	echo EVENTS; echo "worker says rc $FAKE_WORKER_RC" >&2; exit "${FAKE_WORKER_RC:-0}" ;;
*" ansible-runner process "*)
	read -r line; [ "$line" = EVENTS ] || [ -z "$FAKE_STATUS" ] || { echo "process read $line" >&2; exit 98; }
	if [ -n "$FAKE_STATUS" ]; then
		a=$vol/artifacts/$ident
		mkdir -p "$a/job_events"
		echo "$FAKE_STATUS" >"$a/status"; echo "${FAKE_WORKER_RC:-0}" >"$a/rc"
		echo '{"event": "playbook_on_stats", "counter": 1, "uuid": "u1", "event_data": {"ok": {"t0": 1}}}' >"$a/job_events/1-u1.json"
	fi
	exit "${FAKE_PROCESS_RC:-0}" ;;
esac
echo "fake docker: unexpected call: $*" >&2
exit 97
`
	require.NoError(t, os.WriteFile(filepath.Join(bin, "docker"), []byte(script), 0o755))
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	log = filepath.Join(t.TempDir(), "docker.log")
	t.Setenv("FAKE_DOCKER_LOG", log)
	return log
}

// Run through the real pipes and exit codes, docker faked: ansible-playbook's failure
// (worker exit 2 or 4, status failed) is a Result; a stage that broke is an error naming
// it, its exit code and what it said.
func TestRunExitCodes(t *testing.T) {
	for _, tc := range []struct {
		name                         string
		transmitRC, workerRC, procRC string
		status                       string
		wantStatus                   string
		wantRC                       int
		wantErr                      []string
	}{
		{name: "successful", workerRC: "0", status: "successful", wantStatus: "successful", wantRC: 0},
		{name: "a host failed", workerRC: "2", status: "failed", wantStatus: "failed", wantRC: 2},
		{name: "a host unreachable", workerRC: "4", status: "failed", wantStatus: "failed", wantRC: 4},
		{name: "worker failed, no status", workerRC: "2", wantErr: []string{"worker stage exited 2 and the job left no status", "worker says rc 2", "status: no such file"}},
		{name: "transmit failed", transmitRC: "1", workerRC: "0", status: "successful", wantErr: []string{"transmit stage exited 1", "transmit 1, worker 0, process 0"}},
		{name: "process failed", workerRC: "0", procRC: "1", status: "successful", wantErr: []string{"process stage exited 1"}},
		{name: "docker could not start the worker", workerRC: "125", status: "failed", wantErr: []string{"worker stage exited 125 (docker could not run it)"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fakeDocker(t)
			t.Setenv("FAKE_TRANSMIT_RC", tc.transmitRC)
			t.Setenv("FAKE_WORKER_RC", tc.workerRC)
			t.Setenv("FAKE_PROCESS_RC", tc.procRC)
			t.Setenv("FAKE_STATUS", tc.status)
			out := t.TempDir()
			res, err := Job{Image: "img", Dir: t.TempDir(), Out: out, Playbook: "demo.yml", Ident: "j1"}.Run(t.Context())
			if tc.wantErr != nil {
				require.Error(t, err)
				for _, s := range tc.wantErr {
					assert.ErrorContains(t, err, s)
				}
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.wantStatus, res.Status)
			assert.Equal(t, tc.wantRC, res.RC)
			assert.Equal(t, filepath.Join(out, "artifacts", "j1"), res.ArtifactDir)
			require.Len(t, res.Events, 1)
		})
	}
}

// A directory that already holds files would mix them into the job: an old env/cmdline
// (--check) stays when the new job has none.
func TestDataDirWriteRefusesNonEmpty(t *testing.T) {
	dir := t.TempDir()
	d := DataDir{Project: map[string][]byte{"demo.yml": []byte("- hosts: all\n")}}
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "env"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "env", "cmdline"), []byte("--check"), 0o644))
	err := d.Write(dir)
	require.Error(t, err)
	assert.ErrorContains(t, err, "not empty")
	assert.NoFileExists(t, filepath.Join(dir, "project", "demo.yml"), "nothing written")

	empty := t.TempDir()
	assert.NoError(t, d.Write(empty), "an empty directory is fine")
	assert.NoError(t, d.Write(filepath.Join(t.TempDir(), "new")), "a missing one is created")
}

// A previous job's artifacts under the same ident would mix its job_events into the new
// Result: Run refuses before anything runs.
func TestRunRefusesExistingArtifacts(t *testing.T) {
	log := fakeDocker(t)
	t.Setenv("FAKE_WORKER_RC", "0")
	t.Setenv("FAKE_STATUS", "successful")
	out := t.TempDir()
	old := filepath.Join(out, "artifacts", "j1", "job_events")
	require.NoError(t, os.MkdirAll(old, 0o755))
	_, err := Job{Image: "img", Dir: t.TempDir(), Out: out, Playbook: "demo.yml", Ident: "j1"}.Run(t.Context())
	require.Error(t, err)
	assert.ErrorContains(t, err, "already exists")
	assert.NoFileExists(t, log, "no stage ran")

	for name, bad := range map[string]Job{
		"ident with a slash": {Image: "img", Playbook: "demo.yml", Ident: "../j1"},
		"ident with a space": {Image: "img", Playbook: "demo.yml", Ident: "j 1"},
		"no image":           {Playbook: "demo.yml"},
		"no playbook":        {Image: "img"},
	} {
		bad.Dir, bad.Out = t.TempDir(), t.TempDir()
		_, err := bad.Run(t.Context())
		assert.Error(t, err, name)
	}
	assert.NoFileExists(t, log, "no stage ran")
}

// The data and artifacts dirs reach docker as --mount values, which docker's CLI reads as
// one CSV record (encoding/csv): a ':' or ',' in a path is part of the path (with -v a ':'
// split it and changed the mount), and a path docker could not get back whole (a carriage
// return) is refused before anything is created.
func TestRunMountPaths(t *testing.T) {
	mountSrc := func(t *testing.T, args []string) (src, dst string) {
		i := slices.Index(args, "--mount")
		require.GreaterOrEqual(t, i, 0, "a --mount in %q", args)
		fields, err := csv.NewReader(strings.NewReader(args[i+1])).Read()
		require.NoError(t, err)
		require.Len(t, fields, 3)
		assert.Equal(t, "type=bind", fields[0])
		src, ok := strings.CutPrefix(fields[1], "src=")
		require.True(t, ok, fields[1])
		dst, ok = strings.CutPrefix(fields[2], "dst=")
		require.True(t, ok, fields[2])
		return src, dst
	}
	for _, name := range []string{"a:b", "a,b", `a"b`, "a\nb", "a=b"} {
		base := t.TempDir()
		dir, out := filepath.Join(base, "d"+name), filepath.Join(base, "o"+name)
		require.NoError(t, os.Mkdir(dir, 0o755))
		var got []stage
		fake := func(_ context.Context, stages []stage) []stageEnd {
			got = stages
			return []stageEnd{{rc: -1}, {rc: -1}, {rc: -1}}
		}
		_, _ = Job{Image: "img", Dir: dir, Out: out, Playbook: "demo.yml", Ident: "j1"}.run(t.Context(), fake)
		require.Len(t, got, 3, name)
		src, dst := mountSrc(t, got[0].args)
		assert.Equal(t, [2]string{dir, "/job"}, [2]string{src, dst}, name)
		src, dst = mountSrc(t, got[2].args)
		assert.Equal(t, [2]string{out, "/out"}, [2]string{src, dst}, name)
	}

	base := t.TempDir()
	ran := false
	out := filepath.Join(base, "o\rut")
	_, err := Job{Image: "img", Dir: base, Out: out, Playbook: "demo.yml", Ident: "j1"}.run(t.Context(),
		func(context.Context, []stage) []stageEnd { ran = true; return []stageEnd{{rc: -1}, {rc: -1}, {rc: -1}} })
	assert.ErrorContains(t, err, `Out "`)
	assert.False(t, ran)
	assert.NoDirExists(t, out, "nothing created")
}

// The three docker runs, written out: a fake that built them from the code's own
// constants could not catch a wrong command line.
func TestRunStages(t *testing.T) {
	dir, out := t.TempDir(), t.TempDir()
	user := fmt.Sprintf("%d:%d", os.Getuid(), os.Getgid())
	calls := 0
	fake := func(_ context.Context, stages []stage) []stageEnd {
		calls++
		require.Len(t, stages, 3)
		name, ok := strings.CutSuffix(stages[0].container, "-transmit")
		require.True(t, ok, stages[0].container)
		assert.Regexp(t, `^richt-ee-j1-[0-9a-f]{8}$`, name, "the ident, and a suffix for two runs of one ident")
		want := []stage{
			{"transmit", name + "-transmit", []string{"run", "--rm", "--name", name + "-transmit", "--label", "org.richt.ee.job=j1",
				"--user", user, "-e", "HOME=/tmp", "--mount", "type=bind,src=" + dir + ",dst=/job", "img:1", "ansible-runner", "transmit", "/job", "-p", "site/demo.yml", "--ident", "j1"}},
			{"worker", name + "-worker", []string{"run", "-i", "--rm", "--name", name + "-worker", "--label", "org.richt.ee.job=j1",
				"img:1", "ansible-runner", "worker"}},
			{"process", name + "-process", []string{"run", "-i", "--rm", "--name", name + "-process", "--label", "org.richt.ee.job=j1",
				"--user", user, "-e", "HOME=/tmp", "--mount", "type=bind,src=" + out + ",dst=/out", "img:1", "ansible-runner", "process", "/out", "--ident", "j1"}},
		}
		assert.Equal(t, want, stages)
		// What process writes for a job whose one host failed.
		a := filepath.Join(out, "artifacts", "j1")
		require.NoError(t, os.MkdirAll(filepath.Join(a, "job_events"), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(a, "status"), []byte("failed"), 0o644))
		require.NoError(t, os.WriteFile(filepath.Join(a, "rc"), []byte("2"), 0o644))
		require.NoError(t, os.WriteFile(filepath.Join(a, "job_events", "1-u.json"), []byte(statsEvent), 0o644))
		return []stageEnd{{rc: 0}, {rc: 2}, {rc: 0}}
	}
	res, err := Job{Image: "img:1", Dir: dir, Out: out, Playbook: "site/demo.yml", Ident: "j1"}.run(t.Context(), fake)
	require.NoError(t, err)
	assert.Equal(t, 1, calls)
	assert.Equal(t, "failed", res.Status)
	assert.Equal(t, 2, res.RC)
	assert.Len(t, res.Events, 1)
}

const statsEvent = `{"event": "playbook_on_stats", "counter": 1, "uuid": "u", "event_data": {"ok": {"t0": 1}, "failures": {"t0": 1}}}`

// outcome: which ends of the three stages are a job's result and which a broken pipeline.
func TestOutcome(t *testing.T) {
	stages := []stage{{name: "transmit"}, {name: "worker"}, {name: "process"}}
	failed := Result{Status: "failed", RC: 2}
	noStatus := errors.New("artifacts: open status: no such file or directory")
	for _, tc := range []struct {
		name     string
		ended    []stageEnd
		readErr  error
		wantRead bool
		want     Result
		wantErr  []string
	}{
		{name: "successful", ended: []stageEnd{{}, {}, {}}, wantRead: true, want: failed},
		{name: "worker 2: a failed host is the job's result", ended: []stageEnd{{}, {rc: 2}, {}}, wantRead: true, want: failed},
		{name: "worker 4: an unreachable host is the job's result", ended: []stageEnd{{}, {rc: 4}, {}}, wantRead: true, want: failed},
		{name: "worker 2 and no status", ended: []stageEnd{{}, {rc: 2, stderr: "Traceback"}, {}}, readErr: noStatus, wantRead: true,
			wantErr: []string{"job j: worker stage exited 2 and the job left no status (exit codes: transmit 0, worker 2, process 0): artifacts: open status", "worker said:\nTraceback"}},
		{name: "all 0 and no status", ended: []stageEnd{{}, {}, {}}, readErr: noStatus, wantRead: true,
			wantErr: []string{"process stage left no result", "no such file"}},
		{name: "transmit failed", ended: []stageEnd{{rc: 1, stderr: "no playbook"}, {rc: 1}, {}},
			wantErr: []string{"transmit stage exited 1 (exit codes: transmit 1, worker 1, process 0)", "transmit said:\nno playbook"}},
		{name: "process failed", ended: []stageEnd{{}, {rc: 2}, {rc: 1, stderr: "permission denied"}},
			wantErr: []string{"process stage exited 1", "process said:\npermission denied"}},
		{name: "docker could not create the worker", ended: []stageEnd{{}, {rc: 125, stderr: "no such image"}, {}},
			wantErr: []string{"worker stage exited 125 (docker could not run it)", "no such image"}},
		{name: "worker's command not executable", ended: []stageEnd{{}, {rc: 126}, {}}, wantErr: []string{"worker stage exited 126"}},
		{name: "worker's command not found", ended: []stageEnd{{}, {rc: 127}, {}}, wantErr: []string{"worker stage exited 127"}},
		{name: "docker missing", ended: []stageEnd{{rc: -1, err: errors.New(`start: exec: "docker": executable file not found`)}, {rc: -1}, {rc: -1}},
			wantErr: []string{"transmit stage did not run to its end", "executable file not found"}},
		{name: "worker killed", ended: []stageEnd{{}, {rc: -1, err: errors.New("signal: killed (context deadline exceeded)")}, {}},
			wantErr: []string{"worker stage did not run to its end", "signal: killed"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			read := false
			res, err := outcome("j", stages, tc.ended, func() (Result, error) {
				read = true
				return failed, tc.readErr
			})
			assert.Equal(t, tc.wantRead, read, "artifacts read")
			if tc.wantErr != nil {
				require.Error(t, err)
				for _, s := range tc.wantErr {
					assert.ErrorContains(t, err, s)
				}
				if tc.readErr != nil {
					assert.ErrorIs(t, err, tc.readErr)
				}
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, res)
		})
	}
}

// A stage ctx kills leaves its container running: Run removes every stage's container.
func TestRunKilled(t *testing.T) {
	log := fakeDocker(t)
	t.Setenv("FAKE_WORKER_SLEEP", "1")
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		_, err := Job{Image: "img", Dir: t.TempDir(), Out: t.TempDir(), Playbook: "demo.yml", Ident: "j1"}.Run(ctx)
		done <- err
	}()
	// Cancelled once the worker runs; the test waits as long as that takes.
	var err error
wait:
	for {
		select {
		case err = <-done:
			t.Fatalf("Run ended before the worker started: %v", err)
		case <-time.After(10 * time.Millisecond):
		}
		data, _ := os.ReadFile(log)
		if strings.Contains(string(data), "ansible-runner worker") {
			break wait
		}
	}
	cancel()
	err = <-done
	require.Error(t, err)
	// The worker at least; transmit too when it had not exited by then.
	assert.ErrorContains(t, err, "stage did not run to its end")
	assert.ErrorContains(t, err, "worker -1")
	assert.ErrorContains(t, err, "context canceled")
	data, err := os.ReadFile(log)
	require.NoError(t, err)
	for _, s := range []string{"transmit", "worker", "process"} {
		assert.Regexp(t, `(?m)^rm -f richt-ee-j1-[0-9a-f]{8}-`+s+`$`, string(data))
	}
}

// Junk in the artifacts is an error naming the file, never a Result with holes.
func TestReadArtifactsJunk(t *testing.T) {
	good := `{"event": "runner_on_ok", "counter": 2, "uuid": "b"}`
	for _, tc := range []struct {
		name, status, rc string
		events           map[string]string
		want             string
	}{
		{name: "no final status", status: "running", want: `status "running": not a final job status`},
		{name: "empty status", status: "", want: `status "": not a final job status`},
		{name: "rc not a number", status: "failed", rc: "two", want: `rc "two": not an exit code`},
		{name: "negative rc", status: "failed", rc: "-2", want: `rc "-2": not an exit code`},
		{name: "not JSON", status: "failed", events: map[string]string{"1-a.json": "{"}, want: "event 1-a.json: unexpected end of JSON input"},
		{name: "null", status: "failed", events: map[string]string{"1-a.json": "null"}, want: "event 1-a.json: no event name"},
		{name: "no counter", status: "failed", events: map[string]string{"1-a.json": `{"event": "runner_on_ok", "uuid": "a"}`}, want: "event 1-a.json: counter 0"},
		{name: "no uuid", status: "failed", events: map[string]string{"1-a.json": `{"event": "runner_on_ok", "counter": 1}`}, want: "event 1-a.json: no uuid"},
		{name: "event_data not an object", status: "failed", events: map[string]string{"1-a.json": `{"event": "x", "counter": 1, "uuid": "a", "event_data": []}`}, want: "event 1-a.json: json"},
		{name: "two jobs' events", status: "failed", events: map[string]string{"2-b.json": good, "2-c.json": good}, want: "both counter 2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			require.NoError(t, os.WriteFile(filepath.Join(dir, "status"), []byte(tc.status), 0o644))
			if tc.rc != "" {
				require.NoError(t, os.WriteFile(filepath.Join(dir, "rc"), []byte(tc.rc), 0o644))
			}
			require.NoError(t, os.Mkdir(filepath.Join(dir, "job_events"), 0o755))
			for name, data := range tc.events {
				require.NoError(t, os.WriteFile(filepath.Join(dir, "job_events", name), []byte(data), 0o644))
			}
			_, err := ReadArtifacts(dir)
			require.Error(t, err)
			assert.ErrorContains(t, err, tc.want)
		})
	}
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "status"), []byte("error\n"), 0o644))
	res, err := ReadArtifacts(dir)
	require.NoError(t, err, "no rc file and no events: a job that never started ansible-playbook")
	assert.Equal(t, Result{Status: "error", RC: -1, ArtifactDir: dir}, res)
}

// Events as ansible-runner 2.4 writes them (artifacts/IDENT/job_events/COUNTER-UUID.json),
// trimmed of nothing but long values.
var runnerEvents = []string{
	`{"uuid": "0242ac11-0002-8e5a-2c0e-000000000006", "counter": 1, "stdout": "", "start_line": 0, "end_line": 0, "runner_ident": "job1", "event": "playbook_on_start", "job_id": null, "pid": 21, "created": "2025-05-02T10:01:02.123456+00:00", "event_data": {"playbook": "demo.yml", "playbook_uuid": "0242ac11-0002-8e5a-2c0e-000000000006", "uuid": "0242ac11-0002-8e5a-2c0e-000000000006"}}`,
	`{"uuid": "3b9d6f5e-6a7f-4b1e-9b0a-2f0d1c8e7a61", "counter": 6, "stdout": "", "start_line": 4, "end_line": 4, "runner_ident": "job1", "event": "runner_on_start", "job_id": null, "pid": 21, "created": "2025-05-02T10:01:03.000001+00:00", "parent_uuid": "0242ac11-0002-8e5a-2c0e-00000000000c", "event_data": {"playbook": "demo.yml", "play": "Demo", "task": "Service demo", "task_action": "richt.services.service", "resolved_action": "richt.services.service", "task_path": "/runner/project/demo.yml:9", "host": "t0", "uuid": "3b9d6f5e-6a7f-4b1e-9b0a-2f0d1c8e7a61"}}`,
	`{"uuid": "5c2a1b0e-1f3d-4c6b-8a9e-7d5f4e3c2b1a", "counter": 7, "stdout": "changed: [t0]", "start_line": 4, "end_line": 5, "runner_ident": "job1", "event": "runner_on_ok", "job_id": null, "pid": 21, "created": "2025-05-02T10:01:04.5+00:00", "parent_uuid": "0242ac11-0002-8e5a-2c0e-00000000000c", "event_data": {"playbook": "demo.yml", "play": "Demo", "task": "Service demo", "task_action": "richt.services.service", "task_args": "", "host": "t0", "remote_addr": "172.17.0.3", "res": {"changed": true, "name": "demo", "state": "present", "plan": ["file demo.service.d/20-level.conf: write"], "processes": [{"unit": "demo.service", "changed": true, "actions": ["reload"], "main_pid": 812}], "_ansible_no_log": false}, "start": "2025-05-02T10:01:03.000001+00:00", "end": "2025-05-02T10:01:04.4+00:00", "duration": 1.4, "event_loop": null, "uuid": "5c2a1b0e-1f3d-4c6b-8a9e-7d5f4e3c2b1a"}}`,
	`{"uuid": "9f8e7d6c-5b4a-4938-8776-655443322110", "counter": 8, "stdout": "fatal: [t1]: UNREACHABLE! => {\"changed\": false, \"msg\": \"ssh: connect to host 172.17.0.4 port 22: Connection refused\", \"unreachable\": true}", "event": "runner_on_unreachable", "event_data": {"task": "Service demo", "task_action": "richt.services.service", "host": "t1", "res": {"changed": false, "unreachable": true, "msg": "ssh: connect to host 172.17.0.4 port 22: Connection refused"}}}`,
	`{"uuid": "d7c6b5a4-9382-4716-a5b4-c3d2e1f0a9b8", "counter": 10, "stdout": "\r\nPLAY RECAP *********\r\nt0 : ok=1 changed=1 unreachable=0 failed=0\r\nt1 : ok=0 changed=0 unreachable=1 failed=0", "event": "playbook_on_stats", "event_data": {"playbook": "demo.yml", "changed": {"t0": 1}, "dark": {"t1": 1}, "failures": {}, "ignored": {}, "ok": {"t0": 1}, "processed": {"t0": 1, "t1": 1}, "rescued": {}, "skipped": {}, "artifact_data": {}, "uuid": "d7c6b5a4-9382-4716-a5b4-c3d2e1f0a9b8"}}`,
}

// parseArtifacts takes what the worker sent through process: it must not panic on any
// of it, must refuse what is not a runner's status, rc or event, and what it accepts
// must read back (counter order, stats, results) without panicking either.
func FuzzParseArtifacts(f *testing.F) {
	for i, e := range runnerEvents {
		f.Add([]byte("failed\n"), []byte("4\n"), []byte(e), []byte(runnerEvents[(i+1)%len(runnerEvents)]))
	}
	f.Add([]byte("successful"), []byte("0"), []byte(runnerEvents[2]), []byte(runnerEvents[2]))
	f.Add([]byte("running"), []byte(""), []byte("{"), []byte("null"))
	f.Add([]byte("failed"), []byte("None"), []byte(runnerEvents[0]), []byte(runnerEvents[4]))
	f.Add([]byte("error"), []byte("x"), []byte(`{"event": "x", "counter": 1, "uuid": "a", "event_data": {"ok": []}}`), []byte(`[]`))
	f.Fuzz(func(t *testing.T, status, rc, ev1, ev2 []byte) {
		res, err := parseArtifacts(status, rc, map[string][]byte{"1-a.json": ev1, "2-b.json": ev2})
		if !json.Valid(ev1) || !json.Valid(ev2) || !finalStatus[strings.TrimSpace(string(status))] {
			if err == nil {
				t.Fatalf("junk accepted: status %q rc %q events %q %q", status, rc, ev1, ev2)
			}
		}
		if err != nil {
			return
		}
		if len(res.Events) != 2 || res.Events[0].Counter >= res.Events[1].Counter {
			t.Fatalf("events not in strict counter order: %+v", res.Events)
		}
		for _, e := range res.Events {
			if e.Event == "" || e.UUID == "" || e.Counter < 1 {
				t.Fatalf("an event without name, uuid or counter accepted: %+v", e)
			}
			_, _, _, _ = e.Host(), e.Task(), e.Action(), e.Res()
		}
		if res.RC < -1 || (res.RC == -1) != (rc == nil || strings.TrimSpace(string(rc)) == "None") {
			t.Fatalf("rc %q read as %d", rc, res.RC)
		}
		_, _ = res.Stats()
		_ = res.TaskResults("richt.services.service")
		_ = res.Stdout()
	})
}
