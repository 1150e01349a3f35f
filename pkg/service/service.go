// Package service is the service module: one whole service (packages, owned unit files
// and drop-ins, processes) in one task and one process on the target. Its steps are the
// three modules' own runs, called in process (ansible.Call), so each step's result is the
// one that module gives on its own; what one step changed reaches the next as the same
// triggers the service role wires between tasks (restart beats reload, reloads merge, a
// start absorbs, a restart the package's scriptlet already did is not repeated).
//
// Present: packages (one set, one transaction) → unit files and drop-ins (written without
// a manager reload of their own) → processes in order (the first that needs it reloads the
// manager once; without processes, one manager reload at the end). Absent: the reverse,
// then one manager reload when anything was removed.
// Before any step changes anything, the reaction each process will owe is recorded on the
// target (durable pending reactions), so a run killed between its steps leaves it for the
// next run.
package service

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/richt/services/pkg/ansible"
	"github.com/richt/services/pkg/contract"
	"github.com/richt/services/pkg/durable"
	"github.com/richt/services/pkg/lock"
	"github.com/richt/services/pkg/reaction"
	"github.com/richt/services/pkg/stamp"
	"github.com/richt/services/pkg/unitname"
)

// Module is one module the service composes: its parameter contract and behaviour.
type Module struct {
	Spec    *ansible.Spec
	Handler ansible.Handler
}

// Prediction answers, before anything is changed, whether the packages step and each file
// step will change something (from the modules' own Observe and Decide, reading only), and
// which installed packages outside a removal's names it would take along.
type Prediction interface {
	PackagesChange(ctx context.Context, packages []any) (bool, error)
	FileChanges(ctx context.Context, file map[string]any) (bool, error)
	Dependents(ctx context.Context, names []string) ([]string, error)
}

// Pending records a reaction a process will owe (package durable).
type Pending interface {
	GetPending(unit string) (*durable.Pending, error)
	SetPending(unit string, p durable.Pending) error
	ClearPending(unit string) error
}

// Deps are the service module's parts.
type Deps struct {
	Packages, Files, Processes Module
	Predict                    Prediction
	Pending                    Pending
	// Reload reloads systemd's manager and settles the sync records (after a removal).
	Reload func(ctx context.Context) error
	// SyncDue reports whether a manager reload is recorded as due (a removal that a failed
	// or killed run left half done); nil: never.
	SyncDue func() bool
	// Lock serializes the pending records of a unit with systemd_lifecycle's runs on it
	// (package lock); nil: unserialized, for tests.
	Lock lock.Func
	// Now reads systemd's clock; nil means stamp.Now.
	Now func() (stamp.Stamp, error)
}

// Params are the service module's parameters.
type Params struct {
	Name      string    `ansible:"name"`
	State     string    `ansible:"state"`
	Packages  []Package `ansible:"packages"`
	Units     []Unit    `ansible:"units"`
	Dropins   []DropIn  `ansible:"dropins"`
	Processes []Process `ansible:"processes"`
	// RemoveDependents lets a removal take installed packages outside Packages that
	// require them.
	RemoveDependents bool `ansible:"remove_dependents"`
}

// Package is one item of packages.
type Package struct {
	Name    string  `ansible:"name"`
	Version *string `ansible:"version"`
	Manager *string `ansible:"manager"`
	Timeout *string `ansible:"timeout"`
}

// Unit is one item of units: an owned full unit file.
type Unit struct {
	Unit      string `ansible:"unit"`
	Content   string `ansible:"content"`
	Mode      any    `ansible:"mode"` // passed to unit_override as given: "0644" or 420
	Sensitive bool   `ansible:"sensitive"`
}

// DropIn is one item of dropins.
type DropIn struct {
	Unit      string `ansible:"unit"`
	Name      string `ansible:"name"`
	Content   string `ansible:"content"`
	Mode      any    `ansible:"mode"`
	Sensitive bool   `ansible:"sensitive"`
	Reload    bool   `ansible:"reload"`
}

