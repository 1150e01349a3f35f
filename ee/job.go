package ee

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/csv"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"
)

// DataDir is an ansible-runner private data directory, laid out as AWX writes one for a
// job: the project, the inventory, the machine credential's SSH key and the job's settings.
type DataDir struct {
	// Project holds the files under project/ by relative path (the playbook among them).
	Project map[string][]byte
	// Inventory is written as inventory/hosts.json (JSON is YAML to Ansible's inventory).
	Inventory any
	// SSHKey is the machine credential's private key (env/ssh_key): ansible-runner loads
	// it into an ssh-agent for the job, so the key never needs a path in the inventory.
	SSHKey []byte
	// EnvVars (env/envvars) are the job's environment, ANSIBLE_PIPELINING among them.
	EnvVars map[string]string
	// ExtraVars (env/extravars) are the job's extra variables.
	ExtraVars map[string]any
	// Cmdline (env/cmdline) are more ansible-playbook arguments, such as --check --diff.
	Cmdline string
}

// Write lays the directory out at dir, which must be empty or missing (then it is created).
//
// A directory that already holds files is refused rather than cleared: ansible-runner
// reads whatever is there, so an earlier job's env/cmdline (--check, say) would become
// this job's whenever the new Cmdline is empty, and deleting a caller's files to avoid
// that could take a directory that was never a private data dir. A new job gets a new
// directory.
func (d DataDir) Write(dir string) error {
	if len(d.Project) == 0 {
		return fmt.Errorf("private data dir: no project files")
	}
	for rel := range d.Project {
		c := filepath.Clean(rel)
		if filepath.IsAbs(rel) || c == "." || c == ".." || strings.HasPrefix(c, "../") {
			return fmt.Errorf("private data dir: project file %q: not a relative path inside project/", rel)
		}
	}
	switch entries, err := os.ReadDir(dir); {
	case err == nil && len(entries) > 0:
		return fmt.Errorf("private data dir %s: not empty (%s, ...): an earlier job's files would become this job's; write into a new directory", dir, entries[0].Name())
	case err != nil && !errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("private data dir: %w", err)
	}
	// Every file is encoded before the first is written: bad input changes nothing.
	type file struct {
		rel  string
		data []byte
		mode os.FileMode
	}
	var files []file
	for rel, data := range d.Project {
		files = append(files, file{filepath.Join("project", rel), data, 0o644})
	}
	asJSON := func(rel string, v any) error {
		data, err := json.MarshalIndent(v, "", "  ")
		if err != nil {
			return fmt.Errorf("private data dir: %s: %w", rel, err)
		}
		files = append(files, file{rel, data, 0o644})
		return nil
	}
	if d.Inventory != nil {
		if err := asJSON("inventory/hosts.json", d.Inventory); err != nil {
			return err
		}
	}
	if len(d.EnvVars) > 0 {
		if err := asJSON("env/envvars", d.EnvVars); err != nil {
			return err
		}
	}
	if len(d.ExtraVars) > 0 {
		if err := asJSON("env/extravars", d.ExtraVars); err != nil {
			return err
		}
	}
	if len(d.SSHKey) > 0 {
		files = append(files, file{"env/ssh_key", d.SSHKey, 0o600})
	}
	if d.Cmdline != "" {
		files = append(files, file{"env/cmdline", []byte(d.Cmdline), 0o644})
	}
	for _, f := range files {
		p := filepath.Join(dir, f.rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return fmt.Errorf("private data dir: %w", err)
		}
		if err := os.WriteFile(p, f.data, f.mode); err != nil {
			return fmt.Errorf("private data dir: %w", err)
		}
	}
	return nil
}

// Job is one job through AWX's path, each stage in a container of Image: transmit packs
// Dir and the job's arguments into a stream, worker (the execution node) unpacks and runs
// it and streams events and artifacts back, process writes them to Out/artifacts/Ident.
// Transmit and process run in the image too, so all three stages are one ansible-runner
// version (their stream format is versioned with it).
type Job struct {
	// Image is the execution environment's image (Image.Tag).
	Image string
	// Dir is the private data directory (DataDir.Write); Out receives the artifacts.
	Dir, Out string
	// Playbook is the playbook's path under project/.
	Playbook string
	// Ident names the job's artifact directory (default "job"); Out/artifacts/Ident must
	// not exist yet.
	Ident string
}

