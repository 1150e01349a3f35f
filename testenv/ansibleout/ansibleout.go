// Package ansibleout reads ansible-playbook's console output (the default callback, as
// ansible-core 2.14 to 2.19 print it): which task results were changed on which host, what
// each module said it changed when the run was verbose, and the play recap. testenv's
// Playbook results and richt-molecule's idempotence check both read runs through it.
package ansibleout

import (
	"bufio"
	"encoding/json"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// Recap is one host's line of the play recap.
type Recap struct {
	Ok, Changed, Unreachable, Failed, Skipped, Rescued, Ignored int
}

// Change is one task result reported changed.
type Change struct {
	Host, Task string
	// Item is the loop item's label, when the task looped.
	Item string
	// What summarises the module's own account of the change (its plan, diff headers,
	// command, destination…); empty when the run was not verbose enough to show results.
	What string
}

// Output is what a run printed, read.
type Output struct {
	// Recap by host name.
	Recap map[string]Recap
	// Changes in the order printed; a handler's are named by the handler.
	Changes []Change
}

var recapLine = regexp.MustCompile(`^(\S+)\s+:\s+ok=(\d+)\s+changed=(\d+)\s+unreachable=(\d+)\s+failed=(\d+)\s+skipped=(\d+)\s+rescued=(\d+)\s+ignored=(\d+)`)

// Parse reads a run's output.
func Parse(out string) Output {
	res := Output{Recap: map[string]Recap{}}
	task := ""
	sc := bufio.NewScanner(strings.NewReader(out))
	// A line may be as long as the whole output: under Mitogen at -vvv one debug line
	// carries the module binary (17 MB), and a scanner that stops at a long line never
	// reaches the recap.
	sc.Buffer(make([]byte, 1<<20), len(out)+1)
	for sc.Scan() {
		line := sc.Text()
		if name, ok := header(line); ok {
			task = name
			continue
		}
		if rest, ok := strings.CutPrefix(line, "changed: ["); ok {
			res.Changes = append(res.Changes, change(task, rest))
			continue
		}
		if m := recapLine.FindStringSubmatch(line); m != nil {
			n := func(i int) int { v, _ := strconv.Atoi(m[i]); return v }
			res.Recap[m[1]] = Recap{Ok: n(2), Changed: n(3), Unreachable: n(4), Failed: n(5), Skipped: n(6), Rescued: n(7), Ignored: n(8)}
		}
	}
	return res
}

// header reads the name of a task's or a handler's header line.
func header(line string) (string, bool) {
	for _, prefix := range []string{"TASK [", "RUNNING HANDLER ["} {
		if rest, ok := strings.CutPrefix(line, prefix); ok {
			if i := strings.LastIndex(rest, "]"); i >= 0 {
				return rest[:i], true
			}
		}
	}
	return "", false
}

// change reads a "changed: [" line's rest: "host] => (item=x) => {result}", where the
// host may be "host -> delegate", and the item and the result (-v) are optional.
func change(task, rest string) Change {
	host, rest, _ := strings.Cut(rest, "]")
	host, _, _ = strings.Cut(host, " -> ")
	c := Change{Host: host, Task: task}
	rest = strings.TrimPrefix(rest, " => ")
	if item, ok := strings.CutPrefix(rest, "(item="); ok {
		// Without -v the item ends the line; with it, the result follows.
		item, rest, _ = strings.Cut(item, ") => ")
		c.Item = strings.TrimSuffix(item, ")")
	}
	if strings.HasPrefix(rest, "{") {
		var result map[string]any
		if json.Unmarshal([]byte(rest), &result) == nil {
			c.What = Summarise(result)
		}
	}
	return c
}

// summaryKeys are the result keys that say what a module changed, in the order shown.
// Modules of this collection return "plan"; file modules "diff", "dest" or "path"; the
// command family "cmd"; most modules "msg" or "state".
var summaryKeys = []string{"plan", "diff", "cmd", "dest", "path", "name", "state", "msg", "changes", "results"}

// MaxSummary bounds one task's summary, so a large diff does not flood a report.
const MaxSummary = 400

// Summarise turns a module's result into one line of what it changed.
func Summarise(result map[string]any) string {
	var parts []string
	for _, k := range summaryKeys {
		v, ok := result[k]
		if !ok || v == nil || v == "" {
			continue
		}
		if k == "diff" {
			v = diffHeaders(v)
			if v == "" {
				continue
			}
		}
		var s string
		if str, ok := v.(string); ok {
			s = str
		} else {
			b, _ := json.Marshal(v)
			s = string(b)
		}
		parts = append(parts, k+"="+s)
	}
	if len(parts) == 0 {
		keys := make([]string, 0, len(result))
		for k := range result {
			if !strings.HasPrefix(k, "_ansible") && k != "changed" && k != "invocation" {
				keys = append(keys, k)
			}
		}
		sort.Strings(keys)
		if len(keys) == 0 {
			return "(the module reported changed and returned nothing else)"
		}
		return "(result keys: " + strings.Join(keys, ", ") + ")"
	}
	s := strings.Join(parts, "; ")
	s = strings.ReplaceAll(s, "\n", `\n`)
	if len(s) > MaxSummary {
		s = s[:MaxSummary] + "…"
	}
	return s
}

// diffHeaders names what a diff compares (before_header → after_header, or the
// before/after themselves when short), for one or several diffs.
func diffHeaders(v any) string {
	var diffs []any
	switch d := v.(type) {
	case []any:
		diffs = d
	case map[string]any:
		diffs = []any{d}
	}
	var out []string
	for _, d := range diffs {
		m, ok := d.(map[string]any)
		if !ok {
			continue
		}
		bh, _ := m["before_header"].(string)
		ah, _ := m["after_header"].(string)
		if bh == "" && ah == "" {
			b, _ := json.Marshal(m["before"])
			a, _ := json.Marshal(m["after"])
			if string(b) == "null" && string(a) == "null" {
				continue
			}
			out = append(out, string(b)+" → "+string(a))
			continue
		}
		out = append(out, bh+" → "+ah)
	}
	return strings.Join(out, ", ")
}
