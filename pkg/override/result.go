package override

import (
	"slices"

	"github.com/richt/services/pkg/ansible"
	"github.com/richt/services/pkg/contract"
	"github.com/richt/services/pkg/unitfile"
)

// Result is the module's return value.
type Result struct {
	Changed       bool                 `json:"changed"`
	Unit          string               `json:"unit"`
	Path          string               `json:"path"`
	State         string               `json:"state"`
	Operation     string               `json:"operation"`
	ReloadCapable *unitfile.Capability `json:"reload_capable"`
	Diff          *ansible.Diff        `json:"diff,omitempty"`
	// Plan is the steps Decide chose, in order: carried out in a real run, only reported
	// in check mode (the same steps either way).
	Plan []Step `json:"plan"`

	// package_changed, unit_files_changed, daemon_reload, changed_at: what later tasks
	// read (package contract).
	contract.Change

	// warnings are the run's warnings, in order (Warnings).
	warnings []string
}

// Warnings are what the run warns of: an owner who can write the file, a reload
// capability that could not be determined.
func (r *Result) Warnings() []string { return slices.Clone(r.warnings) }

// Operations, as reported in `operation`.
const (
	OpNone       = "none"
	OpCreate     = "create"
	OpUpdate     = "update"
	OpAttributes = "attributes"
	OpRemove     = "remove"
)