// Result is a finished job as the process stage recorded it.
type Result struct {
	// Status is the job's final status (successful, failed, error, timeout, canceled).
	Status string
	// RC is ansible-playbook's exit code (-1: none recorded, or a signal ended it).
	RC int
	// Events are the job events in counter order.
	Events []Event
	// Wall is the pipeline's time, transmit's start to process's end.
	Wall time.Duration
	// ArtifactDir is where process wrote the artifacts.
	ArtifactDir string
}

// jobLabel marks every stage's container with the job's ident. Each runs with --rm, so a
// finished stage leaves nothing; Run removes the containers of a stage it killed (ctx),
// and a container that outlived a killed test or bench (its docker client gone, not the
// container) is found by `docker ps -a --filter label=org.richt.ee.job`.
const jobLabel = "org.richt.ee.job"

// validIdent is what docker allows in a container's name.
var validIdent = regexp.MustCompile(`^[a-zA-Z0-9][a-zA-Z0-9_.-]*$`)

// Run runs the job. An error means the pipeline itself broke: a stage that did not start
// or was killed, docker's own failure (exit 125-127), transmit or process failing, or a
// job that left no status. A job that ran and failed (ansible-playbook's exit 2 for a
// failed host, 4 for an unreachable one, which the worker passes on) returns its Result
// with Status "failed" and no error.
func (j Job) Run(ctx context.Context) (Result, error) {
	return j.run(ctx, dockerPipeline)
}

func (j Job) run(ctx context.Context, pipe pipeline) (Result, error) {
	ident := j.Ident
	if ident == "" {
		ident = "job"
	}
	// The ident is a directory name under artifacts/ and part of the containers' names.
	if !validIdent.MatchString(ident) {
		return Result{}, fmt.Errorf("job: Ident %q: not a name of letters, digits, '.', '_' and '-' (starting with a letter or digit)", ident)
	}
	if j.Image == "" || j.Playbook == "" {
		return Result{}, fmt.Errorf("job %s: Image and Playbook are required", ident)
	}
	dir, err := filepath.Abs(j.Dir)
	if err != nil {
		return Result{}, fmt.Errorf("job %s: private data dir: %w", ident, err)
	}
	out, err := filepath.Abs(j.Out)
	if err != nil {
		return Result{}, fmt.Errorf("job %s: artifacts dir: %w", ident, err)
	}
	// Reading a --mount value turns a quoted \r\n into \n (encoding/csv), so a path with a
	// carriage return could not reach docker as it is.
	for _, p := range []struct{ field, path string }{{"Dir", dir}, {"Out", out}} {
		if strings.Contains(p.path, "\r") {
			return Result{}, fmt.Errorf("job %s: %s %q: a path with a carriage return cannot be passed to docker --mount", ident, p.field, p.path)
		}
	}
	// process adds its files to whatever is there: an earlier job's job_events under the
	// same ident would become this job's events.
	artifacts := filepath.Join(out, "artifacts", ident)
	switch _, err := os.Lstat(artifacts); {
	case err == nil:
		return Result{}, fmt.Errorf("job %s: %s already exists: an earlier job's events would mix into this one's; use a new Ident or Out", ident, artifacts)
	case !errors.Is(err, fs.ErrNotExist):
		return Result{}, fmt.Errorf("job %s: artifacts dir: %w", ident, err)
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return Result{}, fmt.Errorf("job %s: artifacts dir: %w", ident, err)
	}
	suffix := make([]byte, 4)
	_, _ = rand.Read(suffix)
	// The controller's stages run as this process's user, so they read the private data
	// dir and the artifacts stay this user's.
	user := fmt.Sprintf("%d:%d", os.Getuid(), os.Getgid())
	stages := j.stages(dir, out, ident, "richt-ee-"+ident+"-"+hex.EncodeToString(suffix), user)
	start := time.Now()
	ended := pipe(ctx, stages)
	wall := time.Since(start)
	res, err := outcome(ident, stages, ended, func() (Result, error) { return ReadArtifacts(artifacts) })
	if err != nil {
		return Result{}, err
	}
	res.Wall = wall
	return res, nil
}

// bind is docker's --mount value binding the host's src to dst in the container. docker's
// CLI reads the value as one CSV record (encoding/csv), so each field is written by
// encoding/csv too: a field with a comma or a double quote is quoted, which keeps the path
// whole (test dirs carry commas from subtest names). A ':' needs nothing here, unlike in
// -v's src:dst form, where it moved the split.
func bind(src, dst string) string {
	var b strings.Builder
	w := csv.NewWriter(&b)
	// Writing to a strings.Builder cannot fail.
	_ = w.Write([]string{"type=bind", "src=" + src, "dst=" + dst})
	w.Flush()
	return strings.TrimSuffix(b.String(), "\n")
}

