package rpmexact

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/richt/services/pkg/durable"
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
	// Timeout is the task's timeout, which messages name; no decision depends on it.
	Timeout time.Duration
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
	// Before is what the RPM database showed for the name.
	Before []string
}

// Plan is the one decision that check mode reports and Apply carries out: at most one
// transaction that installs, upgrades and downgrades every entry that needs it, then,
// only once that succeeded, at most one that removes. Decide fills the decision;
// Deps.Plan adds the facts it read (the observation, the unit files the transactions
// change, the manager's version).
type Plan struct {
	// Want is the request the plan answers.
	Want    Want
	Entries []EntryPlan
	// Install and Remove are the transactions' argv, nil when not needed.
	Install, Remove []string

	// Observed says where the installed builds were read from (ObservedQuery,
	// ObservedMemo); empty when they could not be read.
	Observed string
	// UnitFiles are the files in systemd's unit directories that the installed builds the
	// transactions replace or remove own (UnitFilesAmong): the transaction replaces or
	// removes them, so it changes unit files and leaves a manager reload due.
	UnitFiles []string
	// UnitFilesUnread says why those builds' files could not be listed; a change of unit
	// files is then not ruled out and is planned.
	UnitFilesUnread string
	// ManagerVersion is MANAGER's version, checked before any transaction.
	ManagerVersion string

	observed observation
	// managerFresh is the manager's identity when its check ran in this plan and Apply
	// is to remember it; "" otherwise.
	managerFresh string
}

// StepRecordReload names, in the reported plan, the manager reload a transaction that
// changes unit files leaves due: recorded on the target for a later systemd_lifecycle
// task (rpm_exact never reloads). It is the one record every module writes, under its
// one name (durable.StepRecordReload).
const StepRecordReload = durable.StepRecordReload

// UnitFilesChange reports whether the plan's transactions change unit files, as far as the
// installed RPM database tells (UnitFilesAmong).
func (p Plan) UnitFilesChange() bool {
	return p.Changes() && (len(p.UnitFiles) > 0 || p.UnitFilesUnread != "")
}

// Names is the plan as the result's `plan` reports it, in the order Apply carries it out:
// each transaction as its operation and package specs, then StepRecordReload when the
// transactions change unit files. Check mode reports the same list.
func (p Plan) Names() []string {
	out := []string{}
	for _, c := range p.Commands() {
		out = append(out, strings.Join(append([]string{c[2]}, c[4:]...), " "))
	}
	if p.UnitFilesChange() {
		out = append(out, StepRecordReload)
	}
	return out
}

// Replaced are the requested names whose installed builds the transactions replace or
// remove: an entry that moves while some build is installed.
func (p Plan) Replaced() []string {
	var out []string
	for _, e := range p.Entries {
		if e.Operation != OpNone && len(e.Before) > 0 {
			out = append(out, e.Name)
		}
	}
	return out
}

// UnitFilesAmong are the files of owned that lie in systemd's unit directories as a
// transaction's snapshots see them: an entry of a unit directory, or of one of its
// subdirectories (NAME.service.d/, *.wants/). A transaction that replaces or removes the
// build owning such a file changes an entry the snapshots compare (rpm puts the new
// build's files in place of the old ones, and erases a removed build's files), so the
// decision is made from the installed RPM database alone, in check mode and in the real
// run alike.
//
// Its limits: what the installed database cannot show. A package that is not installed
// yet (install-n, or a pin of an absent name), a new build that ships a unit file its
// predecessor did not, and packages DNF moves without being asked (dependents of a pin)
// are not planned as unit-file changes; the real run still reports and records them
// (unit_files_changed from the snapshots), and systemd_lifecycle reloads for a unit it
// cannot find after a package change. The other way round, a file rpm leaves exactly as
// it was (same content, mode and time in both builds) is planned as a change the real run
// does not see: a spare reload, which is harmless.
func UnitFilesAmong(owned []string) []string {
	var out []string
	for _, f := range owned {
		for _, dir := range unitDirs {
			rel, ok := strings.CutPrefix(f, dir)
			if ok && rel != "" && strings.Count(strings.TrimSuffix(rel, "/"), "/") <= 1 {
				out = append(out, f)
				break
			}
		}
	}
	return out
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
	p := Plan{Want: w}
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
	ep := decideOp(e, have)
	ep.Before = nonNil(have.NEVRAs)
	return ep
}

func decideOp(e Entry, have Installed) EntryPlan {
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
