package service

import (
	"fmt"
	"path"
	"slices"

	"github.com/richt/services/pkg/ansible"
	"github.com/richt/services/pkg/configfile"
	"github.com/richt/services/pkg/override"
	"github.com/richt/services/pkg/reaction"
	"github.com/richt/services/pkg/wiring"
)

// Spec is the service module's parameter contract.
func Spec() *ansible.Spec {
	fileOptions := func(dropIn bool) []ansible.Param {
		ps := []ansible.Param{
			{Name: "unit", Kind: ansible.Str, Required: true, Description: []string{`The unit the file is (or, for a drop-in, belongs to).`}},
			{Name: "content", Kind: ansible.Str, Required: true, Description: []string{`The file's content (see richt.services.unit_override).`}},
			{Name: "mode", Kind: ansible.Raw, Description: []string{`File mode, as richt.services.unit_override takes it (C("0644"), or a number); default C(0644).`}},
			{Name: "sensitive", Kind: ansible.Bool, Default: false, Description: []string{`Keep the content out of every output.`}},
		}
		if dropIn {
			ps = append(ps,
				ansible.Param{Name: "name", Kind: ansible.Str, Required: true, Description: []string{`Drop-in file name ending in C(.conf).`}},
				ansible.Param{Name: "reload", Kind: ansible.Bool, Default: false, Description: []string{`A change of this drop-in reloads the unit instead of restarting it (the unit must be reload-capable).`}},
			)
		}
		return ps
	}
	s := &ansible.Spec{
		Name: "service",
		Params: []ansible.Param{
			{Name: "name", Kind: ansible.Str, Required: true, Description: []string{`The service's name, for messages and the diff.`}},
			{Name: "state", Kind: ansible.Str, Default: "present", Choices: []string{"present", "absent"}, Description: []string{
				`C(present): packages, then configs, then unit files and drop-ins, then processes
				in order (the first that needs it reloads the manager); without processes, one
				manager reload at the end when unit files changed.`,
				`C(absent): the processes stopped and disabled (reverse order, a missing unit is
				fine), the unit files and drop-ins removed, the configs removed (exactly their
				paths), the packages removed, then one manager reload when anything was removed.`}},
			{Name: "packages", Kind: ansible.List, Elements: ansible.Dict, Description: []string{
				`The service's packages, moved in one DNF transaction (richt.services.rpm_exact with
				I(packages)). I(manager) and I(timeout) apply to the whole set: entries that give
				different values are refused.`},
				Suboptions: []ansible.Param{
					{Name: "name", Kind: ansible.Str, Required: true, Description: []string{`RPM name.`}},
					{Name: "version", Kind: ansible.Str, Description: []string{`Exact C(EPOCH:VERSION-RELEASE.ARCH); omitted means any version.`}},
					{Name: "manager", Kind: ansible.Str, Choices: []string{"dnf", "yum"}, Description: []string{`DNF 4 command, for the whole set.`}},
					{Name: "timeout", Kind: ansible.Duration, Description: []string{`The packages step's timeout, for the whole set: a number of seconds or a duration such as C(10m).`}},
				}},
			{Name: "remove_dependents", Kind: ansible.Bool, Default: false, Description: []string{
				`With C(state=absent): let the removal take installed packages that are not in
				I(packages) but require one of them (DNF removes them with what they require);
				they are named in C(removed_dependents) and a warning.`,
				`When false, such a removal is refused before anything changes, naming them
				(rpm's test removal on the installed packages finds them).`}},
			{Name: "rollback", Kind: ansible.Bool, Default: false, VersionAdded: "0.2.0", Description: []string{
				`With C(state=present): when the run changed something and then fails (a process
				fails to start, restart or reload, its health probe fails after the settle, or any
				later step fails), put back what it changed: the packages' previous builds in one
				DNF transaction (a package it installed is removed), the configs, unit files and
				drop-ins as they were (content, mode, owner; a file it created is removed), then
				each process with the reactions that brings, proved again by its probe. The task
				still fails; its message names the first failure and says whether the previous
				state is back and healthy. C(rolled_back) says what was put back.`,
				`Before any change the builds a rollback would install must be kept on the host
				(C(/var/cache/richt/rpms), root-only; a real run keeps them there from the enabled
				repositories, with the builds it installs, for the next change) or available from
				the enabled repositories; otherwise the run is refused before any change, naming
				the build (check mode too). From a repository with C(gpgcheck=1) a build is kept
				only when its signature passes DNF's check, and is installed again with that check
				on. A previous config that today's rules would not write back (a mode the group or
				others can write, a set-id bit) refuses the run before any change too. The
				previous files are kept root-only in
				C(/var/lib/richt/rollback) until the run ends; C(rollback) in the result lists what
				would be put back.`,
				`A run killed at any moment leaves that record: the next run with C(rollback=true)
				keeps its older state, moves forward again, and puts the record's state back if
				that fails, so the host ends all new or all old, never a mix. A removal
				(C(state=absent)) is not rolled back. See docs/rollback.md.`}},
			{Name: "units", Kind: ansible.List, Elements: ansible.Dict, Description: []string{
				`Owned full unit files (richt.services.unit_override), each unit once (C(foo) and
				C(foo.service) are one unit).`}, Suboptions: fileOptions(false)},
			{Name: "dropins", Kind: ansible.List, Elements: ansible.Dict, Description: []string{
				`Owned drop-ins (richt.services.unit_override), each I(unit) and I(name) once.`}, Suboptions: fileOptions(true)},
			{Name: "configs", Kind: ansible.List, Elements: ansible.Dict, Description: []string{
				`Files the service's daemons read, each I(name) and I(path) once, written after the
				packages (so a package's own directory exists) and before the unit files:
				atomically, at the path never with a looser mode or another owner than the final
				ones (root's 0600 until in place, then handed over), never through a symbolic link, and never into a missing directory (the task fails naming it;
				none is created).`,
				`Every directory above a config must be owned by root or by the config's owner,
				may be writable by group only when its group is root or, in a directory the
				config's non-root owner owns, the config's group (a root-owned config in a
				directory its group can write is refused), and must not be writable by others
				(sticky or not); any other is refused, naming it and the rule.
				So a daemon's own directory is accepted (Debian's C(/etc/redis) is
				C(redis:redis 2770)). The validator runs as root on a copy of the new content in a
				directory only root can read (under C(/run/richt/validate)), never on a file in the
				config's directory, whose writer could swap it; the file written stays root's
				(mode 0600) until it is renamed into place, only while it is still the one written
				and holds the content validated, and gets its final owner and mode only then.`,
				`With C(state=absent) exactly the declared paths are removed, nothing beside them.`,
				`A config under systemd's unit directories (such as C(/etc/systemd/system)) counts
				as a unit file change: the manager is reloaded for it. What systemd reads there it
				runs as root, so such a config gets the unit files' rule: its I(owner) is root (any
				other is refused) and every directory above it is root's and writable by neither
				group nor others.`,
				`Its diff (the previous content, unless sensitive) is returned only in diff mode.`,
				`Each config's result is in C(configs); its plan entries are in C(plan) as
				C(config NAME: STEP).`},
				Suboptions: []ansible.Param{
					{Name: "name", Kind: ansible.Str, Required: true, Description: []string{`What reactions refer to (C(config:NAME)) and messages name: 1 to 64 letters, digits, C(.), C(_) and C(-).`}},
					{Name: "path", Kind: ansible.Str, Required: true, Description: []string{`Absolute, clean path of the file.`}},
					{Name: "content", Kind: ansible.Str, Description: []string{`The file's content; required with C(state=present).`}},
					{Name: "mode", Kind: ansible.Mode, Default: "0644", Description: []string{
						`File mode, as an octal string such as C("0644") or C("0640"). A mode that lets
						group or others write, or sets the setuid, setgid or sticky bit, is refused.`}},
					{Name: "owner", Kind: ansible.Str, Description: []string{`Owner, a name or a numeric id, resolved through NSS on the target; default C(root).`}},
					{Name: "group", Kind: ansible.Str, Description: []string{`Group, a name or a numeric id, resolved through NSS on the target; default C(root).`}},
					{Name: "sensitive", Kind: ansible.Bool, Default: false, Description: []string{`Keep the content out of every output: the diff and the validator's output are withheld.`}},
					{Name: "validate", Kind: ansible.Str, Description: []string{
						`A command run on the target to check the new content before it replaces the old,
						with C(%s) for the path of the new content (as ansible.builtin.template's),
						split into words as a shell would but run without one (no variables, pipes or
						redirections).`,
						`When it fails, the task fails naming the config and the validator's output
						(withheld when sensitive), and nothing changes: not that file, not any step
						after it, no reaction. Check mode does not run it.`,
						`Without C(%s) it is a tree validator (the daemon's own checker of its whole
						configuration, such as C(nginx -t -q -c /etc/nginx/nginx.conf)): it runs
						whenever any config of the service changes in the run, before any config is
						written, with every new config of the run in place in a private mount
						namespace (the host sees none of it). When it fails, the task fails naming
						it, the configs that changed and its output (withheld when any of them is
						sensitive), and nothing is written. Check mode runs it too and fails on its
						refusal.`,
						`It runs under the config's I(timeout).`}},
					{Name: "timeout", Kind: ansible.Duration, Description: []string{
						`Deadline of this config's step: looking up its owner and group, the
						validator and the write together; a number of seconds or a positive duration
						such as C(30s) or C(5m); default C(1m).`}},
				}},
			{Name: "processes", Kind: ansible.List, Elements: ansible.Dict, Description: []string{
				`Processes (richt.services.systemd_lifecycle), in declared order unless I(after) says
				otherwise.`,
				`A process that gives neither I(restart_on) nor I(reload_on) keeps the default
				wiring: a package change or a config change restarts it; a changed unit file or
				drop-in of its unit restarts it, or reloads it when the drop-in says I(reload).`,
				`A process that gives either reacts to what they name and to nothing else.`},
				Suboptions: []ansible.Param{
					{Name: "unit", Kind: ansible.Str, Required: true, Description: []string{`Unit name.`}},
					{Name: "state", Kind: ansible.Str, Choices: []string{"running", "stopped"}, Description: []string{`Run state; default C(running).`}},
					{Name: "enabled", Kind: ansible.Bool, Description: []string{`Boot state; omitted leaves it alone.`}},
					{Name: "masked", Kind: ansible.Bool, Description: []string{`Mask state; omitted leaves it alone.`}},
					{Name: "timeout", Kind: ansible.Duration, Description: []string{`Deadline of each action and its verification: a number of seconds or a duration such as C(20s).`}},
					{Name: "settle", Kind: ansible.Raw, Description: []string{`How long the unit must stay up after a start or restart, as richt.services.systemd_lifecycle takes it.`}},
					{Name: "health", Kind: ansible.Dict, Description: []string{`A health probe (see richt.services.systemd_lifecycle).`}},
					{Name: "after", Kind: ansible.List, Elements: ansible.Str, Description: []string{`Units of this service's processes this one comes after.`}},
					{Name: "restart_on", Kind: ansible.List, Elements: ansible.Raw, Summarize: reaction.Summarize("restart_on"), Description: []string{
						`What restarts this process: references to the service's own parts,
						C(package:NAME), C(config:NAME), C(unit:UNIT) or C(dropin:UNIT/NAME), and
						registered results, booleans or mappings of names to those, as
						richt.services.systemd_lifecycle takes them (changes made by tasks outside
						the service).`,
						`A reference must name a part the service declares, and one part may not be in
						both lists: either is refused before anything is done. An empty list counts as
						not given; C([false]) reacts to nothing.`,
						`C(libraries) restarts the process when any process of its unit maps a file
						replaced or deleted since it mapped it (an updated library), as
						richt.services.systemd_lifecycle takes it; it names a reaction like any other
						item, so C([package:nginx, libraries]) keeps the package's restart. Not named,
						such processes are reported (the process's C(libraries), a warning), not
						restarted. See docs/libraries.md.`}},
					{Name: "reload_on", Kind: ansible.List, Elements: ansible.Raw, Summarize: reaction.Summarize("reload_on"), Description: []string{
						`What reloads this process; the same forms as I(restart_on). Restart beats
						reload, reloads merge, a process that had to be started gets nothing more.`,
						`The unit must be reload-capable (see richt.services.systemd_lifecycle).`}},
				}},
		},
		NoLogValues: sensitiveContents,
	}
	ansible.ParseInto(s, parse)
	return s
}