// stage is one stage of a job: a docker run of the image.
type stage struct {
	name      string   // transmit, worker or process
	container string   // the container's name, to remove it after a killed run
	args      []string // docker's arguments
}

// stages are the job's three docker runs. The worker runs as the image's user, as on an
// execution node, and sees nothing of this host but its stdin.
func (j Job) stages(dir, out, ident, name, user string) []stage {
	label := jobLabel + "=" + ident
	return []stage{
		{"transmit", name + "-transmit", []string{"run", "--rm", "--name", name + "-transmit", "--label", label, "--user", user, "-e", "HOME=/tmp",
			"--mount", bind(dir, "/job"), j.Image, "ansible-runner", "transmit", "/job", "-p", j.Playbook, "--ident", ident}},
		{"worker", name + "-worker", []string{"run", "-i", "--rm", "--name", name + "-worker", "--label", label,
			j.Image, "ansible-runner", "worker"}},
		{"process", name + "-process", []string{"run", "-i", "--rm", "--name", name + "-process", "--label", label, "--user", user, "-e", "HOME=/tmp",
			"--mount", bind(out, "/out"), j.Image, "ansible-runner", "process", "/out", "--ident", ident}},
	}
}

// stageEnd is how a stage ended.
type stageEnd struct {
	// rc is the docker client's exit code: the stage's own, or docker's 125 (the daemon
	// could not create or start the container) or 126/127 (the command in it could not be
	// run); -1 when the stage did not start or a signal ended it (err says which).
	rc  int
	err error
	// stderr is the last lines the stage wrote to stderr.
	stderr string
}

// pipeline runs stages as one pipeline, each stage's stdout the next one's stdin, and
// returns how each ended, one stageEnd per stage. dockerPipeline is the real one.
type pipeline func(ctx context.Context, stages []stage) []stageEnd

// outcome decides what the stages' ends mean. transmit and process exit 0 whatever the
// playbook did; the worker exits with ansible-playbook's code (2: a host failed, 4: one was
// unreachable), a job's normal outcome once process has written its status. Anything else
// is the pipeline breaking: a stage that did not start or was killed, docker's own 125-127,
// transmit or process failing, no status written. read reads the artifacts.
func outcome(ident string, stages []stage, ended []stageEnd, read func() (Result, error)) (Result, error) {
	codes := make([]string, len(stages))
	for i, s := range stages {
		codes[i] = fmt.Sprintf("%s %d", s.name, ended[i].rc)
	}
	broke := func(i int, how string, err error) error {
		head := fmt.Sprintf("job %s: %s stage %s (exit codes: %s)", ident, stages[i].name, how, strings.Join(codes, ", "))
		var said strings.Builder
		for k, e := range ended {
			if e.stderr != "" {
				fmt.Fprintf(&said, "\n%s said:\n%s", stages[k].name, e.stderr)
			}
		}
		if err != nil {
			return fmt.Errorf("%s: %w%s", head, err, said.String())
		}
		return errors.New(head + said.String())
	}
	for i, e := range ended {
		switch {
		case e.err != nil || e.rc < 0:
			return Result{}, broke(i, "did not run to its end", e.err)
		case e.rc >= 125 && e.rc <= 127:
			return Result{}, broke(i, fmt.Sprintf("exited %d (docker could not run it)", e.rc), nil)
		case e.rc != 0 && stages[i].name != "worker":
			return Result{}, broke(i, fmt.Sprintf("exited %d", e.rc), nil)
		}
	}
	res, err := read()
	if err != nil {
		for i, s := range stages {
			if s.name == "worker" && ended[i].rc != 0 {
				return Result{}, broke(i, fmt.Sprintf("exited %d and the job left no status", ended[i].rc), err)
			}
		}
		return Result{}, broke(len(stages)-1, "left no result", err)
	}
	return res, nil
}

