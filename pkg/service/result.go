package service

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/richt/services/pkg/ansible"
	"github.com/richt/services/pkg/configfile"
	"github.com/richt/services/pkg/contract"
	"github.com/richt/services/pkg/rpmexact"
	"github.com/richt/services/pkg/wiring"
)

// Result is the module's result: per step the result its module gives, in order.
type Result struct {
	Changed bool   `json:"changed"`
	Name    string `json:"name"`
	// Summary is what the run did, one line per package move, process and rollback
	// (summary.go); the collection's action plugin prints it at the default verbosity.
	Summary  []string `json:"summary"`
	State    string   `json:"state"`
	Packages any      `json:"packages"`
	// Files are the unit files' and drop-ins' results, unit files first.
	Files []map[string]any `json:"files"`
	// Configs are the configs' results, in configs' order.
	Configs []map[string]any `json:"configs"`
	// Processes are the processes' results, in the order they ran.
	Processes []map[string]any `json:"processes"`
	// ManagerReload is "performed" when the service reloaded the manager at its end: after a
	// removal, or after writing unit files when no process step would.
	ManagerReload string `json:"manager_reload,omitempty"`
	// FailedStep names the step that failed ("packages", "config NAME", "file
	// UNIT/NAME", "process UNIT"); the results of the steps before it say what they did.
	FailedStep string `json:"failed_step,omitempty"`
	// RemovedDependents are the packages outside the service's that its removal took along
	// (remove_dependents), as NAME-VERSION-RELEASE.ARCH.
	RemovedDependents []string `json:"removed_dependents,omitempty"`
	// Recorded are the reactions recorded before the first step, per unit.
	Recorded map[string]string `json:"recorded,omitempty"`
	// Plan is the whole service's plan in the order it is carried out: each step's entries
	// under the step's name ("packages: install-nevra demo-0:1.0-1.noarch", "file
	// UNIT/NAME: write", "process UNIT: start") with the reactions recorded ahead between
	// them. The packages' and files' entries are the plans composed before any step runs;
	// a process's are the plan it carried out at its turn (check mode: forecast from the
	// earlier steps' checks), so check mode reports the real run's list whenever the
	// earlier steps do what their plans say. A real run adds only what a step's outcome
	// forced beyond them (a record for a change the step's plan missed, a withdrawal after
	// a failed write), before the processes' entries.
	Plan []string `json:"plan"`
	// Rollback is what a rollback would put back (rollback: true, and the run changes
	// something or an earlier run left a record), in check mode too.
	Rollback *RollbackPlan `json:"rollback,omitempty"`
	// RolledBack is what a rollback put back, after the change failed.
	RolledBack *RolledBack   `json:"rolled_back,omitempty"`
	Diff       *ansible.Diff `json:"diff,omitempty"`
}

// diff is one diff for the whole service: each step's, under its step's name.
func (r *run) diff() *ansible.Diff {
	if !r.req.Diff {
		return nil
	}
	var before, after strings.Builder
	add := func(label string, res map[string]any) {
		d, _ := res["diff"].(map[string]any)
		if d == nil {
			return
		}
		b, _ := d["before"].(string)
		a, _ := d["after"].(string)
		fmt.Fprintf(&before, "# %s\n%s", label, b)
		fmt.Fprintf(&after, "# %s\n%s", label, a)
	}
	if m, ok := r.res.Packages.(map[string]any); ok {
		add("packages", m)
	}
	for _, c := range r.res.Configs {
		add(fmt.Sprintf("config %v", c["name"]), c)
	}
	for _, f := range r.res.Files {
		add(fmt.Sprintf("file %v", f["path"]), f)
	}
	for _, p := range r.res.Processes {
		add(fmt.Sprintf("process %v", p["unit"]), p)
	}
	if before.Len() == 0 && after.Len() == 0 {
		return nil
	}
	return &ansible.Diff{Before: before.String(), After: after.String(), BeforeHeader: r.p.Name + " (before)", AfterHeader: r.p.Name + " (after)"}
}

func stringsOf(v any) []string {
	switch x := v.(type) {
	case []string:
		return x
	case []any:
		var out []string
		for _, e := range x {
			out = append(out, fmt.Sprint(e))
		}
		return out
	}
	return nil
}

// packageOutcomes are the packages' own outcomes from the packages step's result res
// (check mode's or the real run's): rpm_exact reports one change for the set, so each
// package that moved (Outcome.moved) gets the set's change (changed, and its
// contract.Change), and the others none.
func packageOutcomes(names []string, res reported) outcomes {
	return packageOutcomesOf(names, stepOutcome(res))
}

// packageOutcomesOf are the packages' outcomes from the packages step's typed outcome:
// each package it moved changed, every other one unchanged.
func packageOutcomesOf(names []string, set Outcome) outcomes {
	out := outcomes{}
	for _, n := range names {
		ref := wiring.Ref{Kind: wiring.Package, Name: n}
		if set.moved(n) {
			out[ref] = set.Outcome
		} else {
			out[ref] = wiring.Unchanged
		}
	}
	return out
}

// stepOutcome is a step's typed outcome from its result: changed, the contract, the plan
// it carried out, and which packages moved (an entry whose operation is not none, or
// whose builds before and after differ).
func stepOutcome(res reported) Outcome {
	o := Outcome{Outcome: outcomeOf(res)}
	_, o.Listed = res["packages"].([]any)
	for _, e := range packageEntries(res) {
		if (e.operation != "" && e.operation != rpmexact.OpNone) || !slices.Equal(e.before, e.after) {
			o.Moved = append(o.Moved, e.name)
		}
	}
	return o
}

