package rpmexact

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/richt/services/pkg/nevra"
)

// Operations, as reported in the result's `operation` (per entry for a set).
const (
	OpNone         = "none"
	OpInstallNEVRA = "install-nevra"
	OpInstallN     = "install-n"
	OpInstall      = "install" // a set mixing exact pins and unversioned installs
	OpRemove       = "remove"
)

// Entry is the requested state of one package.
type Entry struct {
	Name    string
	Version *nevra.EVRA // nil: any version
	Absent  bool
}

// Want is what a task asks for: one package (`name`) or a set (`packages`), moved
// together.
type Want struct {
	Entries []Entry
	Manager string // "dnf" or "yum"
}

// Names are the entries' names, in the task's order.
func (w Want) Names() []string {
	out := make([]string, len(w.Entries))
	for i, e := range w.Entries {
		out[i] = e.Name
	}
	return out
}

// EntryPlan is the decision for one entry.
type EntryPlan struct {
	Name      string
	Operation string
	// Expect is what the RPM database should show afterwards, for check mode's `after`.
	// A pin of an installonly package (kernel-like) keeps the other builds, which the
	// RPM database alone cannot tell: check mode predicts the common case, the real run
	// reports what happened.
	Expect []string
}

// Plan is the one decision that check mode reports and Apply carries out: at most one
// transaction that installs, upgrades and downgrades every entry that needs it, then,
// only once that succeeded, at most one that removes.
type Plan struct {
	Entries []EntryPlan
	// Install and Remove are the transactions' argv, nil when not needed.
	Install, Remove []string
}

// Changes reports whether the plan runs any transaction.
func (p Plan) Changes() bool { return p.Install != nil || p.Remove != nil }

// Commands are the plan's transactions in order.
func (p Plan) Commands() [][]string {
	var out [][]string
	for _, c := range [][]string{p.Install, p.Remove} {
		if c != nil {
			out = append(out, c)
		}
	}
	return out
}

// Decide is pure: the same request and observation always give the same plan.
func Decide(w Want, have map[string]Installed) (Plan, error) {
	var p Plan
	var pins, names, removals []string
	for _, e := range w.Entries {
		if !e.Absent {
			if err := duplicates(e.Name, have[e.Name]); err != nil {
				return Plan{}, err
			}
		}
		ep := decideEntry(e, have[e.Name])
		p.Entries = append(p.Entries, ep)
		switch ep.Operation {
		case OpInstallNEVRA:
			pins = append(pins, e.Version.NEVRA(e.Name))
		case OpInstallN:
			names = append(names, e.Name)
		case OpRemove:
			removals = append(removals, e.Name)
		}
	}
	// One transaction for everything installed: DNF 4 takes one command per run, and
	// install-nevra / install-n each restrict how a spec is read. A mix goes through
	// install, where a pin (NAME-EPOCH:VERSION-RELEASE.ARCH) can only match as a full
	// NEVRA and a bare name is tried as a name before anything else.
	switch {
	case len(names) == 0 && len(pins) > 0:
		p.Install = argv(w.Manager, OpInstallNEVRA, pins)
	case len(pins) == 0 && len(names) > 0:
		p.Install = argv(w.Manager, OpInstallN, names)
	case len(pins) > 0:
		p.Install = argv(w.Manager, OpInstall, append(pins, names...))
	}
	if len(removals) > 0 {
		p.Remove = argv(w.Manager, OpRemove, removals)
	}
	return p, nil
}

// duplicates refuses a name with more than one build of one architecture that is not
// installonly: what an interrupted rpm -U or a killed transaction leaves. Such a name is
// never converged, whatever the pin, and rpm_exact does not pick a build to remove on its
// own: DNF's duplicate removal keeps the newest, after which a pin to an older build is an
// ordinary downgrade. Removing the package (state absent) removes every build, and goes on.
func duplicates(name string, have Installed) error {
	if have.InstallOnly || len(have.NEVRAs) < 2 {
		return nil
	}
	byArch := map[string][]string{}
	for _, n := range have.NEVRAs {
		arch := n[strings.LastIndexByte(n, '.')+1:]
		byArch[arch] = append(byArch[arch], n)
	}
	for _, arch := range slices.Sorted(maps.Keys(byArch)) {
		if builds := byArch[arch]; len(builds) > 1 {
			return fmt.Errorf("%s has %d builds of %s installed (%s), which an interrupted transaction leaves; it is not kernel-like (installonly), so this is never converged. Repair: dnf remove --duplicates %s (keeps the newest build; a pin to another is then a downgrade); nothing was changed",
				name, len(builds), arch, strings.Join(builds, ", "), name)
		}
	}
	return nil
}

func argv(manager, op string, specs []string) []string {
	return append([]string{manager, "-y", op, "--"}, specs...)
}

func decideEntry(e Entry, have Installed) EntryPlan {
	none := EntryPlan{Name: e.Name, Operation: OpNone, Expect: nonNil(have.NEVRAs)}
	switch {
	case e.Absent:
		if len(have.NEVRAs) == 0 {
			return none
		}
		return EntryPlan{Name: e.Name, Operation: OpRemove, Expect: []string{}}
	case e.Version != nil:
		target := e.Version.NEVRA(e.Name)
		if slices.Contains(have.NEVRAs, target) {
			return none
		}
		return EntryPlan{Name: e.Name, Operation: OpInstallNEVRA, Expect: []string{target}}
	default:
		if len(have.NEVRAs) > 0 {
			return none
		}
		return EntryPlan{Name: e.Name, Operation: OpInstallN, Expect: []string{e.Name + "-" + anyVersion}}
	}
}

// anyVersion stands for the version DNF will choose, in check mode's predicted `after`.
const anyVersion = "(version chosen by the manager)"

// Holds reports whether the observed builds satisfy the entry, and if not, why.
func Holds(e Entry, nevras []string) error {
	switch {
	case e.Absent:
		if len(nevras) > 0 {
			return fmt.Errorf("%s is still installed (%v)", e.Name, nevras)
		}
	case e.Version != nil:
		if target := e.Version.NEVRA(e.Name); !slices.Contains(nevras, target) {
			return fmt.Errorf("expected %s installed, found %s", target, describe(nevras))
		}
	default:
		if len(nevras) == 0 {
			return fmt.Errorf("expected %s installed in any version, found none", e.Name)
		}
	}
	return nil
}

func describe(nevras []string) string {
	if len(nevras) == 0 {
		return "nothing installed"
	}
	return fmt.Sprint(nevras)
}