// Task is the service's request as its Spec parsed it, once: the parameters, the
// processes in the order a run takes them, and the packages' and files' steps' arguments
// as their own Specs validated and parsed them (ansible.Args), which the run plans and
// applies without validating again. A process's arguments are checked here too, but
// validated for its call when it runs: they carry the triggers of the steps before it,
// which exist only then.
type Task struct {
	Params Params
	// Order is the processes in the order the run takes them (reversed for absent).
	Order []Process
	// Packages is rpm_exact's arguments for the packages as one set (nil without any).
	Packages *ansible.Args
	// Files are unit_override's calls: every unit file, then every drop-in.
	Files []fileStep
	// Configs are the configs as configfile takes them (Absent for state=absent), checked.
	Configs []config
	// Parts are the service's parts as the processes' reactions name them (package wiring).
	Parts wiring.Parts
}

// parse checks what no table can express and returns the typed request. Every step's
// arguments are checked by its own module now, before anything runs: bad input changes
// nothing, not only in the step it belongs to.
func parse(p Params) (Task, error) {
	absent := p.State == "absent"
	shared := map[string]string{}
	for i, pk := range p.Packages {
		var limit *string
		if pk.Timeout != nil {
			s := pk.Timeout.String()
			limit = &s
		}
		for key, val := range map[string]*string{"manager": pk.Manager, "timeout": limit} {
			if val == nil {
				continue
			}
			if had, ok := shared[key]; ok && had != *val {
				return Task{}, fmt.Errorf("packages[%d]: %s %q differs from %q; the service's packages move in one transaction, so give every package the same %s", i, key, *val, had, key)
			}
			shared[key] = *val
		}
	}
	if err := duplicateFiles(p); err != nil {
		return Task{}, err
	}
	configs, err := configsOf(p, absent)
	if err != nil {
		return Task{}, err
	}
	parts := partsOf(p)
	p.Processes = slices.Clone(p.Processes)
	for i := range p.Processes {
		p.Processes[i].param = fmt.Sprintf("processes[%d]", i)
		// Before anything is done: a reference that names no part of the service, or one
		// part in both lists, could only fail once the steps before the process acted.
		if p.Processes[i].reactions, err = parts.Check(p.Processes[i].wiring()); err != nil {
			return Task{}, err
		}
	}
	order, err := Order(p.Processes, absent)
	if err != nil {
		return Task{}, err
	}
	t := Task{Params: p, Order: order, Configs: configs, Parts: parts}
	if t.Packages, err = packageArgs(p, absent); err != nil {
		return Task{}, fmt.Errorf("packages: %w", err)
	}
	if t.Files, err = fileArgs(p, absent); err != nil {
		return Task{}, err
	}
	// Each process's arguments, but for the triggers the steps before it give at its
	// turn, validated and parsed once, here (a removal's: stopped, disabled).
	calls := map[string]ansible.Args{}
	for i, proc := range p.Processes {
		a, err := processArgs(proc)
		if err == nil && absent {
			a, err = absentProcessArgs(proc)
		}
		if err != nil {
			return Task{}, fmt.Errorf("processes[%d] (%s): %w", i, unitOf(proc.Unit), err)
		}
		calls[unitOf(proc.Unit)] = a
	}
	for i := range t.Order {
		t.Order[i].call = calls[unitOf(t.Order[i].Unit)]
	}
	return t, nil
}