// Process is one item of processes.
type Process struct {
	Unit    string         `ansible:"unit"`
	State   *string        `ansible:"state"`
	Enabled *bool          `ansible:"enabled"`
	Masked  *bool          `ansible:"masked"`
	Timeout *string        `ansible:"timeout"`
	Settle  any            `ansible:"settle"` // passed as given ("2s", or a number of seconds)
	Health  map[string]any `ansible:"health"`
	After   []any          `ansible:"after"`
}

// Result is the module's result: per step the result its module gives, in order.
type Result struct {
	Changed  bool   `json:"changed"`
	Name     string `json:"name"`
	State    string `json:"state"`
	Packages any    `json:"packages"`
	// Files are the unit files' and drop-ins' results, unit files first.
	Files []map[string]any `json:"files"`
	// Processes are the processes' results, in the order they ran.
	Processes []map[string]any `json:"processes"`
	// ManagerReload is "performed" when the service reloaded the manager at its end: after a
	// removal, or after writing unit files when no process step would.
	ManagerReload string `json:"manager_reload,omitempty"`
	// FailedStep names the step that failed ("packages", "file UNIT/NAME", "process
	// UNIT"); the results of the steps before it say what they did.
	FailedStep string `json:"failed_step,omitempty"`
	// RemovedDependents are the packages outside the service's that its removal took along
	// (remove_dependents), as NAME-VERSION-RELEASE.ARCH.
	RemovedDependents []string `json:"removed_dependents,omitempty"`
	// Recorded are the reactions recorded before the first step, per unit.
	Recorded map[string]string `json:"recorded,omitempty"`
	// Plan is the whole service's plan in the order it is carried out: each step's own
	// plan entries under the step's name ("packages: install-nevra demo", "file PATH:
	// write", "process UNIT: start"), with the reactions recorded ahead between them.
	// Check mode reports the same list.
	Plan []string      `json:"plan"`
	Diff *ansible.Diff `json:"diff,omitempty"`
}

// Handler returns the service module's behaviour.
func Handler(d Deps) ansible.Handler {
	return func(ctx context.Context, req *ansible.Request) (any, error) {
		var p Params
		if err := req.Decode(&p); err != nil {
			return nil, err
		}
		order, err := Order(p.Processes, p.State == "absent")
		if err != nil {
			return nil, err
		}
		r := &run{d: d, req: req, p: p, order: order, res: &Result{Name: p.Name, State: p.State, Files: []map[string]any{}, Processes: []map[string]any{}, Plan: []string{}}}
		if p.State == "absent" {
			err = r.absent(ctx)
		} else {
			err = r.present(ctx)
		}
		r.res.Diff = r.diff()
		return r.res, err
	}
}

type run struct {
	d     Deps
	req   *ansible.Request
	p     Params
	order []Process
	res   *Result
}

// call runs one step's module in process and records its result; a failed step stops the
// service there.
func (r *run) call(ctx context.Context, m Module, step string, args map[string]any) (map[string]any, error) {
	out := ansible.Call(ctx, m.Spec, args, r.req.CheckMode, r.req.Diff, m.Handler)
	delete(out, "invocation")
	if c, _ := out["changed"].(bool); c {
		r.res.Changed = true
	}
	for _, w := range stringsOf(out["warnings"]) {
		r.req.Warn("%s: %s", step, w)
	}
	delete(out, "warnings")
	r.res.Plan = append(r.res.Plan, stepPlan(step, out)...)
	if f, _ := out["failed"].(bool); f {
		r.res.FailedStep = step
		msg, _ := out["msg"].(string)
		return out, fmt.Errorf("%s: %s", step, msg)
	}
	return out, nil
}

