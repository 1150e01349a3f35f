package rpmexact

import (
	"errors"
	"fmt"
	"time"

	"github.com/richt/services/pkg/ansible"
	"github.com/richt/services/pkg/nevra"
)

// Params are rpm_exact's parameters, decoded as Spec declares them.
type Params struct {
	Name     *string       `ansible:"name"`
	Version  *string       `ansible:"version"`
	State    string        `ansible:"state"`
	Packages []Package     `ansible:"packages"` // nil when omitted
	Manager  string        `ansible:"manager"`
	Timeout  time.Duration `ansible:"timeout"`
}

// Package is one item of `packages`.
type Package struct {
	Name    string  `ansible:"name"`
	Version *string `ansible:"version"`
	State   string  `ansible:"state"`
}

// moduleName is the module's name: its Spec's, and the supervisor's argv[0].
const moduleName = "rpm_exact"

// Spec is rpm_exact's parameter contract.
func Spec() *ansible.Spec {
	s := &ansible.Spec{
		Name: moduleName,
		Params: []ansible.Param{
			{
				Name: "name", Kind: ansible.Str,
				Description: []string{
					`The RPM package NAME. Letters, digits and C(. _ + -); it must not start with C(-) or
					C(.). Globs, paths and shell characters are refused.`,
					`One of I(name) and I(packages) is required.`,
				},
			},
			{
				Name: "version", Kind: ansible.Str,
				Description: []string{
					`Exact C(EPOCH:VERSION-RELEASE.ARCH), the epoch always written (C(0:) for none), for
					example C(0:1.0-1.noarch).`,
					`Omitted means any installed version is fine.`,
					`Cannot be combined with C(state=absent), which removes every installed version.`,
					`Goes with I(name); not with I(packages).`,
				},
			},
			{
				Name: "state", Kind: ansible.Str, Default: "present", Choices: []string{"present", "absent"},
				Description: []string{
					`Whether the package should be installed or removed.`,
					`Goes with I(name); not with I(packages).`,
				},
			},
			{
				Name: "packages", Kind: ansible.List, Elements: ansible.Dict, VersionAdded: "0.2.0",
				Description: []string{
					`A set of packages moved together, each a mapping with I(name) and optionally
					I(version) and I(state), which mean what the options of the same names mean for one
					package. See the description for how the set is carried out.`,
					`Mutually exclusive with I(name), I(version) and I(state); one of I(name) and
					I(packages) is required.`,
					`Refused when empty, when a name appears twice, and when an entry has a key other
					than C(name), C(version) and C(state) or a value that is not a string.`,
					`I(manager) and I(timeout) apply to the whole set.`,
				},
				Suboptions: []ansible.Param{
					{
						Name: "name", Kind: ansible.Str, Required: true,
						Description: []string{
							`The RPM package NAME, as for I(name).`,
						},
					},
					{
						Name: "version", Kind: ansible.Str,
						Description: []string{
							`Exact C(EPOCH:VERSION-RELEASE.ARCH), as for I(version); omitted means any
							version. Cannot be combined with C(state=absent).`,
						},
					},
					{
						Name: "state", Kind: ansible.Str, Default: "present", Choices: []string{"present", "absent"},
						Description: []string{
							`Whether this package should be installed or removed.`,
						},
					},
				},
			},
			{
				Name: "manager", Kind: ansible.Str, Default: "dnf", Choices: []string{"dnf", "yum"},
				Description: []string{
					`The DNF 4 command to run. C(yum) is accepted where it is DNF 4's compatibility
					command.`,
				},
			},
			{
				Name: "timeout", Kind: ansible.Duration, Default: "10m",
				Description: []string{
					`How long the module waits, as a positive Go duration (C(30s), C(1m30s), C(10m)). One
					deadline covers waiting for an earlier transaction still under way, the DNF version
					check, in check mode DNF's C(--assumeno) answers, and waiting for this task's
					transactions to end and be checked.`,
					`It ends the module's wait, never a DNF transaction. When it passes while DNF is
					running, the task fails with C(changed=true) and C(package_changed=true) and names
					the transaction's record directory (I(transaction_log)); DNF is not stopped and
					finishes on its own, and a removal that was to follow it is not started. The next
					run of this module on the host waits for it and reports its outcome as
					I(earlier_transaction).`,
				},
			},
		},
		MutuallyExclusive: [][]string{{"name", "packages"}, {"version", "packages"}, {"state", "packages"}},
	}
	s.Parse = func(v ansible.Values) (any, error) {
		var p Params
		err := s.Decode(v, &p)
		entries, err := entriesFrom(p, err)
		if err != nil {
			return nil, err
		}
		return Task{Want: Want{Entries: entries, Manager: p.Manager, Timeout: p.Timeout}, Set: p.Packages != nil}, nil
	}
	return s
}

// Task is one validated request, as the Spec parses it for the handler.
type Task struct {
	Want Want
	// Set: the task names `packages` (its result is a SetResult), not `name`.
	Set bool
}

// entriesFrom reads `name`/`version`/`state` or `packages` into entries, validating each.
// decodeErr is what decoding the parameters reported: a malformed item of `packages` is
// reported after the items before it were checked, so the first problem in the list is
// the one reported.
func entriesFrom(p Params, decodeErr error) ([]Entry, error) {
	var bad *ansible.ItemError
	if decodeErr != nil && !errors.As(decodeErr, &bad) {
		return nil, decodeErr
	}
	if p.Packages == nil {
		if p.Name == nil {
			return nil, errors.New("one of the following is required: name, packages")
		}
		e, err := entry(*p.Name, p.Version, p.State)
		if err != nil {
			return nil, err
		}
		return []Entry{e}, nil
	}
	if len(p.Packages) == 0 && bad == nil {
		return nil, errors.New("packages: is empty; list at least one {name, version, state}")
	}
	var out []Entry
	seen := map[string]int{}
	for i, pkg := range p.Packages {
		ref := fmt.Sprintf("packages[%d]", i)
		e, err := entry(pkg.Name, pkg.Version, pkg.State)
		if err != nil {
			return nil, fmt.Errorf("%s.%w", ref, err)
		}
		if j, dup := seen[e.Name]; dup {
			return nil, fmt.Errorf("%s.name: %s is already packages[%d]; name each package once", ref, e.Name, j)
		}
		seen[e.Name] = i
		out = append(out, e)
	}
	if bad != nil {
		return nil, bad
	}
	return out, nil
}

// entry validates one package's request; its errors start with the parameter's name.
func entry(name string, version *string, state string) (Entry, error) {
	if err := nevra.ValidateName(name); err != nil {
		return Entry{}, fmt.Errorf("name: %w", err)
	}
	e := Entry{Name: name, Absent: state == "absent"}
	if version == nil {
		return e, nil
	}
	if e.Absent {
		return Entry{}, fmt.Errorf("version: cannot be combined with state=absent (absent removes every version of %s)", name)
	}
	evra, err := nevra.ParseEVRA(*version)
	if err != nil {
		return Entry{}, fmt.Errorf("version: %w", err)
	}
	e.Version = &evra
	return e, nil
}
