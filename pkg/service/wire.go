package service

import (
	"maps"
	"slices"

	"github.com/richt/services/pkg/reaction"
	"github.com/richt/services/pkg/wiring"
)

// The one rule of which change reaches which process is package wiring's (wiring.Wire,
// by name or the default wiring). The service calls it twice, with the same parts and
// processes: before any step, with the outcomes the steps' plans predict, to derive what
// each process will owe (owes, the records ahead); and at each process's turn, with the
// outcomes the steps reported, to build the process's triggers.

// partsOf is the service's parts as the reactions name them.
func partsOf(p Params) wiring.Parts {
	var parts wiring.Parts
	for _, pk := range p.Packages {
		parts.Packages = append(parts.Packages, pk.Name)
	}
	for _, c := range p.Configs {
		parts.Configs = append(parts.Configs, c.Name)
	}
	for _, u := range p.Units {
		parts.Units = append(parts.Units, u.Unit)
	}
	for _, d := range p.Dropins {
		parts.Dropins = append(parts.Dropins, wiring.DropinPart{Unit: d.Unit, Name: d.Name, Reload: d.Reload})
	}
	return parts
}

// wiring is the process as package wiring checks it (wiring.Parts.Check).
func (p Process) wiring() wiring.Process {
	return wiring.Process{Param: p.param, Unit: p.Unit, RestartOn: p.RestartOn, ReloadOn: p.ReloadOn}
}

// running reports whether the process is to run: only a running process owes a reaction.
func (p Process) running() bool { return p.State == nil || *p.State == "running" }

// outcomes are the parts' outcomes as wiring.Wire takes them: per part, whether it
// changed and the contract.Change its step made.
type outcomes = wiring.Outcomes

// merged is every part's outcome of os, one map.
func merged(os ...outcomes) outcomes {
	out := outcomes{}
	for _, o := range os {
		maps.Copy(out, o)
	}
	return out
}

// dueFrom is the reaction each process that is to run owes for the parts' outcomes out
// (every part not in out unchanged), per unit: a restart when a restart trigger of its
// wiring changed, else a reload when a reload trigger did. Only the service's own parts
// count: the outside triggers of a process's lists are its step's business, not a change
// of this run that the service records. Pure.
func dueFrom(order []Process, parts wiring.Parts, out outcomes) map[string]reaction.Kind {
	due := map[string]reaction.Kind{}
	for _, p := range order {
		if !p.running() {
			continue
		}
		t := wiring.Wire(p.Unit, p.reactions, parts, out)
		k := reaction.None
		switch {
		case partChanged(t.Restart):
			k = reaction.Restart
		case partChanged(t.Reload):
			k = reaction.Reload
		}
		if k != reaction.None {
			u := unitOf(p.Unit)
			due[u] = reaction.Stronger(due[u], k)
		}
	}
	return due
}

// partChanged reports whether a trigger of list for one of the service's parts reports a
// change (its outcome's changed).
func partChanged(list []wiring.Trigger) bool {
	for _, t := range list {
		if t.Outcome.Changed && t.Own() {
			return true
		}
	}
	return false
}

// plannedPackages are the packages' outcomes as their plan predicts them; a plan that
// could not be made predicts nothing (the step fails before any change).
func plannedPackages(names []string, st Step) outcomes {
	out := outcomes{}
	if st == nil || planFailed(st) {
		return out
	}
	moving, known := st.Moves()
	if !known {
		moving = names
	}
	for _, n := range names {
		out[wiring.Ref{Kind: wiring.Package, Name: n}] = wiring.Outcome{Changed: st.Changes() && slices.Contains(moving, n)}
	}
	return out
}

// planned is a step's outcome as its plan predicts it: a plan that could not be made
// counts as a change, so that a real run records the reaction it may owe before anything
// (and withdraws it when the step then changes nothing).
func planned(changes, failed bool) wiring.Outcome {
	return wiring.Outcome{Changed: changes || failed}
}

// fileRef is the part a file step writes: its unit file, or its drop-in.
func fileRef(f fileStep) wiring.Ref {
	if f.name != "" {
		return wiring.Ref{Kind: wiring.Dropin, Unit: f.unit, Name: f.name}
	}
	return wiring.Ref{Kind: wiring.Unit, Unit: f.unit}
}

// configRef is the part a config is.
func configRef(name string) wiring.Ref { return wiring.Ref{Kind: wiring.Config, Name: name} }

// triggers are a process's restart_on and reload_on for its step, from the outcomes the
// steps before it reported (package wiring).
func (r *run) triggers(p Process, out outcomes) (restart, reload []any) {
	return wiring.Wire(p.Unit, p.reactions, r.parts, out).Lists()
}
