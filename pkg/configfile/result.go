package configfile

import (
	"slices"

	"github.com/richt/services/pkg/ansible"
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