// outcomeOf is a step's outcome from its result, as Ansible would register it: changed
// and the contract (package contract, read through its accessors only).
func outcomeOf(res map[string]any) wiring.Outcome {
	return wiring.Outcome{Changed: contract.Changed(res), Change: contract.Read(res)}
}

// fileOutcomes are the unit files' and drop-ins' outcomes from their results, in files'
// order.
func fileOutcomes(files []fileStep, results []map[string]any) outcomes {
	out := outcomes{}
	for i, f := range files {
		if i < len(results) {
			out[fileRef(f)] = outcomeOf(results[i])
		}
	}
	return out
}

// configOutcomes are the configs' outcomes from their results, in configs' order.
func configOutcomes(cfgs []config, results []map[string]any) outcomes {
	out := outcomes{}
	for i, c := range cfgs {
		if i < len(results) {
			out[configRef(c.Name)] = outcomeOf(results[i])
		}
	}
	return out
}

// configReport is a config's result as the service reports it (in `configs`): configfile's
// Result as a module's would be, its plan's entries as the service lists them (names),
// the diff only in diff mode, and failed with msg when err.
func (r *run) configReport(res *configfile.Result, names []string, err error) map[string]any {
	out := map[string]any{}
	if data, merr := json.Marshal(res); merr == nil {
		_ = json.Unmarshal(data, &out)
	}
	if !r.req.Diff {
		// As Ansible's own modules: a diff only in diff mode. The previous content of a
		// config that is not sensitive would otherwise be in every result, and in every
		// event AWX stores of it.
		delete(out, "diff")
	}
	out["plan"] = names
	if err != nil {
		out["failed"] = true
		out["msg"] = err.Error()
	}
	return out
}

// reported is one step's result as Ansible reports it: the module's own result (or, for
// a config, configfile's as a module's would be). Only this file reads or writes its keys;
// the rest of the service passes it on whole and reads it through the functions here
// and package contract's accessors.
type reported = map[string]any

// newResult is the service's result before any step.
func newResult(p Params) *Result {
	return &Result{Name: p.Name, State: p.State, Files: []reported{}, Configs: []reported{}, Processes: []reported{}, Plan: []string{}}
}

// result records one step's result in the service's: its change, its warnings, its
// failure.
func (r *run) result(out reported, step string) (reported, error) {
	delete(out, "invocation")
	if contract.Changed(out) {
		r.res.Changed = true
	}
	for _, w := range stringsOf(out["warnings"]) {
		r.req.Warn("%s: %s", step, w)
	}
	delete(out, "warnings")
	if failedOf(out) {
		r.res.FailedStep = step
		return out, fmt.Errorf("%s: %s", step, msgOf(out))
	}
	return out, nil
}

// failedOf reports whether a step's result says it failed; msgOf is its message.
func failedOf(out reported) bool { f, _ := out["failed"].(bool); return f }
func msgOf(out reported) string  { m, _ := out["msg"].(string); return m }

// planOf is the plan entries a step's result lists.
func planOf(out reported) []string { return stringsOf(out["plan"]) }

// withItem is a file step's result with the file it is for (`item`: the unit as given,
// and a drop-in's name).
func withItem(out reported, f fileStep) reported {
	item := map[string]any{"unit": f.given}
	if f.name != "" {
		item["name"] = f.name
	}
	out["item"] = item
	return out
}

// packagesResult is the packages step's result (nil when it did not run).
func (r *run) packagesResult() reported {
	m, _ := r.res.Packages.(map[string]any)
	return m
}

// summaryOf is a process step's summary line and unit, from its result.
func summaryOf(p reported) (line, unit string) {
	line, _ = p["summary"].(string)
	unit, _ = p["unit"].(string)
	return line, unit
}

// packageEntry is one entry of the packages step's result (rpm_exact's, a set:
// `packages`): its installed builds before and after.
type packageEntry struct {
	name, operation string
	before, after   []string
}

// packageEntries are the entries of the packages step's result res (a result without
// them, or no result: none).
func packageEntries(res any) []packageEntry {
	m, _ := res.(map[string]any)
	entries, _ := m["packages"].([]any)
	var out []packageEntry
	for _, e := range entries {
		entry, _ := e.(map[string]any)
		name, _ := entry["name"].(string)
		op, _ := entry["operation"].(string)
		out = append(out, packageEntry{name: name, operation: op, before: stringsOf(entry["before"]), after: stringsOf(entry["after"])})
	}
	return out
}

// packagesChange is what the packages step's result says of its change (nothing when it
// did not run).
func (r *run) packagesChange() contract.Change { return contract.Read(r.packagesResult()) }

// sensitiveContents are the values masked wherever they would appear in what Ansible
// reports (ansible.Spec.NoLogValues): which files are sensitive is per item of the raw
// arguments, and their contents are the secrets.
func sensitiveContents(raw map[string]any) []string {
	var out []string
	for _, key := range []string{"units", "dropins", "configs"} {
		items, _ := raw[key].([]any)
		for _, it := range items {
			m, _ := it.(map[string]any)
			if c, ok := m["content"].(string); ok && m["sensitive"] != nil && !ansible.PlainlyFalse(m["sensitive"]) {
				out = append(out, c)
			}
		}
	}
	return out
}