func (r *run) present(ctx context.Context) (err error) {
	pkgs := r.packageArgs(false)
	files := r.fileArgs(false)
	// The files are written without a manager reload of their own, and the packages step
	// may leave one needed: the first process step reloads. Without a process nothing
	// would, and the unit files on disk would not be the ones systemd runs
	// (NeedDaemonReload=yes, the task ok): then the service reloads, once, after its steps,
	// also when a later one failed; and when an earlier run left one due.
	changedFiles := false
	defer func() {
		if len(r.order) > 0 {
			return
		}
		needed := changedFiles
		if m, ok := r.res.Packages.(map[string]any); ok && m["daemon_reload"] == string(contract.ReloadNeeded) {
			needed = true
		}
		if needed || r.syncDue() {
			err = r.reloadManager(ctx, err, "writing the unit files of")
		}
	}()
	// The prediction reads only, so check mode makes it too and reports the records a
	// real run writes.
	ahead, err := r.predict(ctx, pkgs, files)
	if err != nil {
		r.res.FailedStep = "record reactions"
		return err
	}
	// Before the packages step: what a package change will owe.
	if err := r.record(ahead, ahead.pkg); err != nil {
		return err
	}
	var pkgRes map[string]any
	pkgChanged := false
	if pkgs != nil {
		var err error
		pkgRes, err = r.call(ctx, r.d.Packages, "packages", pkgs)
		r.res.Packages = pkgRes
		pkgChanged, _ = pkgRes["changed"].(bool)
		if pkgChanged {
			// A change the prediction missed (the database moved under it: an earlier run's
			// transaction still running when this run predicted) owes the same restart:
			// recorded before the next step, also when this one then failed. Stamped when
			// the package's files were in place, not now: a scriptlet's restart inside the
			// transaction (an EL %postun) served it, and a stamp taken after that restart
			// had the process restart a second time (soak seeds 20261205 and 20261206,
			// kill-supervisor).
			placed := contract.Read(pkgRes).FilesPlaced
			if rerr := r.recordAt(ahead, missed(ahead.pkg, ahead.every(reaction.Restart)), placed); rerr != nil {
				return rerr
			}
		}
		if !pkgChanged {
			// Predicted, but nothing changed (DNF refused, the step failed early): no
			// reaction is owed on its account; the files step's own is recorded next.
			r.withdraw(ahead, ahead.pkg, func(string) reaction.Kind { return reaction.None })
		}
		if err != nil {
			return err
		}
	}
	// Before the files step, stamped now: a restart the package's scriptlet did a moment
	// ago does not serve what the files about to be written owe.
	if err := r.record(ahead, ahead.files); err != nil {
		return err
	}
	// What the written files owe per unit.
	changedUnits := map[string]reaction.Kind{}
	// What the files step has recorded per unit: ahead, then for changes it missed.
	filesRecorded := maps.Clone(ahead.files)
	var failed error
	for _, f := range files {
		out, err := r.call(ctx, r.d.Files, "file "+fileLabel(f), f.args)
		out["item"] = f.item
		r.res.Files = append(r.res.Files, out)
		if c, _ := out["changed"].(bool); c {
			changedUnits[f.unit] = reaction.Stronger(changedUnits[f.unit], fileReaction(f))
			changedFiles = true
			if ahead.running[f.unit] {
				if rerr := r.recordWritten(ahead, filesRecorded, f); rerr != nil {
					return rerr
				}
			}
		}
		if err != nil {
			failed = err
			break
		}
	}
	// A file that was not written (its write failed and left the old file in place, or a
	// failed step before it stopped the run) owes nothing: what was recorded ahead for it
	// is withdrawn, also when the run fails, down to what the unit's written files owe.
	// A package change owes every process to run a restart, predicted or not.
	r.withdraw(ahead, ahead.files, func(u string) reaction.Kind {
		if pkgChanged {
			return reaction.Restart
		}
		return reaction.Stronger(changedUnits[u]) // None when none changed
	})
	if failed != nil {
		return failed
	}
	for _, proc := range r.order {
		restart, reload := r.triggers(proc, pkgRes, files)
		args := processArgs(proc)
		args["restart_on"] = restart
		if len(reload) > 0 {
			args["reload_on"] = reload
		}
		out, err := r.call(ctx, r.d.Processes, "process "+unitOf(proc.Unit), args)
		r.res.Processes = append(r.res.Processes, out)
		if err != nil {
			return err
		}
	}
	return nil
}