// duplicateFiles refuses a unit file given twice, or a drop-in (unit, name) given twice:
// both would be written on every run, the second undoing the first, and the unit
// restarted each time. Unit names are compared as the modules normalise them (foo is
// foo.service).
func duplicateFiles(p Params) error {
	seen := map[string]int{}
	for i, u := range p.Units {
		key := unitOf(u.Unit)
		if j, dup := seen[key]; dup {
			return fmt.Errorf("units[%d]: %s is already given by units[%d]; give each unit file once", i, key, j)
		}
		seen[key] = i
	}
	seen = map[string]int{}
	for i, d := range p.Dropins {
		key := unitOf(d.Unit) + "/" + d.Name
		if j, dup := seen[key]; dup {
			return fmt.Errorf("dropins[%d]: %s is already given by dropins[%d]; give each drop-in once", i, key, j)
		}
		seen[key] = i
	}
	return nil
}

// configsOf checks each config as configfile does (its path, mode and validator, each
// error naming configs[i].FIELD) and refuses a name or a path given twice, and a path that
// is an owned unit file's or drop-in's: reactions name a config by its name, and two
// declarations of one file would undo each other every run.
func configsOf(p Params, absent bool) ([]config, error) {
	var out []config
	names, paths := map[string]int{}, map[string]int{}
	owned := ownedFiles(p)
	for i, c := range p.Configs {
		if err := checkConfigName(c.Name); err != nil {
			return nil, fmt.Errorf("configs[%d].name: %w", i, err)
		}
		if j, dup := names[c.Name]; dup {
			return nil, fmt.Errorf("configs[%d].name: %q is already given by configs[%d]; give each config its own name", i, c.Name, j)
		}
		names[c.Name] = i
		if j, dup := paths[c.Path]; dup && c.Path != "" {
			return nil, fmt.Errorf("configs[%d].path: %s is already given by configs[%d]; give each file once", i, c.Path, j)
		}
		paths[c.Path] = i
		if other, dup := owned[c.Path]; dup {
			return nil, fmt.Errorf("configs[%d].path: %s is also %s; give the file once, in %s or in configs", i, c.Path, other.what, other.param)
		}
		if c.Content == nil && !absent {
			return nil, fmt.Errorf("configs[%d].content: required when the service is present", i)
		}
		cfg := configfile.Config{Name: c.Name, Path: c.Path, Mode: c.Mode, Owner: c.Owner,
			Group: c.Group, Sensitive: c.Sensitive, Validate: c.Validate, Absent: absent,
			// What systemd reads from its unit directories it runs as root: the unit
			// files' rule, not a daemon's config's (docs/security.md).
			UnitFile: inUnitDir(c.Path)}
		entry := config{index: i, limit: configTimeout}
		if c.Timeout != nil {
			entry.limit = *c.Timeout
		}
		if c.Content != nil {
			cfg.Content = *c.Content
		}
		// Checked once, here: Plan takes the validator as split now.
		var err error
		if entry.Config, err = cfg.Check(); err != nil {
			return nil, entry.named(err)
		}
		out = append(out, entry)
	}
	return out, nil
}

