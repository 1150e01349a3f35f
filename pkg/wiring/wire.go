package wiring

// Wire builds a process's restart_on and reload_on for systemd_lifecycle from its
// reactions (checked by [Parts.Check] before the service acted) and what the service's
// steps did to each part: outcomes holds, per part, its result as its step returned it,
// a registered result in systemd_lifecycle's sense (changed, and the contract keys such
// as files_placed that tell a served restart). A part whose step did not run, or that is
// missing from outcomes, counts as unchanged ({"changed": false}).
//
// By name ([Process.ByName]): one trigger per reference, in the order given, named by
// its canonical form, then the outside triggers unchanged and in order. Otherwise the
// default wiring of the package documentation, one trigger per part. An empty list is
// nil (systemd_lifecycle: not given).
//
// Wire refuses what Check refuses, so an unchecked reference cannot be wired.
func Wire(p Process, parts Parts, outcomes map[Ref]map[string]any) (restart, reload []any, err error) {
	if err := parts.Check(p); err != nil {
		return nil, nil, err
	}
	trigger := triggerOf(outcomes)
	if p.ByName() {
		wire := func(list []any) []any {
			var out []any
			for _, item := range list {
				if s, ok := item.(string); ok {
					// Check parsed every string.
					r, _ := ParseRef(s)
					out = append(out, trigger(r))
				}
			}
			for _, item := range list {
				if _, ok := item.(string); !ok {
					out = append(out, item)
				}
			}
			return out
		}
		return wire(p.RestartOn), wire(p.ReloadOn), nil
	}
	restart, reload = defaults(p.Unit, parts, trigger)
	return restart, reload, nil
}

// Facts are the changes a process plans from apart from its reactions
// (systemd_lifecycle's facts_from): the triggers the default wiring gives its unit, one
// list, whether the process names its reactions or not. So a package change (the unit it
// installs) and a changed unit file or drop-in of its unit (the manager reload) reach
// every process, and a process that names its reactions reacts to nothing more.
func Facts(p Process, parts Parts, outcomes map[Ref]map[string]any) []any {
	restart, reload := defaults(p.Unit, parts, triggerOf(outcomes))
	return append(restart, reload...)
}

// triggerOf makes a part's trigger from outcomes: {REF: its outcome}, named by the
// part's canonical reference; a part missing from outcomes counts as unchanged.
func triggerOf(outcomes map[Ref]map[string]any) func(Ref) any {
	byRef := make(map[Ref]map[string]any, len(outcomes))
	for r, out := range outcomes {
		byRef[r.canon()] = out
	}
	return func(r Ref) any {
		out := byRef[r.canon()]
		if out == nil {
			out = map[string]any{"changed": false}
		}
		return map[string]any{r.canon().String(): out}
	}
}

// defaults is the default wiring of unit, one trigger per part (made by trigger).
func defaults(unit string, parts Parts, trigger func(Ref) any) (restart, reload []any) {
	unit = normal(unit)
	for _, n := range parts.Packages {
		restart = append(restart, trigger(Ref{Kind: Package, Name: n}))
	}
	for _, n := range parts.Configs {
		restart = append(restart, trigger(Ref{Kind: Config, Name: n}))
	}
	for _, u := range parts.Units {
		if normal(u) == unit {
			restart = append(restart, trigger(Ref{Kind: Unit, Unit: u}))
		}
	}
	for _, d := range parts.Dropins {
		if normal(d.Unit) != unit {
			continue
		}
		t := trigger(Ref{Kind: Dropin, Unit: d.Unit, Name: d.Name})
		if d.Reload {
			reload = append(reload, t)
		} else {
			restart = append(restart, t)
		}
	}
	return restart, reload
}