// dockerPipeline runs the stages' docker clients, piped together. A stage killed by ctx
// leaves its container running (docker run does not pass SIGKILL on): then every stage's
// container is removed by name.
func dockerPipeline(ctx context.Context, stages []stage) []stageEnd {
	ended := make([]stageEnd, len(stages))
	cmds := make([]*exec.Cmd, len(stages))
	stderr := make([]bytes.Buffer, len(stages))
	for i, s := range stages {
		cmds[i] = exec.CommandContext(ctx, "docker", s.args...)
		cmds[i].Stderr = &stderr[i]
		// The last stage's stdout (process prints the playbook's output) is not kept:
		// Result.Stdout has it from the events.
	}
	// Pipes between the stages: the parent closes its ends once the children hold them,
	// so each stage sees end of input when the one before it exits.
	var parentEnds []*os.File
	defer func() {
		for _, f := range parentEnds {
			f.Close()
		}
	}()
	for i := 0; i < len(cmds)-1; i++ {
		r, w, err := os.Pipe()
		if err != nil {
			for k := range ended {
				ended[k] = stageEnd{rc: -1, err: fmt.Errorf("pipe: %w", err)}
			}
			return ended
		}
		cmds[i].Stdout, cmds[i+1].Stdin = w, r
		parentEnds = append(parentEnds, r, w)
	}
	started := 0
	for i, c := range cmds {
		if err := c.Start(); err != nil {
			ended[i] = stageEnd{rc: -1, err: fmt.Errorf("start: %w", err)}
			for k := i + 1; k < len(cmds); k++ {
				ended[k] = stageEnd{rc: -1, err: errors.New("not started: an earlier stage did not start")}
			}
			break
		}
		started++
	}
	for _, f := range parentEnds {
		f.Close()
	}
	parentEnds = nil
	killed := started < len(cmds)
	for i := 0; i < started; i++ {
		err := cmds[i].Wait()
		ended[i] = stageEnd{rc: -1, stderr: tail(stderr[i].String(), 20)}
		// A stage that exited on its own has its code, even when ctx ended before Wait
		// reaped it (Wait then reports ctx's error).
		if ps := cmds[i].ProcessState; ps != nil && ps.Exited() {
			ended[i].rc = ps.ExitCode()
			continue
		}
		if ctx.Err() != nil && !errors.Is(err, ctx.Err()) {
			err = fmt.Errorf("%w (%w)", err, ctx.Err())
		}
		ended[i].err, killed = err, true
	}
	if killed {
		cctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		for _, s := range stages {
			_ = exec.CommandContext(cctx, "docker", "rm", "-f", s.container).Run()
		}
	}
	return ended
}

// ReadArtifacts reads a job's artifact directory: status, rc (missing, or None: RC -1) and
// job_events/*.json.
func ReadArtifacts(dir string) (Result, error) {
	status, err := os.ReadFile(filepath.Join(dir, "status"))
	if err != nil {
		return Result{}, fmt.Errorf("artifacts: %w", err)
	}
	rc, err := os.ReadFile(filepath.Join(dir, "rc"))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return Result{}, fmt.Errorf("artifacts: %w", err)
	}
	files, err := filepath.Glob(filepath.Join(dir, "job_events", "*.json"))
	if err != nil {
		return Result{}, fmt.Errorf("artifacts: %w", err)
	}
	events := make(map[string][]byte, len(files))
	for _, f := range files {
		if events[filepath.Base(f)], err = os.ReadFile(f); err != nil {
			return Result{}, fmt.Errorf("artifacts: %w", err)
		}
	}
	res, err := parseArtifacts(status, rc, events)
	if err != nil {
		return Result{}, fmt.Errorf("artifacts %s: %w", dir, err)
	}
	res.ArtifactDir = dir
	return res, nil
}

// finalStatus are the statuses ansible-runner ends a job with.
var finalStatus = map[string]bool{"successful": true, "failed": true, "error": true, "timeout": true, "canceled": true}

// parseArtifacts parses the status file, the rc file (nil: none) and the job events by
// file name.
func parseArtifacts(status, rc []byte, events map[string][]byte) (Result, error) {
	res := Result{Status: strings.TrimSpace(string(status)), RC: -1}
	if !finalStatus[res.Status] {
		return Result{}, fmt.Errorf("status %.40q: not a final job status (successful, failed, error, timeout, canceled)", res.Status)
	}
	// ansible-runner writes the exit status of ansible-playbook, 254 for a timeout or a
	// cancel, and Python's None when a signal ended it.
	if rc != nil && strings.TrimSpace(string(rc)) != "None" {
		n, err := strconv.Atoi(strings.TrimSpace(string(rc)))
		if err != nil || n < 0 {
			return Result{}, fmt.Errorf("rc %.40q: not an exit code", rc)
		}
		res.RC = n
	}
	byCounter := map[int]string{}
	for name, data := range events {
		e, err := parseEvent(data)
		if err != nil {
			return Result{}, fmt.Errorf("event %s: %w", name, err)
		}
		if other, dup := byCounter[e.Counter]; dup {
			return Result{}, fmt.Errorf("events %s and %s: both counter %d (two jobs' events in one directory?)", other, name, e.Counter)
		}
		byCounter[e.Counter] = name
		res.Events = append(res.Events, e)
	}
	sort.Slice(res.Events, func(a, b int) bool { return res.Events[a].Counter < res.Events[b].Counter })
	return res, nil
}

