package service

import (
	"os"
	"time"

	"github.com/richt/services/pkg/ansible"
	"github.com/richt/services/pkg/wiring"
)

// Params are the service module's parameters.
type Params struct {
	Name      string    `ansible:"name"`
	State     string    `ansible:"state"`
	Packages  []Package `ansible:"packages"`
	Units     []Unit    `ansible:"units"`
	Dropins   []DropIn  `ansible:"dropins"`
	Configs   []Config  `ansible:"configs"`
	Processes []Process `ansible:"processes"`
	// RemoveDependents lets a removal take installed packages outside Packages that
	// require them.
	RemoveDependents bool `ansible:"remove_dependents"`
	// Rollback: a change that fails puts the state before it back (rollback.go).
	Rollback bool `ansible:"rollback"`
}

// Package is one item of packages.
type Package struct {
	Name    string         `ansible:"name"`
	Version *string        `ansible:"version"`
	Manager *string        `ansible:"manager"`
	Timeout *time.Duration `ansible:"timeout"`
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
	Timeout *time.Duration `ansible:"timeout"`
	Settle  any            `ansible:"settle"` // passed as given ("2s", or a number of seconds)
	Health  ansible.Values `ansible:"health"` // passed as given
	After   []any          `ansible:"after"`
	// RestartOn and ReloadOn are the process's reactions as given: references to the
	// service's own parts (package:NAME, ...) and outside triggers (package wiring).
	RestartOn []any `ansible:"restart_on"`
	ReloadOn  []any `ansible:"reload_on"`
	// param is the process's parameter path (processes[1]), set by parse, for messages.
	param string
	// reactions are RestartOn and ReloadOn as parse checked them (package wiring).
	reactions wiring.Reactions
	// call is the process step's arguments as systemd_lifecycle's Spec validated and
	// parsed them, set by parse, but for its triggers (lifecycle.Task.Triggered).
	call ansible.Args
}

// Config is one item of configs: a file the service's daemons read (package configfile).
type Config struct {
	Name string `ansible:"name"`
	Path string `ansible:"path"`
	// Content is required when the service is present; nil when not given.
	Content *string `ansible:"content"`
	// Mode is the Spec's default, 0644, when not given.
	Mode      os.FileMode `ansible:"mode"`
	Owner     string      `ansible:"owner"`
	Group     string      `ansible:"group"`
	Sensitive bool        `ansible:"sensitive"`
	Validate  string      `ansible:"validate"`
	// Timeout is the config step's deadline (a Go duration); nil: configTimeout.
	Timeout *time.Duration `ansible:"timeout"`
}
