package service

import (
	"fmt"

	"github.com/richt/services/pkg/ansible"
	"github.com/richt/services/pkg/lifecycle"
	"github.com/richt/services/pkg/override"
	"github.com/richt/services/pkg/rpmexact"
	"github.com/richt/services/pkg/unitname"
)

// The steps' arguments, in the types the service checked its own in: each step's Spec
// validates and parses them once, when the service parses its request
// (ansible.Spec.ArgsOf), and the run plans and applies from that.

// packagesCall is rpm_exact's arguments for the service's packages as one set.
type packagesCall struct {
	Packages []packageCall `ansible:"packages"`
	Manager  *string       `ansible:"manager"`
	Timeout  *string       `ansible:"timeout"`
}

type packageCall struct {
	Name    string  `ansible:"name"`
	Version *string `ansible:"version"`
	State   *string `ansible:"state"`
}

// packageArgs is rpm_exact's arguments for the service's packages as one set, validated
// and parsed, or nil when there are none. Manager and timeout apply to the whole set
// (parse refused disagreement).
func packageArgs(p Params, absent bool) (*ansible.Args, error) {
	if len(p.Packages) == 0 {
		return nil, nil
	}
	var call packagesCall
	for _, p := range p.Packages {
		e := packageCall{Name: p.Name}
		switch {
		case absent:
			e.State = ptr("absent")
		case p.Version != nil:
			e.Version = p.Version
		}
		call.Packages = append(call.Packages, e)
		if p.Manager != nil {
			call.Manager = p.Manager
		}
		if p.Timeout != nil {
			call.Timeout = ptr(p.Timeout.String())
		}
	}
	a, err := rpmexact.Spec().ArgsOf(call)
	if err != nil {
		return nil, err
	}
	return &a, nil
}

// fileCall is unit_override's arguments for one unit file or drop-in: written without a
// manager reload of its own (the first process that needs one does it).
type fileCall struct {
	Unit         string  `ansible:"unit"`
	Name         *string `ansible:"name"`
	DaemonReload bool    `ansible:"daemon_reload"`
	// Sensitive also for a removal: the diff would show the content on the host.
	Sensitive bool    `ansible:"sensitive"`
	State     *string `ansible:"state"`
	Content   *string `ansible:"content"`
	Mode      any     `ansible:"mode"`
}

type fileStep struct {
	unit string
	// name is the drop-in's name; "" for a unit file.
	name      string
	sensitive bool
	// given is the unit as the task gave it (its result's item).
	given string
	// call is the step's arguments as unit_override's Spec validated and parsed them.
	call ansible.Args
}

func fileLabel(f fileStep) string {
	if f.name != "" {
		return f.unit + "/" + f.name
	}
	return f.unit
}

// fileArgs is unit_override's calls for every unit file, then every drop-in.
func fileArgs(p Params, absent bool) ([]fileStep, error) {
	var out []fileStep
	add := func(unit, name, content string, mode any, sensitive bool) error {
		call := fileCall{Unit: unit, Sensitive: sensitive}
		if name != "" {
			call.Name = &name
		}
		if absent {
			call.State = ptr("absent")
		} else {
			call.Content, call.Mode = &content, mode
		}
		f := fileStep{unit: unitOf(unit), name: name, sensitive: sensitive, given: unit}
		var err error
		if f.call, err = override.Spec().ArgsOf(call); err != nil {
			return fmt.Errorf("%s: %w", fileLabel(f), err)
		}
		out = append(out, f)
		return nil
	}
	for _, f := range p.Units {
		if err := add(f.Unit, "", f.Content, f.Mode, f.Sensitive); err != nil {
			return nil, err
		}
	}
	for _, f := range p.Dropins {
		if err := add(f.Unit, f.Name, f.Content, f.Mode, f.Sensitive); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// processCall is systemd_lifecycle's arguments for a process, but for its triggers
// (restart_on, reload_on, facts_from), which the steps before it give at its turn
// (lifecycle.Task.Triggered).
type processCall struct {
	Unit         string  `ansible:"unit"`
	State        *string `ansible:"state"`
	Enabled      *bool   `ansible:"enabled"`
	Masked       *bool   `ansible:"masked"`
	Timeout      *string `ansible:"timeout"`
	Settle       any     `ansible:"settle"`
	Health       any     `ansible:"health"`
	AllowMissing *bool   `ansible:"allow_missing"`
}

// processArgs is the process's arguments as the service gives them (present), validated
// and parsed.
func processArgs(p Process) (ansible.Args, error) {
	call := processCall{Unit: p.Unit, State: p.State, Enabled: p.Enabled, Masked: p.Masked, Settle: p.Settle, Health: p.Health}
	if p.Timeout != nil {
		call.Timeout = ptr(p.Timeout.String())
	}
	return lifecycle.Spec().ArgsOf(call)
}

// absentProcessArgs is systemd_lifecycle's arguments for a process of a removal:
// stopped, disabled, a missing unit fine.
func absentProcessArgs(p Process) (ansible.Args, error) {
	call := processCall{Unit: p.Unit, State: ptr("stopped"), Enabled: ptr(false), AllowMissing: ptr(true)}
	if p.Timeout != nil {
		call.Timeout = ptr(p.Timeout.String())
	}
	return lifecycle.Spec().ArgsOf(call)
}

func ptr[T any](v T) *T { return &v }

// unitOf normalises a unit name as the modules do (no suffix: .service).
func unitOf(u string) string {
	n, err := unitname.Normalize(u)
	if err != nil {
		return u
	}
	return n
}
