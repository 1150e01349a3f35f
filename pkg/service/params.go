package service

import ()

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
