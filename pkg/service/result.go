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
	Summary []string `json:"summary"`
	State   string   `json:"state"`
	// Packages is the packages step's result (null when it did not run).
	Packages *stepResult `json:"packages"`
	// Files are the unit files' and drop-ins' results, unit files first.
	Files []stepResult `json:"files"`
	// Configs are the configs' results, in configs' order.
	Configs []stepResult `json:"configs"`
	// Processes are the processes' results, in the order they ran.
	Processes []stepResult `json:"processes"`
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
	add := func(label string, res stepResult) {
		d, _ := res.raw["diff"].(map[string]any)
		if d == nil {
			return
		}
		b, _ := d["before"].(string)
		a, _ := d["after"].(string)
		fmt.Fprintf(&before, "# %s\n%s", label, b)
		fmt.Fprintf(&after, "# %s\n%s", label, a)
	}
	if r.res.Packages != nil {
		add("packages", *r.res.Packages)
	}
	for _, c := range r.res.Configs {
		add(fmt.Sprintf("config %v", c.raw["name"]), c)
	}
	for _, f := range r.res.Files {
		add(fmt.Sprintf("file %v", f.raw["path"]), f)
	}
	for _, p := range r.res.Processes {
		add(fmt.Sprintf("process %v", p.raw["unit"]), p)
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
func packageOutcomes(names []string, res *stepResult) outcomes {
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
func stepOutcome(res *stepResult) Outcome {
	if res == nil {
		return Outcome{}
	}
	o := Outcome{Outcome: res.outcome()}
	_, o.Listed = res.raw["packages"].([]any)
	for _, e := range packageEntries(res) {
		if (e.operation != "" && e.operation != rpmexact.OpNone) || !slices.Equal(e.before, e.after) {
			o.Moved = append(o.Moved, e.name)
		}
	}
	return o
}

// outcome is a step's outcome from its result, as Ansible would register it: changed
// and the contract (package contract, read through its accessors only).
func (s stepResult) outcome() wiring.Outcome {
	return wiring.Outcome{Changed: s.changed(), Change: s.change()}
}

// fileOutcomes are the unit files' and drop-ins' outcomes from their results, in files'
// order.
func fileOutcomes(files []fileStep, results []stepResult) outcomes {
	out := outcomes{}
	for i, f := range files {
		if i < len(results) {
			out[fileRef(f)] = results[i].outcome()
		}
	}
	return out
}

// configOutcomes are the configs' outcomes from their results, in configs' order.
func configOutcomes(cfgs []config, results []stepResult) outcomes {
	out := outcomes{}
	for i, c := range cfgs {
		if i < len(results) {
			out[configRef(c.Name)] = results[i].outcome()
		}
	}
	return out
}

// configReport is a config's result as the service reports it (in `configs`): configfile's
// Result as a module's would be, its plan's entries as the service lists them (names),
// the diff only in diff mode, and failed with msg when err.
func (r *run) configReport(res *configfile.Result, names []string, err error) stepResult {
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
	return stepResult{raw: out}
}

// stepResult is one step's result as Ansible reports it: the module's own result (or,
// for a config, configfile's as a module's would be), encoded as it is. Only this file
// reads or writes its keys; the rest of the service passes it on whole and asks it
// through the methods here (changed, change, plan, msg...), which read package
// contract's keys through contract's accessors.
type stepResult struct{ raw map[string]any }

// MarshalJSON encodes the result as the module gave it.
func (s stepResult) MarshalJSON() ([]byte, error) { return json.Marshal(s.raw) }

// changed: the step changed something (package contract). change is the contract.Change
// it reports.
func (s stepResult) changed() bool           { return contract.Changed(s.raw) }
func (s stepResult) change() contract.Change { return contract.Read(s.raw) }

// failed reports whether the result says the step failed; msg is its message.
func (s stepResult) failed() bool { f, _ := s.raw["failed"].(bool); return f }
func (s stepResult) msg() string  { m, _ := s.raw["msg"].(string); return m }

// plan is the plan entries the result lists.
func (s stepResult) plan() []string { return stringsOf(s.raw["plan"]) }

// summary is a process step's summary line and unit.
func (s stepResult) summary() (line, unit string) {
	line, _ = s.raw["summary"].(string)
	unit, _ = s.raw["unit"].(string)
	return line, unit
}

// actions are what a process step asked systemd to do (its `actions`), and its unit.
func (s stepResult) actions() (names []string, unit string) {
	unit, _ = s.raw["unit"].(string)
	return stringsOf(s.raw["actions"]), unit
}

// skippedProcess is the result of a rollback's process step for a unit the rollback
// removed (a first install undone): it is skipped, changing nothing.
func skippedProcess(unit string) stepResult {
	return stepResult{raw: map[string]any{"unit": unit, "changed": false, "skipped": true,
		"msg": "its unit is gone with the rollback, as it was before the change", "plan": []any{}}}
}

// newResult is the service's result before any step.
func newResult(p Params) *Result {
	return &Result{Name: p.Name, State: p.State, Files: []stepResult{}, Configs: []stepResult{}, Processes: []stepResult{}, Plan: []string{}}
}

// stepOf is a step's result from the module's call (ansible.CallArgs), without what the
// service does not pass on: its invocation (the service's own is reported), and its
// warnings, each given to warn.
func stepOf(out map[string]any, warn func(string)) stepResult {
	delete(out, "invocation")
	for _, w := range stringsOf(out["warnings"]) {
		warn(w)
	}
	delete(out, "warnings")
	return stepResult{raw: out}
}

// result records one step's result (the module's call's) in the service's: its change,
// its warnings, its failure.
func (r *run) result(call map[string]any, step string) (stepResult, error) {
	out := stepOf(call, func(w string) { r.req.Warn("%s: %s", step, w) })
	if out.changed() {
		r.res.Changed = true
	}
	if out.failed() {
		r.res.FailedStep = step
		return out, fmt.Errorf("%s: %s", step, out.msg())
	}
	return out, nil
}

// rollbackResult is a rollback's process step's result from the module's call: its
// warnings are the rollback's, and a failure is the rollback's (it is not recorded as
// the run's failed step).
func (r *run) rollbackResult(call map[string]any, step string) (stepResult, error) {
	out := stepOf(call, func(w string) { r.req.Warn("rollback: %s: %s", step, w) })
	if out.failed() {
		return out, fmt.Errorf("%s", out.msg())
	}
	return out, nil
}

// planFailure is why a planner's call failed (it panicked): its result's message.
func planFailure(call map[string]any) error { return fmt.Errorf("%s", stepResult{raw: call}.msg()) }

// withItem is a file step's result with the file it is for (`item`: the unit as given,
// and a drop-in's name).
func withItem(out stepResult, f fileStep) stepResult {
	item := map[string]any{"unit": f.given}
	if f.name != "" {
		item["name"] = f.name
	}
	if out.raw == nil {
		out.raw = map[string]any{}
	}
	out.raw["item"] = item
	return out
}

// packageEntry is one entry of the packages step's result (rpm_exact's, a set:
// `packages`): its installed builds before and after.
type packageEntry struct {
	name, operation string
	before, after   []string
}

// packageEntries are the entries of the packages step's result res (a result without
// them, or no result: none).
func packageEntries(res *stepResult) []packageEntry {
	if res == nil {
		return nil
	}
	entries, _ := res.raw["packages"].([]any)
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
func (r *run) packagesChange() contract.Change {
	if r.res.Packages == nil {
		return contract.Change{}
	}
	return r.res.Packages.change()
}

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
