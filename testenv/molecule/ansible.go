package molecule

import (
	"bufio"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
)

// Change is one task result an ansible-playbook run reported changed, with what the
// module said it changed.
type Change struct {
	Host, Task string
	// Item is the loop item's label, when the task looped.
	Item string
	// What summarises the module's own account of the change (its plan, diff headers,
	// command, destination…); empty when the run was not verbose enough to show results.
	What string
}

// String is Molecule's idempotence line, "* [host] => task", and what changed under it.
func (c Change) String() string {
	s := fmt.Sprintf("* [%s] => %s", c.Host, c.Task)
	if c.Item != "" {
		s += " (item=" + c.Item + ")"
	}
	if c.What != "" {
		s += "\n    changed: " + c.What
	}
	return s
}

// ParseChanges reads ansible-playbook's default output (run with -v, so results are
// printed) and returns every changed result in order.
func ParseChanges(out string) []Change {
	var changes []Change
	task := ""
	sc := bufio.NewScanner(strings.NewReader(out))
	sc.Buffer(make([]byte, 1<<20), len(out)+1) // no line too long to reach the end
	for sc.Scan() {
		line := sc.Text()
		if rest, ok := strings.CutPrefix(line, "TASK ["); ok {
			if i := strings.LastIndex(rest, "]"); i >= 0 {
				task = rest[:i]
			}
			continue
		}
		if strings.HasPrefix(line, "RUNNING HANDLER [") {
			rest := strings.TrimPrefix(line, "RUNNING HANDLER [")
			if i := strings.LastIndex(rest, "]"); i >= 0 {
				task = rest[:i]
			}
			continue
		}
		rest, ok := strings.CutPrefix(line, "changed: [")
		if !ok {
			continue
		}
		host, rest, _ := strings.Cut(rest, "]")
		if i := strings.Index(host, " -> "); i >= 0 {
			host = host[:i]
		}
		c := Change{Host: host, Task: task}
		rest = strings.TrimPrefix(rest, " => ")
		if item, r, ok := strings.Cut(rest, ") => "); ok && strings.HasPrefix(item, "(item=") {
			c.Item, rest = strings.TrimPrefix(item, "(item="), r
		}
		if strings.HasPrefix(rest, "{") {
			var result map[string]any
			if json.Unmarshal([]byte(rest), &result) == nil {
				c.What = Summarise(result)
			}
		}
		changes = append(changes, c)
	}
	return changes
}

// summaryKeys are the result keys that say what a module changed, in the order shown.
// Modules of this collection return "plan"; file modules "diff", "dest" or "path"; the
// command family "cmd"; most modules "msg" or "state".
var summaryKeys = []string{"plan", "diff", "cmd", "dest", "path", "name", "state", "msg", "changes", "results"}

// maxSummary bounds one task's summary, so a large diff does not flood the report.
const maxSummary = 400

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
	if len(s) > maxSummary {
		s = s[:maxSummary] + "…"
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

// RecapFailed reports whether ansible-playbook's recap names a host that failed or was
// unreachable.
func RecapFailed(out string) bool {
	sc := bufio.NewScanner(strings.NewReader(out))
	sc.Buffer(make([]byte, 1<<20), len(out)+1) // no line too long to reach the end
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 3 || f[1] != ":" {
			continue
		}
		for _, kv := range f[2:] {
			if (strings.HasPrefix(kv, "failed=") || strings.HasPrefix(kv, "unreachable=")) && !strings.HasSuffix(kv, "=0") {
				return true
			}
		}
	}
	return false
}
