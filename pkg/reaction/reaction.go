// Package reaction turns other tasks' results into the one reaction a unit needs, with
// every rule in one place: restart beats reload, many reloads are one reload, a start
// absorbs both, a unit that should be stopped ignores them, and a reaction still due from
// an earlier run that did not complete counts as if its trigger had changed again.
package reaction

import (
	"fmt"
	"sort"
	"time"

	"github.com/richt/services/pkg/contract"
	"github.com/richt/services/pkg/stamp"
)

// Kind is a reaction.
type Kind string

// Reactions, as reported in results and kept in the durable store.
const (
	None    Kind = "none"
	Reload  Kind = "reload"
	Restart Kind = "restart"
	Ignored Kind = "ignored"
	// Served: the restart the triggers asked for already happened after their change
	// (a package's scriptlet restarted the unit in the transaction).
	Served Kind = "served"
)

// Trigger is one item of restart_on or reload_on, summarised: nothing of the registered
// result it came from is kept beyond what the rules need, so nothing of it is echoed.
type Trigger struct {
	// Name is the mapping key the user gave, or "" for an unnamed trigger.
	Name string `json:"name,omitempty"`
	// Ref says where the trigger came from, such as "restart_on[1]" or "reload_on.config".
	Ref     string `json:"ref"`
	Changed bool   `json:"changed"`
	// UnitFilesChanged: the result reports a unit file change the manager has not loaded
	// (contract.Change.NeedsManagerSync).
	UnitFilesChanged bool `json:"unit_files_changed,omitempty"`
	// PackageChanged: the result reports a changed package (package_changed).
	PackageChanged bool `json:"package_changed,omitempty"`
	// PackageUnsynced: a changed package the manager was not reloaded after
	// (daemon_reload is not performed): a unit it installs is not loaded yet. A change the
	// manager was reloaded after (the service marks its steps' changes so once a process
	// step reloaded it) still counts as PackageChanged.
	PackageUnsynced bool `json:"package_unsynced,omitempty"`
	// ChangedAt is when the change was made on the target (changed_at; the latest of a
	// loop's items), zero when the result does not say.
	ChangedAt time.Time `json:"changed_at,omitzero"`
	// FilesPlaced is when every file the changed results put on the host was in place
	// (the latest of a loop's items); nil when any changed item does not say.
	FilesPlaced *stamp.Stamp `json:"files_placed,omitempty"`
	// Libraries: the item is restart_on's `libraries`: it changes when a process of the
	// unit maps a file replaced or deleted since it mapped it (package libmaps), which the
	// run observes, not a registered result.
	Libraries bool `json:"libraries,omitempty"`
	// unplaced: a changed item did not say when its files were in place.
	unplaced bool
}

// Libraries is the restart_on item that restarts a unit whose processes still map files
// that were replaced or deleted since they mapped them (a library update). Only restart_on
// takes it: a reload keeps the process, and with it every old mapping.
const Libraries = "libraries"

// WantsLibraries reports whether restart_on names libraries.
func (t Triggers) WantsLibraries() bool {
	for _, tr := range t.Restart {
		if tr.Libraries {
			return true
		}
	}
	return false
}

// LibrariesStale is t with its libraries trigger changed: a process of the unit maps a
// replaced file. It says nothing of when the files were placed (FilesPlaced nil), so a
// restart it asks for is never taken as served: the stale mapping itself proves no
// restart happened since.
func (t Triggers) LibrariesStale() Triggers {
	restart := make([]Trigger, len(t.Restart))
	for i, tr := range t.Restart {
		if tr.Libraries {
			tr.Changed = true
		}
		restart[i] = tr
	}
	t.Restart = restart
	return t
}

// Triggers are the parsed restart_on and reload_on lists, and the facts_from list.
type Triggers struct {
	Restart []Trigger
	Reload  []Trigger
	// Facts are changes that ask for no reaction but still tell what the manager must
	// load: their package and unit-file facts count (PackageChanged, UnitFilesChanged),
	// never their change (Due, RestartServed, the result's triggers). A process of a
	// service that names its reactions gets its service's changes here.
	Facts []Trigger
}

