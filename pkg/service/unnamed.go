package service

import (
	"github.com/richt/services/pkg/wiring"
)

// warnUnnamed warns about a changed unit file or drop-in of a process's own unit that the
// process's restart_on / reload_on do not name. A process that names its reactions reacts
// to nothing more (package wiring), so such a change (a drop-in that adds
// EnvironmentFile=, say) would pass silently: the manager loads it, the running process
// does not, and it takes effect only at some later restart. The rule chosen is a warning,
// not a refusal or an implicit restart: the user declared the lists, and a change that
// needs no reaction (a comment, an [Install] line) is theirs to judge; the warning names
// the part and what it would take. Called once the file steps have run (check mode: their
// checks), before the processes.
func (r *run) warnUnnamed() {
	for _, p := range r.order {
		if !p.running() || !p.reactions.ByName() {
			continue
		}
		named := map[string]bool{}
		t := wiring.Wire(p.Unit, p.reactions, r.parts, nil)
		for _, tr := range append(t.Restart, t.Reload...) {
			if tr.Own() {
				named[tr.Ref.String()] = true
			}
		}
		unit := unitOf(p.Unit)
		for i, f := range r.files {
			if i >= len(r.res.Files) || unitOf(f.unit) != unit {
				continue
			}
			if !r.res.Files[i].changed() {
				continue
			}
			ref := canonical(fileRef(f))
			if named[ref] {
				continue
			}
			kind := "drop-in"
			if f.name == "" {
				kind = "unit file"
			}
			r.req.Warn("%s (%s): its %s %s changed, and its restart_on and reload_on do not name it, so nothing restarts or reloads %s for it: the running process keeps the old settings until its next restart. Name %s in restart_on (or in reload_on when a reload applies the change)",
				p.param, unit, kind, ref, unit, ref)
		}
	}
}

// canonical is a reference as the wiring names it (the unit normalised).
func canonical(ref wiring.Ref) string {
	if c, err := wiring.ParseRef(ref.String()); err == nil {
		return c.String()
	}
	return ref.String()
}
