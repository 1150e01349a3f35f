package wiring

// Trigger is one trigger Wire built: for one of the service's parts (Own), its Outcome
// as outcomes had it (unchanged when missing), named by its canonical Ref; for an
// outside trigger, Outside as the user gave it.
type Trigger struct {
	Item
	Outcome Outcome
}

// Value is the trigger as systemd_lifecycle takes it: {REF: outcome} for a part, the
// outside trigger unchanged.
func (t Trigger) Value() any {
	if !t.Own() {
		return t.Outside
	}
	return map[string]any{t.Ref.String(): t.Outcome.Registered()}
}

// Triggers are a process's wired restart_on and reload_on, each in order.
type Triggers struct {
	Restart, Reload []Trigger
}

// Lists are the triggers as systemd_lifecycle takes them; an empty list is nil
// (systemd_lifecycle: not given).
func (t Triggers) Lists() (restart, reload []any) {
	return values(t.Restart), values(t.Reload)
}

func values(ts []Trigger) []any {
	var out []any
	for _, t := range ts {
		out = append(out, t.Value())
	}
	return out
}

// Wire builds the triggers of unit's process from its reactions (as [Parts.Check] read
// them before the service acted) and what the service's steps did to each part: outcomes
// holds, per part, whether it changed and the contract.Change its step made (such as
// files_placed, which tells a served restart). A part whose step did not run, or that is
// missing from outcomes, counts as unchanged.
//
// By name ([Reactions.ByName]): one trigger per reference, in the order given, named by
// its canonical form, then the outside triggers unchanged and in order. Otherwise the
// default wiring of the package documentation, one trigger per part.
func Wire(unit string, r Reactions, parts Parts, outcomes Outcomes) Triggers {
	trigger := triggerOf(outcomes)
	if r.ByName() {
		wire := func(items []Item) []Trigger {
			var out []Trigger
			for _, it := range items {
				if it.Own() {
					out = append(out, trigger(it.Ref))
				} else {
					out = append(out, Trigger{Item: it})
				}
			}
			return out
		}
		return Triggers{Restart: wire(r.restart), Reload: wire(r.reload)}
	}
	return defaults(unit, parts, trigger)
}

// Facts are the changes a process plans from apart from its reactions
// (systemd_lifecycle's facts_from): the triggers the default wiring gives its unit, one
// list, whether the process names its reactions or not. So a package change (the unit it
// installs) and a changed unit file or drop-in of its unit (the manager reload) reach
// every process, and a process that names its reactions reacts to nothing more.
func Facts(unit string, parts Parts, outcomes Outcomes) []any {
	restart, reload := defaults(unit, parts, triggerOf(outcomes)).Lists()
	return append(restart, reload...)
}

// triggerOf makes a part's trigger from outcomes, named by the part's canonical
// reference; a part missing from outcomes counts as unchanged.
func triggerOf(outcomes Outcomes) func(Ref) Trigger {
	byRef := make(Outcomes, len(outcomes))
	for r, out := range outcomes {
		byRef[r.canon()] = out
	}
	return func(r Ref) Trigger {
		r = r.canon()
		return Trigger{Item: Item{Ref: r}, Outcome: byRef[r]}
	}
}

// defaults is the default wiring of unit, one trigger per part (made by trigger).
func defaults(unit string, parts Parts, trigger func(Ref) Trigger) Triggers {
	var t Triggers
	unit = normal(unit)
	for _, n := range parts.Packages {
		t.Restart = append(t.Restart, trigger(Ref{Kind: Package, Name: n}))
	}
	for _, n := range parts.Configs {
		t.Restart = append(t.Restart, trigger(Ref{Kind: Config, Name: n}))
	}
	for _, u := range parts.Units {
		if normal(u) == unit {
			t.Restart = append(t.Restart, trigger(Ref{Kind: Unit, Unit: u}))
		}
	}
	for _, d := range parts.Dropins {
		if normal(d.Unit) != unit {
			continue
		}
		tr := trigger(Ref{Kind: Dropin, Unit: d.Unit, Name: d.Name})
		if d.Reload {
			t.Reload = append(t.Reload, tr)
		} else {
			t.Restart = append(t.Restart, tr)
		}
	}
	return t
}