// ParseFacts reads facts_from: the same forms as restart_on, for Triggers.Facts.
func ParseFacts(items []any) ([]Trigger, error) {
	return parseList("facts_from", items)
}

// Parse reads restart_on and reload_on. Each item is a registered result (its `changed`,
// or any of its loop `results`), a boolean, or a mapping of names to either, so messages
// can name the trigger. A name in both lists is an error; unnamed triggers carry no
// identity and are not compared.
func Parse(restartOn, reloadOn []any) (Triggers, error) {
	var t Triggers
	var err error
	if t.Restart, err = parseList("restart_on", restartOn); err != nil {
		return t, err
	}
	if t.Reload, err = parseList("reload_on", reloadOn); err != nil {
		return t, err
	}
	names := map[string]bool{}
	for _, tr := range t.Restart {
		if tr.Name != "" {
			names[tr.Name] = true
		}
	}
	for _, tr := range t.Reload {
		if tr.Name != "" && names[tr.Name] {
			return t, fmt.Errorf("trigger %q is in both restart_on and reload_on; a change can cause one reaction, so name it in one list", tr.Name)
		}
	}
	return t, nil
}

func parseList(param string, items []any) ([]Trigger, error) {
	var out []Trigger
	for i, item := range items {
		ref := fmt.Sprintf("%s[%d]", param, i)
		if s, ok := item.(string); ok && s == Libraries {
			if param != "restart_on" {
				return nil, fmt.Errorf("%s: %s is a restart_on item only: a reload keeps the process and every file it maps, and only a restart maps the new ones", ref, Libraries)
			}
			out = append(out, Trigger{Name: Libraries, Ref: ref, Libraries: true})
			continue
		}
		if m, ok := item.(map[string]any); ok && !isResult(m) {
			keys := make([]string, 0, len(m))
			for k := range m {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			for _, k := range keys {
				tr, err := parseOne(ref+"."+k, m[k])
				if err != nil {
					return nil, err
				}
				tr.Name = k
				out = append(out, tr)
			}
			continue
		}
		tr, err := parseOne(ref, item)
		if err != nil {
			return nil, err
		}
		out = append(out, tr)
	}
	return out, nil
}

// Ansible's own keys of a registered result. They are not our contract between modules
// (that is package contract), but they too are named once.
const (
	keyChanged = "changed"
	keyResults = "results" // a loop's items
	keySkipped = "skipped"
	keyFailed  = "failed"
)

// isResult tells a registered task result from a mapping of names to results: every
// registered result carries at least one of these keys.
func isResult(m map[string]any) bool {
	for _, k := range []string{keyChanged, keyResults, keySkipped, keyFailed} {
		if _, ok := m[k]; ok {
			return true
		}
	}
	return false
}

func parseOne(ref string, v any) (Trigger, error) {
	tr := Trigger{Ref: ref}
	switch x := v.(type) {
	case bool:
		tr.Changed = x
		return tr, nil
	case map[string]any:
		if !isResult(x) {
			return tr, fmt.Errorf("%s: a mapping inside a named trigger must be a registered task result (with changed or results)", ref)
		}
		if loop, ok := x[keyResults].([]any); ok {
			// A loop's own result only sums up its items; what changed, and when, is in
			// the items.
			for _, it := range loop {
				if m, ok := it.(map[string]any); ok {
					readResult(&tr, m)
				}
			}
			if changed, _ := x[keyChanged].(bool); changed && !tr.Changed {
				readResult(&tr, x)
			}
		} else if _, has := x[keyResults]; has {
			return tr, fmt.Errorf("%s: results is not a list of task results", ref)
		} else {
			readResult(&tr, x)
		}
		return tr, nil
	case nil:
		return tr, fmt.Errorf("%s: is empty; pass a registered result (\"{{ result }}\") or a boolean", ref)
	}
	// Never quote the value: it may be anything, including another task's secret.
	return tr, fmt.Errorf("%s: a %s is not a trigger; pass a registered result (\"{{ result }}\"), a boolean, a mapping of names to those, or (restart_on only) %s", ref, typeName(v), Libraries)
}

// readResult adds one changed result (or loop item) to the trigger. What it changed is
// read through package contract only: a key that merely happens to exist in a result
// (such as operation) means nothing here.
func readResult(tr *Trigger, m map[string]any) {
	changed, _ := m[keyChanged].(bool)
	if !changed {
		return
	}
	tr.Changed = true
	c := contract.Read(m)
	tr.PackageChanged = tr.PackageChanged || c.PackageChanged
	tr.PackageUnsynced = tr.PackageUnsynced || c.PackageChanged && !c.DaemonReload.Reloaded()
	tr.UnitFilesChanged = tr.UnitFilesChanged || c.NeedsManagerSync()
	if at, ok := c.When(); ok && at.After(tr.ChangedAt) {
		tr.ChangedAt = at
	}
	switch {
	case tr.unplaced:
	case c.FilesPlaced == nil:
		tr.unplaced, tr.FilesPlaced = true, nil
	case tr.FilesPlaced == nil:
		tr.FilesPlaced = c.FilesPlaced
	default:
		merged := contract.Change{FilesPlaced: tr.FilesPlaced}
		merged.Placed(*c.FilesPlaced)
		tr.FilesPlaced = merged.FilesPlaced
	}
}

func typeName(v any) string {
	switch v.(type) {
	case string:
		return "string"
	case float64, int:
		return "number"
	case []any:
		return "list"
	}
	return fmt.Sprintf("%T", v)
}

// Changed returns the triggers of a list that changed.
func Changed(list []Trigger) []Trigger {
	var out []Trigger
	for _, t := range list {
		if t.Changed {
			out = append(out, t)
		}
	}
	return out
}

// UnitFilesChanged reports whether any changed trigger or fact changed a unit file.
func (t Triggers) UnitFilesChanged() bool {
	return t.any(func(tr Trigger) bool { return tr.UnitFilesChanged })
}

// PackageChanged reports whether any changed trigger or fact changed a package.
func (t Triggers) PackageChanged() bool {
	return t.any(func(tr Trigger) bool { return tr.PackageChanged })
}

// PackageUnsynced reports whether any changed trigger or fact changed a package that the
// manager was not reloaded after: a unit that package installs asks for a manager sync.
// A package change the manager was reloaded after still tells which unit a package
// installs (PackageChanged), and asks for no second sync.
func (t Triggers) PackageUnsynced() bool {
	return t.any(func(tr Trigger) bool { return tr.PackageUnsynced })
}

// LoadedBy reports whether a manager load that began at loaded (systemd's clock) has
// loaded every change the triggers and facts ask a manager sync for (UnitFilesChanged,
// PackageUnsynced): each says when its files were in place (FilesPlaced), on loaded's
// boot, before it. A package scriptlet's daemon-reload is such a load; a change that
// cannot say when (a drop-in, a loop item without files_placed) is never loaded by one.
func (t Triggers) LoadedBy(loaded stamp.Stamp) bool {
	if loaded.IsZero() {
		return false
	}
	return !t.any(func(tr Trigger) bool {
		if !tr.UnitFilesChanged && !tr.PackageUnsynced {
			return false
		}
		return tr.FilesPlaced == nil || tr.FilesPlaced.BootID != loaded.BootID || tr.FilesPlaced.Mono >= loaded.Mono
	})
}

// Placed reports whether any changed trigger or fact that asks a manager sync says when
// its files were in place: only then can a manager load tell it was loaded (LoadedBy).
func (t Triggers) Placed() bool {
	return t.any(func(tr Trigger) bool { return (tr.UnitFilesChanged || tr.PackageUnsynced) && tr.FilesPlaced != nil })
}

func (t Triggers) any(f func(Trigger) bool) bool {
	for _, list := range [][]Trigger{t.Restart, t.Reload, t.Facts} {
		for _, tr := range list {
			if tr.Changed && f(tr) {
				return true
			}
		}
	}
	return false
}

// RestartServed reports whether the restart the changed restart triggers ask for has
// already happened: every one of them says when its files were in place, and the unit,
// active now, became active after all of those moments (at activeEnterMono, systemd's
// ActiveEnterTimestampMonotonic; now is the current moment). A package whose scriptlet
// restarts its unit in the transaction (EL's %systemd_postun_with_restart) is the case;
// a trigger that cannot say when (a drop-in, a template) always restarts.
func RestartServed(t Triggers, now stamp.Stamp, activeEnterMono uint64) bool {
	changed := Changed(t.Restart)
	if len(changed) == 0 {
		return false
	}
	for _, tr := range changed {
		if tr.FilesPlaced == nil || !tr.FilesPlaced.ActiveSince(now, activeEnterMono) {
			return false
		}
	}
	return true
}

// WithoutRestarts is t with its restart triggers left out, for once their restart was
// served; the facts stay.
func (t Triggers) WithoutRestarts() Triggers { return Triggers{Reload: t.Reload, Facts: t.Facts} }

// WithoutReloads is t with its reload triggers left out, for once their reload was
// served; the facts stay.
func (t Triggers) WithoutReloads() Triggers { return Triggers{Restart: t.Restart, Facts: t.Facts} }

// Due is the reaction the triggers and a pending reaction ask for, before the unit's
// state is considered: restart beats reload, and reloads merge into one.
func Due(t Triggers, pending Kind) Kind {
	switch {
	case len(Changed(t.Restart)) > 0 || pending == Restart:
		return Restart
	case len(Changed(t.Reload)) > 0 || pending == Reload:
		return Reload
	}
	return None
}

// Stronger is the reaction that serves all of kinds: restart beats reload, reloads merge
// into one (Due's rule, for reactions already decided); any other kind counts as none.
func Stronger(kinds ...Kind) Kind {
	out := None
	for _, k := range kinds {
		switch {
		case k == Restart:
			return Restart
		case k == Reload:
			out = Reload
		}
	}
	return out
}

// Action is what to do to a unit's run state.
type Action string

// Run-state actions.
const (
	NoAction  Action = ""
	Start     Action = "start"
	Stop      Action = "stop"
	RestartIt Action = "restart"
	ReloadIt  Action = "reload"
)

// Decide picks the one run-state action from the desired state, whether the unit is
// active now, and the due reaction; it also says how the reaction was handled.
func Decide(wantRunning, active bool, due Kind) (Action, Kind) {
	switch {
	case !wantRunning:
		var a Action
		if active {
			a = Stop
		}
		if due != None {
			return a, Ignored
		}
		return a, None
	case !active:
		// A start loads the new configuration: never an extra restart or reload after it.
		return Start, None
	case due == Restart:
		return RestartIt, Restart
	case due == Reload:
		return ReloadIt, Reload
	}
	return NoAction, None
}

// Summarize describes a restart_on / reload_on value for invocation.module_args without
// any of its content: which triggers there are and whether each changed.
func Summarize(param string) func(v any) any {
	return func(v any) any {
		items, ok := v.([]any)
		if !ok {
			return "(not a list)"
		}
		list, err := parseList(param, items)
		if err != nil {
			return fmt.Sprintf("(%d item(s), not valid triggers)", len(items))
		}
		out := make([]any, 0, len(list))
		for _, t := range list {
			m := map[string]any{"ref": t.Ref, "changed": t.Changed}
			if t.Name != "" {
				m["name"] = t.Name
			}
			out = append(out, m)
		}
		return out
	}
}

// Label is how messages and results name a trigger: its name, or where it came from.
func (t Trigger) Label() string {
	if t.Name != "" {
		return t.Name
	}
	return t.Ref
}
