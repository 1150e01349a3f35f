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
	byRef := make(map[Ref]map[string]any, len(outcomes))
	for r, out := range outcomes {
		byRef[r.canon()] = out
	}
	trigger := func(r Ref) any {
		out := byRef[r.canon()]
		if out == nil {
			out = map[string]any{"changed": false}
		}
		return map[string]any{r.canon().String(): out}
	}
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
	unit := normal(p.Unit)
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
	return restart, reload, nil
}
