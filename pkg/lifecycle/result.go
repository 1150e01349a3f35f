package lifecycle

import (
	"fmt"
	"github.com/richt/services/pkg/systemd"

	"github.com/richt/services/pkg/ansible"
	"github.com/richt/services/pkg/contract"
	"github.com/richt/services/pkg/durable"
	"github.com/richt/services/pkg/invocation"
	"github.com/richt/services/pkg/reaction"
	"github.com/richt/services/pkg/unitfile"
)

// State is a unit's state as results report it.
type State struct {
	State         string `json:"state"`
	Enabled       *bool  `json:"enabled"`
	UnitFileState string `json:"unit_file_state"`
	LoadState     string `json:"load_state"`

	active, sub string // for messages only
	fragment    string
}

// text is the diff form: the facts a person compares, one per line.
func (s *State) text() string {
	en := "n/a (" + s.UnitFileState + ")"
	if s.Enabled != nil {
		en = fmt.Sprint(*s.Enabled)
	}
	return fmt.Sprintf("state: %s\nenabled: %s\n", s.State, en)
}

// Result is the module's return value.
type Result struct {
	Changed bool   `json:"changed"`
	Unit    string `json:"unit"`
	// Summary is what happened to the unit and why, in one line (Summary); the
	// collection's action plugin prints it at the default verbosity.
	Summary string   `json:"summary"`
	Before  *State   `json:"before,omitempty"`
	After   *State   `json:"after,omitempty"`
	Actions []string `json:"actions"`
	// Plan is every step of the plan (Plan.Names), in order: those before the run state
	// (record-pending, an enable ahead of the sync, daemon-reload) and the decision's.
	// Check mode reports the plan a real run from the same state carries out.
	Plan          []string             `json:"plan"`
	Reaction      reaction.Kind        `json:"reaction"`
	Triggers      []string             `json:"triggers"`
	Pending       string               `json:"pending_from_earlier_run,omitempty"`
	RestartServed string               `json:"restart_served,omitempty"`
	ReloadServed  string               `json:"reload_served,omitempty"`
	SyncReasons   []string             `json:"daemon_reload_reasons,omitempty"`
	SyncServed    string               `json:"daemon_reload_served,omitempty"`
	ReloadCapable *unitfile.Capability `json:"reload_capable,omitempty"`
	MainPID       int                  `json:"main_pid,omitempty"`
	Health        *HealthResult        `json:"health,omitempty"`
	Journal       []string             `json:"journal,omitempty"`
	Diff          *ansible.Diff        `json:"diff,omitempty"`
	// Libraries are the unit's processes that map replaced files, and the manager's.
	Libraries *LibrariesResult `json:"libraries,omitempty"`

	// What later tasks read (package contract): no package or unit file changes here;
	// daemon_reload is performed when this run reloaded the manager; changed_at when the
	// run changed anything.
	contract.Change
}

// HealthResult is what the health probe found.
type HealthResult struct {
	Probe    string `json:"probe"`
	Attempts int    `json:"attempts"`
	Healthy  bool   `json:"healthy"`
}

func labels(t reaction.Triggers, p *durable.Pending) []string {
	out := []string{}
	for _, tr := range reaction.Changed(t.Restart) {
		out = append(out, tr.Label())
	}
	for _, tr := range reaction.Changed(t.Reload) {
		out = append(out, tr.Label())
	}
	switch {
	case p == nil:
	case !invocation.Since(p.Since):
		out = append(out, "pending "+p.Reaction+" from an earlier run")
	case len(out) == 0:
		// Recorded by this run (the service module records ahead of its steps): not
		// "from an earlier run"; the triggers that changed name it when there are any.
		out = append(out, p.Reaction+" recorded by this run")
	}
	return out
}

func stateOf(p systemd.Props) *State {
	st := "stopped"
	if p.Running() {
		st = "running"
	}
	return &State{State: st, Enabled: p.Enabled(), UnitFileState: p.UnitFileState, LoadState: p.LoadState, active: p.ActiveState, sub: p.SubState, fragment: p.FragmentPath}
}

// loadServedNote is daemon_reload_served: why a change's unit files asked for no manager
// reload.
const loadServedNote = "the manager loaded its units after the change's unit files were all in place (a package scriptlet's daemon-reload): not reloaded again"
