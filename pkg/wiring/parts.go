package wiring

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/richt/services/pkg/reaction"
)

// Parts is what a service declares, as the reactions can name it. Units may be given as
// the user wrote them (demo): they are compared normalised (demo.service).
type Parts struct {
	Packages []string
	Configs  []string
	// Units are the units of the owned unit files.
	Units   []string
	Dropins []DropinPart
}

// DropinPart is one declared drop-in.
type DropinPart struct {
	Unit, Name string
	// Reload: a change reloads the unit's process instead of restarting it (default
	// wiring only).
	Reload bool
}

// Process is what wiring needs of one process.
type Process struct {
	// Param is the process's parameter path, such as processes[1], for messages.
	Param string
	Unit  string
	// RestartOn and ReloadOn are the lists as the user gave them.
	RestartOn, ReloadOn []any
}

// Item is one item of restart_on or reload_on as Check read it: a reference to one of the
// service's own parts (Ref, canonical), or an outside trigger (Outside, as given).
type Item struct {
	Ref     Ref
	Outside any
}

// Own reports whether the item is a reference to one of the service's parts.
func (i Item) Own() bool { return i.Ref.Kind != "" }

// Reactions are a process's restart_on and reload_on as Check accepted them, in the order
// Wire passes them on: each list's references in the order given, then its outside
// triggers in order. Only Check makes them, so Wire cannot be given an unchecked reference;
// the zero value is a process that names none (the default wiring).
type Reactions struct {
	restart, reload []Item
}

// ByName reports whether the process names its reactions (a non-empty restart_on or
// reload_on) rather than keeping the default wiring.
func (r Reactions) ByName() bool { return len(r.restart) > 0 || len(r.reload) > 0 }

// Check refuses a process's reactions that could not be wired: a string that is not a
// reference, a reference to a part the service does not declare, one part in both lists or
// twice in one, a reference written as a YAML mapping (package: nginx), and an outside
// trigger that systemd_lifecycle would refuse. Errors start with the item's parameter path
// (processes[1].reload_on[0]). It is meant to run before the service changes anything, and
// returns the reactions read, for [Wire].
func (parts Parts) Check(p Process) (Reactions, error) {
	seen := map[Ref]string{}
	// refs and outs are each list's references and outside triggers, in order.
	var refs, outs [2][]Item
	// outside are the lists with every reference replaced by false, a trigger that
	// never fires, so that reaction.Parse checks the outside triggers at their own index.
	outside := [2][]any{}
	for li, list := range [2][]any{p.RestartOn, p.ReloadOn} {
		param := [2]string{"restart_on", "reload_on"}[li]
		for i, item := range list {
			at := fmt.Sprintf("%s[%d]", param, i)
			ref, isRef, err := parts.item(item)
			if err != nil {
				return Reactions{}, fmt.Errorf("%s.%s: %w", p.Param, at, err)
			}
			if !isRef {
				outside[li] = append(outside[li], item)
				outs[li] = append(outs[li], Item{Outside: item})
				continue
			}
			outside[li] = append(outside[li], false)
			if first, ok := seen[ref]; ok {
				if strings.HasPrefix(first, param) {
					return Reactions{}, fmt.Errorf("%s.%s: %s is named twice (also %s)", p.Param, at, ref, first)
				}
				return Reactions{}, fmt.Errorf("%s.%s: %s is in both restart_on and reload_on (also %s); a change causes one reaction, so name it in one list", p.Param, at, ref, first)
			}
			seen[ref] = at
			refs[li] = append(refs[li], Item{Ref: ref})
		}
	}
	if _, err := reaction.Parse(outside[0], outside[1]); err != nil {
		return Reactions{}, fmt.Errorf("%s: %w", p.Param, err)
	}
	return Reactions{restart: append(refs[0], outs[0]...), reload: append(refs[1], outs[1]...)}, nil
}

// item reads one list item: a reference to a declared part (isRef), or an outside trigger
// passed on as it is.
func (parts Parts) item(item any) (ref Ref, isRef bool, err error) {
	switch x := item.(type) {
	case string:
		if x == reaction.Libraries {
			// Not a part of the service: systemd_lifecycle reads it (the unit's processes'
			// mappings), and refuses it in reload_on.
			return Ref{}, false, nil
		}
		ref, err := ParseRef(x)
		if err != nil {
			return Ref{}, false, err
		}
		return ref, true, parts.declared(ref)
	case map[string]any:
		// YAML reads "- package: nginx" (with a space) as a mapping: the user meant
		// the reference, and systemd_lifecycle would refuse it only once the service
		// had acted.
		if len(x) == 1 {
			for k, v := range x {
				if s, ok := v.(string); ok && known(Kind(k)) {
					return Ref{}, false, fmt.Errorf("a mapping %s: %q; write the reference as one string, %q (YAML reads a space after the colon as a mapping)", k, s, k+":"+s)
				}
			}
		}
		// A name of an outside trigger that reads as a reference would be taken for
		// the part by every message, and in both lists refused only by
		// systemd_lifecycle, after the service acted.
		for _, k := range slices.Sorted(maps.Keys(x)) {
			if _, err := ParseRef(k); err == nil {
				return Ref{}, false, fmt.Errorf("the trigger name %q reads as a reference to a part of the service; name the outside trigger otherwise", k)
			}
		}
	}
	return Ref{}, false, nil
}

// declared refuses a reference to a part the service does not declare, listing those it
// does.
func (parts Parts) declared(ref Ref) error {
	var have []Ref
	var what string
	switch ref.Kind {
	case Package:
		for _, n := range parts.Packages {
			have = append(have, Ref{Kind: Package, Name: n})
		}
		what = "packages"
	case Config:
		for _, n := range parts.Configs {
			have = append(have, Ref{Kind: Config, Name: n})
		}
		what = "configs"
	case Unit:
		for _, u := range parts.Units {
			have = append(have, Ref{Kind: Unit, Unit: u}.canon())
		}
		what = "unit files"
	case Dropin:
		for _, d := range parts.Dropins {
			have = append(have, Ref{Kind: Dropin, Unit: d.Unit, Name: d.Name}.canon())
		}
		what = "drop-ins"
	}
	if slices.Contains(have, ref) {
		return nil
	}
	if len(have) == 0 {
		return fmt.Errorf("%s is not one of the service's %s (it declares none)", ref, what)
	}
	names := make([]string, len(have))
	for i, r := range have {
		names[i] = strings.TrimPrefix(r.String(), string(r.Kind)+":")
	}
	slices.Sort(names)
	return fmt.Errorf("%s is not one of the service's %s (declared: %s)", ref, what, strings.Join(names, ", "))
}
