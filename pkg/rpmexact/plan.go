package rpmexact

import (
	"fmt"
	"slices"

	"github.com/richt/services/pkg/nevra"
)

// Operations, as reported in the result's `operation`.
const (
	OpNone         = "none"
	OpInstallNEVRA = "install-nevra"
	OpInstallN     = "install-n"
	OpRemove       = "remove"
)

// Want is the requested state of one package.
type Want struct {
	Name    string
	Version *nevra.EVRA // nil: any version
	Absent  bool
	Manager string // "dnf" or "yum"
}

// Plan is the one decision that check mode reports and Apply carries out.
type Plan struct {
	Operation string
	Argv      []string // nil for OpNone
	// Expect is what the RPM database should show afterwards, for check mode's `after`
	// and for verification.
	Expect []string
}

// Decide is pure: the same request and observation always give the same plan.
func Decide(w Want, have Installed) Plan {
	switch {
	case w.Absent:
		if len(have.NEVRAs) == 0 {
			return Plan{Operation: OpNone, Expect: have.NEVRAs}
		}
		return Plan{Operation: OpRemove, Argv: []string{w.Manager, "-y", OpRemove, "--", w.Name}, Expect: nil}
	case w.Version != nil:
		target := w.Version.NEVRA(w.Name)
		if slices.Contains(have.NEVRAs, target) {
			return Plan{Operation: OpNone, Expect: have.NEVRAs}
		}
		return Plan{Operation: OpInstallNEVRA, Argv: []string{w.Manager, "-y", OpInstallNEVRA, "--", target}, Expect: []string{target}}
	default:
		if len(have.NEVRAs) > 0 {
			return Plan{Operation: OpNone, Expect: have.NEVRAs}
		}
		return Plan{Operation: OpInstallN, Argv: []string{w.Manager, "-y", OpInstallN, "--", w.Name},
			Expect: []string{w.Name + "-" + anyVersion}}
	}
}

// anyVersion stands for the version DNF will choose, in check mode's predicted `after`.
const anyVersion = "(version chosen by the manager)"

// Holds reports whether the observed state satisfies the request, and if not, why.
func Holds(w Want, have Installed) error {
	switch {
	case w.Absent:
		if len(have.NEVRAs) > 0 {
			return fmt.Errorf("%s is still installed (%v)", w.Name, have.NEVRAs)
		}
	case w.Version != nil:
		if target := w.Version.NEVRA(w.Name); !slices.Contains(have.NEVRAs, target) {
			return fmt.Errorf("expected %s installed, found %s", target, describe(have.NEVRAs))
		}
	default:
		if len(have.NEVRAs) == 0 {
			return fmt.Errorf("expected %s installed in any version, found none", w.Name)
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
