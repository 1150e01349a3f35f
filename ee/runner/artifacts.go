package runner

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

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
