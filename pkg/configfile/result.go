package configfile

import (
	"slices"

	"github.com/richt/services/pkg/ansible"
	"github.com/richt/services/pkg/stamp"
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
	// FilesPlaced is when the new content was in place (or the file gone), in systemd's
	// clock, read right after the move: a process reloaded or started after it runs with
	// it (package contract's files_placed). Absent when the content did not move.
	FilesPlaced *stamp.Stamp `json:"files_placed,omitempty"`
}

// Result is what the run reports of the plan before it is carried out (check mode), or
// when it could not be made.
func (p Plan) Result() *Result {
	state := "present"
	if !p.Want.Present {
		state = "absent"
	}
	return &Result{Changed: p.Changed(), Name: p.Want.Name, Path: p.Want.Path, State: state,
		Plan: slices.Clone(p.Steps), Diff: p.Diff}
}
