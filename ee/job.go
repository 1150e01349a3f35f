package ee

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
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

// Write lays the directory out at dir (created if missing).
func (d DataDir) Write(dir string) error {
	write := func(rel string, data []byte, mode os.FileMode) error {
		p := filepath.Join(dir, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return fmt.Errorf("private data dir: %w", err)
		}
		if err := os.WriteFile(p, data, mode); err != nil {
			return fmt.Errorf("private data dir: %w", err)
		}
		return nil
	}
	asJSON := func(rel string, v any, mode os.FileMode) error {
		data, err := json.MarshalIndent(v, "", "  ")
		if err != nil {
			return fmt.Errorf("private data dir: %s: %w", rel, err)
		}
		return write(rel, data, mode)
	}
	if len(d.Project) == 0 {
		return fmt.Errorf("private data dir: no project files")
	}
	for rel, data := range d.Project {
		if filepath.IsAbs(rel) || strings.HasPrefix(filepath.Clean(rel), "..") {
			return fmt.Errorf("private data dir: project file %q: not a relative path inside project/", rel)
		}
		if err := write(filepath.Join("project", rel), data, 0o644); err != nil {
			return err
		}
	}
	if d.Inventory != nil {
		if err := asJSON("inventory/hosts.json", d.Inventory, 0o644); err != nil {
			return err
		}
	}
	if len(d.SSHKey) > 0 {
		if err := write("env/ssh_key", d.SSHKey, 0o600); err != nil {
			return err
		}
	}
	if len(d.EnvVars) > 0 {
		if err := asJSON("env/envvars", d.EnvVars, 0o644); err != nil {
			return err
		}
	}
	if len(d.ExtraVars) > 0 {
		if err := asJSON("env/extravars", d.ExtraVars, 0o644); err != nil {
			return err
		}
	}
	if d.Cmdline != "" {
		if err := write("env/cmdline", []byte(d.Cmdline), 0o644); err != nil {
			return err
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
	Image string
	// Dir is the private data directory (DataDir.Write); Out receives the artifacts.
	Dir, Out string
	// Playbook is the playbook's path under project/.
	Playbook string
	// Ident names the job's artifact directory (default "job").
	Ident string
}

// Result is a finished job as the process stage recorded it.
type Result struct {
	// Status is the job's final status (successful, failed, error, timeout, canceled).
	Status string
	// RC is ansible-playbook's exit code (-1: none recorded).
	RC int
	// Events are the job events in counter order.
	Events []Event
	// Wall is the pipeline's time, transmit's start to process's end.
	Wall time.Duration
	// ArtifactDir is where process wrote the artifacts.
	ArtifactDir string
}

// Run runs the job. An error means the pipeline itself broke; a job that ran and failed
// returns its Result with Status "failed" and no error.
func (j Job) Run(ctx context.Context) (Result, error) {
	ident := j.Ident
	if ident == "" {
		ident = "job"
	}
	dir, err := filepath.Abs(j.Dir)
	if err != nil {
		return Result{}, fmt.Errorf("job %s: private data dir: %w", ident, err)
	}
	out, err := filepath.Abs(j.Out)
	if err != nil {
		return Result{}, fmt.Errorf("job %s: artifacts dir: %w", ident, err)
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return Result{}, fmt.Errorf("job %s: artifacts dir: %w", ident, err)
	}
	suffix := make([]byte, 4)
	_, _ = rand.Read(suffix)
	name := "richt-ee-" + ident + "-" + hex.EncodeToString(suffix)
	// The controller's stages run as this process's user, so they read the private data
	// dir and the artifacts stay this user's; the worker runs as the image's runner, as
	// on an execution node.
	user := fmt.Sprintf("%d:%d", os.Getuid(), os.Getgid())
	stages := []struct {
		name string
		args []string
	}{
		{"transmit", []string{"run", "--rm", "--name", name + "-transmit", "--user", user, "-e", "HOME=/tmp",
			"-v", dir + ":/job", j.Image, "ansible-runner", "transmit", "/job", "-p", j.Playbook, "--ident", ident}},
		{"worker", []string{"run", "-i", "--rm", "--name", name + "-worker", "--label", "org.richt.ee.worker=1", j.Image, "ansible-runner", "worker"}},
		{"process", []string{"run", "-i", "--rm", "--name", name + "-process", "--user", user, "-e", "HOME=/tmp",
			"-v", out + ":/out", j.Image, "ansible-runner", "process", "/out", "--ident", ident}},
	}
	cmds := make([]*exec.Cmd, len(stages))
	stderr := make([]bytes.Buffer, len(stages))
	var processOut bytes.Buffer
	for i, s := range stages {
		cmds[i] = exec.CommandContext(ctx, "docker", s.args...)
		cmds[i].Stderr = &stderr[i]
	}
	cmds[2].Stdout = &processOut
	// Pipes between the stages: the parent closes its ends once the children hold them,
	// so each stage sees end of input when the one before it exits.
	var parentEnds []*os.File
	for i := 0; i < len(cmds)-1; i++ {
		r, w, err := os.Pipe()
		if err != nil {
			return Result{}, fmt.Errorf("job %s: pipe: %w", ident, err)
		}
		cmds[i].Stdout, cmds[i+1].Stdin = w, r
		parentEnds = append(parentEnds, r, w)
	}
	start := time.Now()
	started := 0
	var startErr error
	for i, c := range cmds {
		if err := c.Start(); err != nil {
			startErr = fmt.Errorf("job %s: start %s: %w", ident, stages[i].name, err)
			break
		}
		started++
	}
	for _, f := range parentEnds {
		f.Close()
	}
	errs := make([]error, started)
	for i := 0; i < started; i++ {
		errs[i] = cmds[i].Wait()
	}
	wall := time.Since(start)
	broke := startErr
	for i, err := range errs {
		if err != nil && broke == nil {
			broke = fmt.Errorf("job %s: %s: %w\n%s", ident, stages[i].name, err, tail(stderr[i].String(), 20))
		}
	}
	if broke != nil {
		// A stage killed by ctx leaves its container running: docker run does not pass
		// SIGKILL on to it.
		for _, s := range stages {
			_ = exec.Command("docker", "rm", "-f", name+"-"+s.name).Run()
		}
		return Result{}, broke
	}
	res, err := ReadArtifacts(filepath.Join(out, "artifacts", ident))
	if err != nil {
		return Result{}, fmt.Errorf("job %s: %w (worker said: %s)", ident, err, tail(stderr[1].String(), 20))
	}
	res.Wall = wall
	return res, nil
}

// ReadArtifacts reads a job's artifact directory: status, rc and job_events.
func ReadArtifacts(dir string) (Result, error) {
	res := Result{RC: -1, ArtifactDir: dir}
	status, err := os.ReadFile(filepath.Join(dir, "status"))
	if err != nil {
		return Result{}, fmt.Errorf("artifacts: %w", err)
	}
	res.Status = strings.TrimSpace(string(status))
	if rc, err := os.ReadFile(filepath.Join(dir, "rc")); err == nil {
		if n, err := strconv.Atoi(strings.TrimSpace(string(rc))); err == nil {
			res.RC = n
		}
	}
	files, err := filepath.Glob(filepath.Join(dir, "job_events", "*.json"))
	if err != nil {
		return Result{}, fmt.Errorf("artifacts: %w", err)
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return Result{}, fmt.Errorf("artifacts: %w", err)
		}
		var e Event
		if err := json.Unmarshal(data, &e); err != nil {
			return Result{}, fmt.Errorf("artifacts: event %s: %w", filepath.Base(f), err)
		}
		res.Events = append(res.Events, e)
	}
	sort.Slice(res.Events, func(a, b int) bool { return res.Events[a].Counter < res.Events[b].Counter })
	return res, nil
}

// Event is one ansible-runner job event.
type Event struct {
	Event   string `json:"event"`
	Counter int    `json:"counter"`
	UUID    string `json:"uuid"`
	Stdout  string `json:"stdout"`
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
