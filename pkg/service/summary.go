package service

import (
	"fmt"
	"regexp"
	"strings"
)

// summary is what the run did, one line per part a person asks about: the packages that
// moved ("packages: demo 1.0-1 → 2.0-1"), each process as its step's own summary says
// ("demo.service: restart (package:demo 1.0-1 → 2.0-1)", "demo.service: nothing
// (converged)"), a reload of the manager the service did itself, and the rollback. The
// collection's action plugin prints these lines at the default verbosity. Built from the
// steps' results after the run, so it says what happened (check mode: what would).
func (r *run) summary() []string {
	would := ""
	if r.req.CheckMode {
		would = "would "
	}
	out := []string{}
	moves := packageMoves(r.res.Packages)
	if len(moves) > 0 {
		var parts []string
		for _, m := range moves {
			parts = append(parts, m.String())
		}
		verb := ""
		if would != "" {
			verb = "would change "
		}
		out = append(out, "packages: "+verb+strings.Join(parts, ", "))
	}
	for _, p := range r.res.Processes {
		line, unit := p.summary()
		if line == "" {
			line = unit + ": failed before any change"
		}
		out = append(out, withVersions(line, moves))
	}
	if r.res.ManagerReload != "" {
		out = append(out, "systemd: "+would+"daemon-reload (unit files changed, no process step reloads the manager)")
	}
	if rb := r.res.Rollback; rb != nil && r.res.RolledBack == nil {
		saved := "saved"
		if would != "" {
			saved = "would be saved"
		}
		out = append(out, fmt.Sprintf("rollback: %d package(s) and %d file(s) %s, to put back if the change fails", len(rb.Packages), len(rb.Files), saved))
	}
	if done := r.res.RolledBack; done != nil {
		if done.Failed != "" {
			out = append(out, "rollback: failed at "+done.Failed+"; the previous state is NOT back")
		} else {
			out = append(out, "rollback: the change failed and was rolled back: "+done.summary())
		}
	}
	return out
}

// move is one package whose installed build changes.
type move struct{ name, before, after string }

func (m move) String() string { return fmt.Sprintf("%s %s → %s", m.name, m.before, m.after) }

// packageMoves reads the packages step's result (rpm_exact's, a set: `packages`) for the
// entries whose installed builds change.
func packageMoves(res *stepResult) []move {
	var out []move
	for _, e := range packageEntries(res) {
		name := e.name
		before, after := builds(name, e.before), builds(name, e.after)
		if name == "" || before == after {
			continue
		}
		out = append(out, move{name: name, before: before, after: after})
	}
	return out
}

// builds is a package's installed builds as a person names them: VERSION-RELEASE, the
// epoch only when it is not 0 and the architecture only when two builds differ in it;
// "absent" for none.
func builds(name string, nevras []string) string {
	if len(nevras) == 0 {
		return "absent"
	}
	short := make([]string, len(nevras))
	for i, n := range nevras {
		s := strings.TrimPrefix(n, name+"-")
		s = strings.TrimPrefix(s, "0:")
		if dot := strings.LastIndexByte(s, '.'); dot > 0 && len(nevras) == 1 {
			s = s[:dot]
		}
		short[i] = s
	}
	return strings.Join(short, "+")
}

var packageRef = regexp.MustCompile(`package:[A-Za-z0-9._+-]+`)

// withVersions names, in a process's summary, each package trigger with the move it made.
func withVersions(line string, moves []move) string {
	if len(moves) == 0 {
		return line
	}
	return packageRef.ReplaceAllStringFunc(line, func(ref string) string {
		for _, m := range moves {
			if ref == "package:"+m.name {
				return fmt.Sprintf("%s %s → %s", ref, m.before, m.after)
			}
		}
		return ref
	})
}