func (r *run) absent(ctx context.Context) (err error) {
	// Before anything changes: a removal that would take other packages along.
	dependents, err := r.dependents(ctx)
	if err != nil {
		r.res.FailedStep = "packages"
		return err
	}
	removed := false
	// One reload so systemd forgets the removed units, as part of the removal: also when a
	// later step failed after something was removed, and when an earlier run's removal left
	// one due (it failed or was killed before its reload).
	defer func() {
		if removed || r.syncDue() {
			err = r.reloadManager(ctx, err, "removing")
		}
	}()
	for _, proc := range r.order {
		args := map[string]any{"unit": proc.Unit, "state": "stopped", "enabled": false, "allow_missing": true}
		if proc.Timeout != nil {
			args["timeout"] = *proc.Timeout
		}
		out, err := r.call(ctx, r.d.Processes, "process "+unitOf(proc.Unit), args)
		r.res.Processes = append(r.res.Processes, out)
		if err != nil {
			return err
		}
	}
	for _, f := range r.fileArgs(true) {
		out, err := r.call(ctx, r.d.Files, "file "+fileLabel(f), f.args)
		out["item"] = f.item
		r.res.Files = append(r.res.Files, out)
		if c, _ := out["changed"].(bool); c {
			removed = true
		}
		if err != nil {
			return err
		}
	}
	if pkgs := r.packageArgs(true); pkgs != nil {
		out, err := r.call(ctx, r.d.Packages, "packages", pkgs)
		r.res.Packages = out
		if c, _ := out["changed"].(bool); c {
			removed = true
			if len(dependents) > 0 {
				r.res.RemovedDependents = dependents
				r.req.Warn("removing %s also removed %s, which required its packages (remove_dependents)", r.p.Name, strings.Join(dependents, ", "))
			}
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// syncDue reports whether a manager reload is recorded as due.
func (r *run) syncDue() bool { return r.d.SyncDue != nil && r.d.SyncDue() }

// reloadManager reloads systemd's manager as the service's last step (planned in check
// mode) and returns the run's error: err when a step failed before, else the reload's.
func (r *run) reloadManager(ctx context.Context, err error, after string) error {
	r.res.ManagerReload = "performed"
	r.res.Plan = append(r.res.Plan, "daemon-reload")
	if r.req.CheckMode || r.d.Reload == nil {
		return err
	}
	if rerr := r.d.Reload(ctx); rerr != nil && err == nil {
		r.res.FailedStep = "manager reload"
		return fmt.Errorf("manager reload after %s %s: %w", after, r.p.Name, rerr)
	}
	return err
}

// dependents are the installed packages outside the service's that removing its packages
// would take along (DNF removes what requires a removed package). Without
// remove_dependents they refuse the removal, naming them; with it they are what the
// removal will report.
func (r *run) dependents(ctx context.Context) ([]string, error) {
	if len(r.p.Packages) == 0 || r.d.Predict == nil {
		return nil, nil
	}
	names := make([]string, 0, len(r.p.Packages))
	for _, p := range r.p.Packages {
		names = append(names, p.Name)
	}
	// Reading only, but bounded: an rpm that hangs must not hold the run forever.
	ctx, cancel := context.WithTimeout(ctx, predictTimeout)
	defer cancel()
	deps, err := r.d.Predict.Dependents(ctx, names)
	if err != nil {
		return nil, fmt.Errorf("packages: find what requires %s: %w", strings.Join(names, ", "), err)
	}
	if len(deps) > 0 && !r.p.RemoveDependents {
		return nil, fmt.Errorf("packages: removing %s would also remove %s, which require them and are not packages of this service; nothing was changed (remove those first, add them to packages, or set remove_dependents: true to let them go)",
			strings.Join(names, ", "), strings.Join(deps, ", "))
	}
	return deps, nil
}

// packageArgs is rpm_exact's arguments for the service's packages as one set, or nil when
// there are none. Manager and timeout apply to the whole set (Check refused disagreement).
func (r *run) packageArgs(absent bool) map[string]any {
	if len(r.p.Packages) == 0 {
		return nil
	}
	var entries []any
	args := map[string]any{}
	for _, p := range r.p.Packages {
		e := map[string]any{"name": p.Name}
		switch {
		case absent:
			e["state"] = "absent"
		case p.Version != nil:
			e["version"] = *p.Version
		}
		entries = append(entries, e)
		if p.Manager != nil {
			args["manager"] = *p.Manager
		}
		if p.Timeout != nil {
			args["timeout"] = *p.Timeout
		}
	}
	args["packages"] = entries
	return args
}

type fileStep struct {
	unit   string
	reload bool
	args   map[string]any
	item   map[string]any
}

func fileLabel(f fileStep) string {
	if n, ok := f.args["name"].(string); ok {
		return f.unit + "/" + n
	}
	return f.unit
}

// fileArgs is unit_override's arguments for every unit file, then every drop-in: written
// without a manager reload of their own (the first process that needs one does it).
func (r *run) fileArgs(absent bool) []fileStep {
	var out []fileStep
	add := func(unit, name, content string, mode any, sensitive, reload bool) {
		args := map[string]any{"unit": unit, "daemon_reload": false}
		item := map[string]any{"unit": unit}
		if name != "" {
			args["name"] = name
			item["name"] = name
		}
		// sensitive also for a removal: the diff would show the content on the host.
		args["sensitive"] = sensitive
		if absent {
			args["state"] = "absent"
		} else {
			args["content"] = content
			if mode != nil {
				args["mode"] = mode
			}
		}
		out = append(out, fileStep{unit: unitOf(unit), reload: reload, args: args, item: item})
	}
	for _, f := range r.p.Units {
		add(f.Unit, "", f.Content, f.Mode, f.Sensitive, false)
	}
	for _, f := range r.p.Dropins {
		add(f.Unit, f.Name, f.Content, f.Mode, f.Sensitive, f.Reload)
	}
	return out
}

func processArgs(p Process) map[string]any {
	args := map[string]any{"unit": p.Unit}
	if p.State != nil {
		args["state"] = *p.State
	}
	if p.Enabled != nil {
		args["enabled"] = *p.Enabled
	}
	if p.Masked != nil {
		args["masked"] = *p.Masked
	}
	if p.Timeout != nil {
		args["timeout"] = *p.Timeout
	}
	if p.Settle != nil {
		args["settle"] = p.Settle
	}
	if p.Health != nil {
		args["health"] = p.Health
	}
	return args
}

// triggers are a process's restart_on and reload_on, named and wired as the role wired
// them: the packages step restarts every process; the unit files and drop-ins of the
// process's unit restart it, or reload it when the drop-in says reload.
func (r *run) triggers(p Process, pkgRes map[string]any, files []fileStep) (restart, reload []any) {
	unit := unitOf(p.Unit)
	packages := any(map[string]any{"changed": false})
	if pkgRes != nil {
		packages = pkgRes
	}
	var units, dropins, reloads []any
	for i, f := range files {
		if f.unit != unit || i >= len(r.res.Files) {
			continue
		}
		_, dropIn := f.args["name"]
		switch {
		case f.reload:
			reloads = append(reloads, r.res.Files[i])
		case dropIn:
			dropins = append(dropins, r.res.Files[i])
		default:
			units = append(units, r.res.Files[i])
		}
	}
	loop := func(items []any) map[string]any {
		if items == nil {
			items = []any{}
		}
		return map[string]any{"changed": false, "results": items}
	}
	restart = []any{
		map[string]any{"packages": packages},
		map[string]any{"unit files": loop(units)},
		map[string]any{"drop-ins": loop(dropins)},
	}
	if len(reloads) > 0 {
		reload = []any{map[string]any{"reload drop-ins": loop(reloads)}}
	}
	return restart, reload
}

// predictTimeout bounds the prediction before the first step (one rpm query, reading the
// owned files).
const predictTimeout = time.Minute

// ahead is what a run predicted before its first step: the reaction each running process
// will owe for the packages step and for the files step, and the records it replaced.
type ahead struct {
	pkg, files map[string]reaction.Kind
	// earlier are the records there were before this run wrote its own (nil: none).
	earlier map[string]*durable.Pending
	wrote   map[string]bool
	// checked is what check mode would have recorded, per unit.
	checked map[string]reaction.Kind
	// running are the units of processes that are to run: the ones a change owes a
	// reaction.
	running map[string]bool
	// written is the record this run last wrote per unit, to tell it from another run's.
	written map[string]durable.Pending
}

// every is kind for each unit that is to run.
func (a *ahead) every(kind reaction.Kind) map[string]reaction.Kind {
	out := map[string]reaction.Kind{}
	for u := range a.running {
		out[u] = kind
	}
	return out
}

// missed is what due owes beyond what was recorded for it: the units whose recorded
// reaction (none, or a reload) does not serve their due one.
func missed(recorded, due map[string]reaction.Kind) map[string]reaction.Kind {
	out := map[string]reaction.Kind{}
	for u, k := range due {
		if had := reaction.Stronger(recorded[u]); reaction.Stronger(had, k) != had {
			out[u] = k
		}
	}
	return out
}

// fileReaction is what a changed unit file or drop-in owes its unit's process.
func fileReaction(f fileStep) reaction.Kind {
	if f.reload {
		return reaction.Reload
	}
	return reaction.Restart
}

// predict decides, reading only (the modules' own Observe and Decide), what the packages
// and the files steps are about to change, and so which reaction each process that is to
// run will owe for each.
func (r *run) predict(ctx context.Context, pkgs map[string]any, files []fileStep) (*ahead, error) {
	running := map[string]bool{}
	a := &ahead{pkg: map[string]reaction.Kind{}, files: map[string]reaction.Kind{}, earlier: map[string]*durable.Pending{}, wrote: map[string]bool{},
		checked: map[string]reaction.Kind{}, running: running, written: map[string]durable.Pending{}}
	for _, p := range r.order {
		if p.State == nil || *p.State == "running" {
			running[unitOf(p.Unit)] = true
		}
	}
	if r.d.Predict == nil || r.d.Pending == nil || len(running) == 0 {
		return a, nil
	}
	// Reading only, but bounded: an rpm that hangs must not hold the run forever.
	ctx, cancel := context.WithTimeout(ctx, predictTimeout)
	defer cancel()
	if pkgs != nil {
		c, err := r.d.Predict.PackagesChange(ctx, pkgs["packages"].([]any))
		if err != nil {
			return nil, fmt.Errorf("predict the packages step: %w", err)
		}
		if c {
			for u := range running {
				a.pkg[u] = reaction.Restart
			}
		}
	}
	for _, f := range files {
		if !running[f.unit] {
			continue
		}
		c, err := r.d.Predict.FileChanges(ctx, f.args)
		if err != nil {
			return nil, fmt.Errorf("predict the file %s: %w", fileLabel(f), err)
		}
		if !c {
			continue
		}
		a.files[f.unit] = reaction.Stronger(a.files[f.unit], fileReaction(f))
	}
	return a, nil
}

// recordWritten keeps the record of f's unit true after f was written: a change the
// prediction missed is recorded (and listed in the plan, as for the records ahead); one it
// predicted is stamped again (durable.Owed's rule), so an activation between the record
// written ahead and this write (a package scriptlet's restart landing late, a restart by
// hand) does not serve what the write owes. Check mode writes nothing, and lists only
// the missed.
func (r *run) recordWritten(a *ahead, recorded map[string]reaction.Kind, f fileStep) error {
	due := map[string]reaction.Kind{f.unit: fileReaction(f)}
	if owed := missed(recorded, due); len(owed) > 0 {
		if err := r.record(a, owed); err != nil {
			return err
		}
		recorded[f.unit] = reaction.Stronger(recorded[f.unit], owed[f.unit])
		return nil
	}
	if r.req.CheckMode || r.d.Pending == nil {
		return nil
	}
	_, err := r.recordOne(a, f.unit, due[f.unit], nil)
	return err
}

// record writes, for each unit, the reaction it will owe as a pending reaction stamped
// now, under the unit's lock: a run killed before its process step leaves it for the next
// run, and only an activation after this moment serves it. A stronger reaction already
// owed stays, stamped now.
func (r *run) record(a *ahead, owed map[string]reaction.Kind) error {
	return r.recordAt(a, owed, nil)
}

// recordAt is record for a change already made: stamped at, the moment it was complete
// (an activation after it served it), when at is a moment of this boot; otherwise now.
func (r *run) recordAt(a *ahead, owed map[string]reaction.Kind, at *stamp.Stamp) error {
	if r.d.Pending == nil {
		return nil
	}
	for _, unit := range slices.Sorted(maps.Keys(owed)) {
		due := owed[unit]
		if r.req.CheckMode {
			// What a real run would write: merged with the record there is, or with the one
			// this run would have written for the packages step.
			earlier, err := r.d.Pending.GetPending(unit)
			if err != nil {
				return err
			}
			if earlier != nil {
				due = reaction.Stronger(due, reaction.Kind(earlier.Reaction))
			}
			due = reaction.Stronger(due, a.checked[unit])
			a.checked[unit] = due
			r.res.Plan = append(r.res.Plan, fmt.Sprintf("record-pending %s %s", unit, due))
			continue
		}
		due, err := r.recordOne(a, unit, due, at)
		if err != nil {
			return err
		}
		r.res.Plan = append(r.res.Plan, fmt.Sprintf("record-pending %s %s", unit, due))
	}
	return nil
}

// recordOne writes the record of unit, merged with the one there is (durable.Owed) and
// stamped now (or at, a moment of this boot that is not later than now), under the unit's
// lock, and returns the reaction recorded.
func (r *run) recordOne(a *ahead, unit string, due reaction.Kind, at *stamp.Stamp) (reaction.Kind, error) {
	now := r.d.Now
	if now == nil {
		now = stamp.Now
	}
	if err := r.locked(unit, func() error {
		earlier, err := r.d.Pending.GetPending(unit)
		if err != nil {
			return err
		}
		if _, kept := a.earlier[unit]; !kept && !a.wrote[unit] {
			a.earlier[unit] = earlier
		}
		stampNow, err := now()
		if err != nil {
			return err
		}
		if at != nil && at.BootID == stampNow.BootID && at.Mono <= stampNow.Mono {
			stampNow = *at
		}
		rec := durable.Owed(earlier, due, []string{"service " + r.p.Name}, stampNow)
		if err := r.d.Pending.SetPending(unit, rec); err != nil {
			return err
		}
		a.written[unit] = rec
		due = reaction.Kind(rec.Reaction)
		return nil
	}); err != nil {
		r.res.FailedStep = "record reactions"
		return due, fmt.Errorf("record the %s %s owes: %w", due, unit, err)
	}
	a.wrote[unit] = true
	if r.res.Recorded == nil {
		r.res.Recorded = map[string]string{}
	}
	r.res.Recorded[unit] = string(due)
	return due, nil
}

// withdraw puts back what a unit's record was before this run, for the units whose
// predicted change did not happen, merged with what this run still owes them (owed; None:
// nothing): a record of this run that says more than that (a restart where a reload is
// owed) is narrowed to it, keeping its stamp. Only while the record is still the one this
// run wrote: one another run wrote since (systemd_lifecycle, another service run, under
// the same lock) is that run's reaction, and putting this run's earlier record back would
// lose it.
func (r *run) withdraw(a *ahead, units map[string]reaction.Kind, owed func(unit string) reaction.Kind) {
	for _, unit := range slices.Sorted(maps.Keys(units)) {
		if !a.wrote[unit] {
			continue
		}
		still, earlier := owed(unit), a.earlier[unit]
		keep := still
		if earlier != nil {
			keep = reaction.Stronger(still, reaction.Kind(earlier.Reaction))
		}
		narrowed := a.written[unit]
		if still != reaction.None && reaction.Kind(narrowed.Reaction) == keep {
			continue
		}
		narrowed.Reaction = string(keep)
		if keep != reaction.Restart && narrowed.ReloadAt != nil {
			// What is left is the reload, owed since its own change.
			narrowed.At, narrowed.ReloadAt = *narrowed.ReloadAt, nil
		}
		done := false
		_ = r.locked(unit, func() error {
			now, err := r.d.Pending.GetPending(unit)
			if err != nil || !samePending(now, a.written[unit]) {
				return err
			}
			done = true
			switch {
			case still != reaction.None:
				return r.d.Pending.SetPending(unit, narrowed)
			case earlier != nil:
				return r.d.Pending.SetPending(unit, *earlier)
			}
			return r.d.Pending.ClearPending(unit)
		})
		if still != reaction.None {
			if done {
				a.written[unit] = narrowed
				r.res.Recorded[unit] = string(keep)
				r.res.Plan = append(r.res.Plan, fmt.Sprintf("record-pending %s %s", unit, keep))
			}
			continue
		}
		delete(a.wrote, unit)
		delete(r.res.Recorded, unit)
		if done {
			r.res.Plan = append(r.res.Plan, "withdraw-pending "+unit)
		}
	}
}

// samePending reports whether the record read back is the one written: compared as
// stored (JSON), so a time's monotonic reading or location does not tell them apart.
func samePending(read *durable.Pending, wrote durable.Pending) bool {
	if read == nil {
		return false
	}
	a, errA := json.Marshal(*read)
	b, errB := json.Marshal(wrote)
	return errA == nil && errB == nil && bytes.Equal(a, b)
}

// locked runs f under the unit's lock, as systemd_lifecycle's runs on it are.
func (r *run) locked(unit string, f func() error) error {
	if r.d.Lock == nil {
		return f()
	}
	release, err := r.d.Lock(context.Background(), lock.Unit(unit))
	if err != nil {
		return err
	}
	defer release()
	return f()
}

// stepPlan is one step's plan entries under the step's name: a file's and a process's
// own plan, the packages step's operation per package.
func stepPlan(step string, out map[string]any) []string {
	var entries []string
	if step == "packages" {
		ps, _ := out["packages"].([]any)
		for _, e := range ps {
			m, _ := e.(map[string]any)
			if op, _ := m["operation"].(string); op != "" && op != "none" {
				entries = append(entries, fmt.Sprintf("%s %v", op, m["name"]))
			}
		}
	} else {
		entries = stringsOf(out["plan"])
	}
	for i, e := range entries {
		entries[i] = step + ": " + e
	}
	return entries
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

// unitOf normalises a unit name as the modules do (no suffix: .service).
func unitOf(u string) string {
	n, err := unitname.Normalize(u)
	if err != nil {
		return u
	}
	return n
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

// Order puts processes after the units their after lists name (declared order
// otherwise); reversed for removal. An after that names no process of the service, a
// unit declared twice and a cycle are errors naming them.
func Order(ps []Process, reverse bool) ([]Process, error) {
	by := map[string]Process{}
	var names []string
	for i, p := range ps {
		u := unitOf(p.Unit)
		if _, dup := by[u]; dup {
			return nil, fmt.Errorf("processes[%d]: %s is declared twice", i, u)
		}
		by[u] = p
		names = append(names, u)
	}
	done, visiting := map[string]bool{}, map[string]bool{}
	var out []Process
	var visit func(u string, trail []string) error
	visit = func(u string, trail []string) error {
		if done[u] {
			return nil
		}
		if visiting[u] {
			return fmt.Errorf("processes: after forms a cycle: %s", strings.Join(append(trail, u), " -> "))
		}
		visiting[u] = true
		for _, a := range by[u].After {
			d := unitOf(fmt.Sprint(a))
			if _, ok := by[d]; !ok {
				return fmt.Errorf("processes: %s is after %s, which is not a process of this service", u, d)
			}
			if err := visit(d, append(trail, u)); err != nil {
				return err
			}
		}
		visiting[u] = false
		done[u] = true
		out = append(out, by[u])
		return nil
	}
	for _, u := range names {
		if err := visit(u, nil); err != nil {
			return nil, err
		}
	}
	if reverse {
		for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
			out[i], out[j] = out[j], out[i]
		}
	}
	return out, nil
}