// maxConfigName is the longest config name: a name is a handle (config:NAME), not a
// description.
const maxConfigName = 64

// checkConfigName says what is wrong with a config's name, or nil: it is 1 to 64
// letters, digits, '.', '_' and '-', so that a plan entry (config NAME: write) and a
// reference (config:NAME) read one way only.
func checkConfigName(name string) error {
	const rule = "a config name is letters, digits, '.', '_' and '-' (1 to 64 of them)"
	switch {
	case name == "":
		return fmt.Errorf("required; reactions name a config by it (config:NAME); %s", rule)
	case len(name) > maxConfigName:
		return fmt.Errorf("%q is %d bytes long; at most %d", name, len(name), maxConfigName)
	}
	for i, r := range name {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-') {
			return fmt.Errorf("%q has %q at byte %d; %s", name, r, i, rule)
		}
	}
	return nil
}

// ownedFile is a unit file or drop-in the service owns, as a config's path would clash
// with it: the parameter that declares it and what it is.
type ownedFile struct{ param, what string }

// ownedFiles are the paths of the service's unit files and drop-ins (unit_override's:
// under override.UnitDir), each with its declaration.
func ownedFiles(p Params) map[string]ownedFile {
	out := map[string]ownedFile{}
	for i, u := range p.Units {
		unit := unitOf(u.Unit)
		out[path.Join(override.UnitDir, unit)] = ownedFile{fmt.Sprintf("units[%d]", i), fmt.Sprintf("units[%d]'s unit file (%s)", i, unit)}
	}
	for i, d := range p.Dropins {
		unit := unitOf(d.Unit)
		out[path.Join(override.UnitDir, unit+".d", d.Name)] = ownedFile{fmt.Sprintf("dropins[%d]", i), fmt.Sprintf("dropins[%d]'s drop-in (%s/%s)", i, unit, d.Name)}
	}
	return out
}