// parseEvent parses one job event: a JSON object with its event's name, a counter from 1
// and a uuid.
func parseEvent(data []byte) (Event, error) {
	var e Event
	if err := json.Unmarshal(data, &e); err != nil {
		return Event{}, err
	}
	switch {
	case e.Event == "":
		return Event{}, errors.New("no event name")
	case e.Counter < 1:
		return Event{}, fmt.Errorf("counter %d: not a job event's (from 1)", e.Counter)
	case e.UUID == "":
		return Event{}, errors.New("no uuid")
	}
	return e, nil
}

// Event is one ansible-runner job event.
type Event struct {
	// Event is the event's name: runner_on_ok, playbook_on_stats, ...
	Event string `json:"event"`
	// Counter orders the job's events, from 1.
	Counter int `json:"counter"`
	// UUID identifies the event.
	UUID string `json:"uuid"`
	// Stdout is what ansible-playbook printed for the event.
	Stdout string `json:"stdout"`
	// Data is event_data, kept raw: its keys depend on the event (a task result's host,
	// task_action and res; the stats event's per-host counts).
	Data map[string]json.RawMessage `json:"event_data"`
}

func (e Event) str(key string) string {
	var s string
	_ = json.Unmarshal(e.Data[key], &s)
	return s
}

// Host is the host a task event is about.
func (e Event) Host() string { return e.str("host") }

// Task is the task's name.
func (e Event) Task() string { return e.str("task") }

// Action is the task's module or action (task_action), as the play names it.
func (e Event) Action() string { return e.str("task_action") }

// Res is a task result event's result.
func (e Event) Res() map[string]any {
	var m map[string]any
	_ = json.Unmarshal(e.Data["res"], &m)
	return m
}

// HostStats are one host's counts in the play recap.
type HostStats struct {
	// Ok, Changed, Failures and Skipped are the recap's ok, changed, failed and skipped
	// task counts; Unreachable is its unreachable (runner's dark).
	Ok, Changed, Failures, Unreachable, Skipped int
}

// Stats are the per-host counts of the job's playbook_on_stats event.
func (r Result) Stats() (map[string]HostStats, error) {
	for _, e := range r.Events {
		if e.Event != "playbook_on_stats" {
			continue
		}
		counts := map[string]map[string]int{}
		for _, k := range []string{"ok", "changed", "failures", "dark", "skipped"} {
			m := map[string]int{}
			if raw, ok := e.Data[k]; ok {
				if err := json.Unmarshal(raw, &m); err != nil {
					return nil, fmt.Errorf("stats: %s: %w", k, err)
				}
			}
			counts[k] = m
		}
		out := map[string]HostStats{}
		for _, m := range counts {
			for h := range m {
				out[h] = HostStats{Ok: counts["ok"][h], Changed: counts["changed"][h], Failures: counts["failures"][h],
					Unreachable: counts["dark"][h], Skipped: counts["skipped"][h]}
			}
		}
		return out, nil
	}
	return nil, fmt.Errorf("no playbook_on_stats event among %d events", len(r.Events))
}

// TaskResults are the result events (runner_on_ok, runner_on_failed, runner_on_skipped,
// runner_on_unreachable) of tasks whose action is action.
func (r Result) TaskResults(action string) []Event {
	var out []Event
	for _, e := range r.Events {
		switch e.Event {
		case "runner_on_ok", "runner_on_failed", "runner_on_skipped", "runner_on_unreachable":
		default:
			// runner_on_start, and runner_on_file_diff (a --diff job's diff of the same task)
			continue
		}
		if e.Action() == action {
			out = append(out, e)
		}
	}
	return out
}

// Stdout is the job's output as ansible-playbook printed it, from the events in order.
func (r Result) Stdout() string {
	var b strings.Builder
	for _, e := range r.Events {
		if e.Stdout != "" {
			b.WriteString(e.Stdout)
			b.WriteByte('\n')
		}
	}
	return b.String()
}
