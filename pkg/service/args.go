package service

import (
	"github.com/richt/services/pkg/ansible"
	"github.com/richt/services/pkg/unitname"
)

// packageArgs is rpm_exact's arguments for the service's packages as one set, or nil when
// there are none. Manager and timeout apply to the whole set (Check refused disagreement).
func packageArgs(p Params, absent bool) map[string]any {
	if len(p.Packages) == 0 {
		return nil
	}
	var entries []any
	args := map[string]any{}
	for _, p := range p.Packages {
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
			args["timeout"] = p.Timeout.String()
		}
	}
	args["packages"] = entries
	return args
}

type fileStep struct {
	unit string
	// name is the drop-in's name; "" for a unit file.
	name      string
	sensitive bool
	args      map[string]any
	// call is args as unit_override's Spec validated and parsed them (parse).
	call ansible.Args
	item map[string]any
}

func fileLabel(f fileStep) string {
	if f.name != "" {
		return f.unit + "/" + f.name
	}
	return f.unit
}

// fileArgs is unit_override's arguments for every unit file, then every drop-in: written
// without a manager reload of their own (the first process that needs one does it).
func fileArgs(p Params, absent bool) []fileStep {
	var out []fileStep
	add := func(unit, name, content string, mode any, sensitive bool) {
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
		out = append(out, fileStep{unit: unitOf(unit), name: name, sensitive: sensitive, args: args, item: item})
	}
	for _, f := range p.Units {
		add(f.Unit, "", f.Content, f.Mode, f.Sensitive)
	}
	for _, f := range p.Dropins {
		add(f.Unit, f.Name, f.Content, f.Mode, f.Sensitive)
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
		args["timeout"] = p.Timeout.String()
	}
	if p.Settle != nil {
		args["settle"] = p.Settle
	}
	if p.Health != nil {
		args["health"] = p.Health
	}
	return args
}

// unitOf normalises a unit name as the modules do (no suffix: .service).
func unitOf(u string) string {
	n, err := unitname.Normalize(u)
	if err != nil {
		return u
	}
	return n
}
