package configfile

import (
	"slices"

	"github.com/richt/services/pkg/ansible"
	"github.com/richt/services/pkg/contract"
)

// Result is what a run reports of one config.
type Result struct {
	Changed bool   `json:"changed"`
	Name    string `json:"name,omitempty"`
	Path    string `json:"path"`
	State   string `json:"state"`
	// Plan is the steps, in order: carried out in a real run, only reported in check mode.
	Plan []Step        `json:"plan"`
	Diff *ansible.Diff `json:"diff,omitempty"`
	// Change is what a later task reads of the change (package contract): for a config
	// under systemd's unit directories (Config.UnitFile) whose content moved (written or
	// removed; not an owner or mode change), unit_files_changed and daemon_reload needed,
	// as unit_override says with daemon_reload: false; files_placed is when the new
	// content was in place (or the file gone), in systemd's clock, read right after the
	// move, absent when the content did not move. In check mode the plan's prediction.
	contract.Change

	// unitFile is Want.UnitFile, for the contract (Reset).
	unitFile bool
}

// Result is what the run reports of the plan before it is carried out (check mode), or
// when it could not be made.
func (p Plan) Result() *Result {
	state := "present"
	if !p.Want.Present {
		state = "absent"
	}
	r := &Result{Name: p.Want.Name, Path: p.Want.Path, State: state, Diff: p.Diff, unitFile: p.Want.UnitFile}
	r.Reset(p.Changed(), slices.Clone(p.Steps))
	return r
}

// Reset sets what the result says was done (or, in check mode, would be): changed and
// the steps, and with them the contract's unit file change. A caller that reports
// something else than the plan's own result (a plan that could not be made: nothing; a
// config predicted written) says it through Reset.
func (r *Result) Reset(changed bool, steps []Step) {
	r.Changed, r.Plan = changed, steps
	r.UnitFilesChanged, r.DaemonReload = false, ""
	if r.unitFile && changed && MovesContent(steps) {
		r.UnitFilesChanged, r.DaemonReload = true, contract.ReloadNeeded
	}
}

// MovesContent reports whether steps replace or remove the file's content (not only its
// owner or mode): what a manager reload is for, when the file is a unit file.
func MovesContent(steps []Step) bool {
	return slices.Contains(steps, StepWrite) || slices.Contains(steps, StepRemove)
}
