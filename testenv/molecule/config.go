package molecule

import (
	"fmt"
	"os"
	"slices"
	"strings"
)

// Config is a scenario's molecule.yml, as far as this runner honours it. Every key it
// reads is a field here; a key Molecule knows and this runner cannot honour is refused by
// name at parse time (see [Parse]), never skipped.
type Config struct {
	Driver      Driver
	Platforms   []Platform
	Provisioner Provisioner
	Scenario    ScenarioConfig
	Verifier    Verifier
	Dependency  Dependency
	// Richt holds this runner's own keys (molecule.yml's top-level "richt"): fixture
	// packages and the upgrade-path scenario kind. Molecule itself would refuse the key.
	Richt Richt
}

// Driver is molecule.yml's driver. Only "docker" is honoured: the platforms become testenv
// targets, which are docker containers.
type Driver struct {
	Name string
}

// Platform is one instance: its inventory name, its groups and the image whose EL
// generation picks the testenv target standing in for it.
type Platform struct {
	Name   string
	Image  string
	Groups []string
	// Env are environment variables of the target's PID 1 (docker driver's "env").
	Env map[string]string
	// Subsumed lists the docker driver keys given that testenv's targets already do their
	// own way (privileged, cgroupns_mode, the cgroup volume, command: init…), so the run
	// can say it did not use them as written.
	Subsumed []string
}

// Provisioner is molecule.yml's provisioner (Ansible is the only one).
type Provisioner struct {
	Name string
	// Env are extra environment variables of every ansible-playbook run.
	Env map[string]string
	// ConfigOptions become the run's ansible.cfg: section → key → value.
	ConfigOptions map[string]map[string]any
	// Options become ansible-playbook arguments (Molecule's rule: a true flag is --KEY or
	// -KEY for one letter, a value is --KEY=VALUE; vvv: true is -vvv).
	Options map[string]any
	// Inventory's host and group variables.
	HostVars  map[string]map[string]any
	GroupVars map[string]map[string]any
	// Playbooks overrides the scenario's playbook file per action (converge: other.yml).
	Playbooks map[string]string
}

// ScenarioConfig is molecule.yml's scenario: the sequences per sub-command.
type ScenarioConfig struct {
	Name                                                 string
	TestSequence, CreateSequence, ConvergeSequence       []string
	DestroySequence, CheckSequence, SideEffectSequence   []string
	CleanupSequence, DependencySequence, PrepareSequence []string
	VerifySequence, IdempotenceSequence, SyntaxSequence  []string
	explicitTest                                         bool
}

// Verifier is molecule.yml's verifier: "ansible" (verify.yml) or "testinfra" (pytest over
// Directory's test_*.py, where Debian's python3-testinfra is installed).
type Verifier struct {
	Name string
	// Directory holds testinfra's tests, relative to the scenario (default "tests").
	Directory string
	// Options become pytest arguments, by the rule of provisioner.options.
	Options map[string]any
	// Env are extra environment variables of the pytest run.
	Env map[string]string
	// AdditionalFilesOrDirs are globs under Directory run besides its test_*.py files.
	AdditionalFilesOrDirs []string
}

// Dependency is molecule.yml's dependency. Galaxy with no requirements file is honoured
// (nothing to install); a requirements file would need the network and is refused when
// the action runs.
type Dependency struct {
	Name string
}

// Richt is the runner's own section.
type Richt struct {
	// Packages are RPM fixtures built on the host (rpmbuild, createrepo_c) and given to
	// every target as the DNF repository Repository (default "fixtures") at create.
	Packages   []FixturePackage
	Repository string
	// Upgrade makes the scenario an upgrade path: converge with Var at From, then at To,
	// and assert what the second converge did to each unit.
	Upgrade *Upgrade
}

// FixturePackage is a testenv.Package as YAML.
type FixturePackage struct {
	Name         string                 `yaml:"name"`
	Version      string                 `yaml:"version"`
	Release      string                 `yaml:"release"`
	Epoch        int                    `yaml:"epoch"`
	Files        map[string]FixtureFile `yaml:"files"`
	Requires     []string               `yaml:"requires"`
	Provides     []string               `yaml:"provides"`
	SystemdUnits []string               `yaml:"systemd_units"`
}

// FixtureFile is one file of a FixturePackage.
type FixtureFile struct {
	Content string `yaml:"content"`
	Mode    string `yaml:"mode"`
	Config  bool   `yaml:"config"`
}

// Upgrade is the upgrade-path scenario kind: the converge playbook runs with the extra
// variable Var set to From, then to To; Expect says what the second run must have done to
// each unit, exactly once: "restarted", "reloaded", "started", "stopped", or "untouched".
type Upgrade struct {
	Var    string
	From   any
	To     any
	Expect map[string]string
}

// Actions this runner knows, Molecule's names.
var knownActions = map[string]bool{
	"dependency": true, "cleanup": true, "destroy": true, "syntax": true, "create": true,
	"prepare": true, "converge": true, "idempotence": true, "side_effect": true, "verify": true,
	"check": true, "upgrade": true,
}

// ExpandEnv substitutes $VAR, ${VAR}, ${VAR:-default} (default when unset or empty) and
// ${VAR-default} (the same here: an empty variable counts as unset) in molecule.yml's text from env, as Molecule does
// before it reads the YAML; $$ is a literal $. An unset variable becomes empty.
func ExpandEnv(text string, env func(string) string) string {
	const dollar = "\x00richt-dollar\x00"
	text = strings.ReplaceAll(text, "$$", dollar)
	text = os.Expand(text, func(name string) string {
		for _, sep := range []string{":-", "-"} {
			if k, def, ok := strings.Cut(name, sep); ok {
				if v := env(k); v != "" {
					return v
				}
				return def
			}
		}
		return env(name)
	})
	return strings.ReplaceAll(text, dollar, "$")
}

// Outcomes an upgrade's Expect may name.
var upgradeOutcomes = map[string]bool{"restarted": true, "reloaded": true, "started": true, "stopped": true, "untouched": true}

// check tests what only the whole file can tell.
func (c *Config) check() error {
	for host := range c.Provisioner.HostVars {
		found := false
		for _, p := range c.Platforms {
			found = found || p.Name == host
		}
		if !found {
			return fmt.Errorf("provisioner.inventory.host_vars.%s: no platform of that name", host)
		}
	}
	if u := c.Richt.Upgrade; u != nil {
		if u.Var == "" || u.From == nil || u.To == nil {
			return fmt.Errorf("richt.upgrade: var, from and to are required")
		}
		if len(u.Expect) == 0 {
			return fmt.Errorf("richt.upgrade.expect: name at least one unit and what the upgrade must do to it")
		}
		for unit, want := range u.Expect {
			if !upgradeOutcomes[want] {
				return fmt.Errorf("richt.upgrade.expect.%s: %q, want one of restarted, reloaded, started, stopped, untouched", unit, want)
			}
		}
	}
	if c.Richt.Repository == "" {
		c.Richt.Repository = "fixtures"
	}
	return nil
}

// sequences maps each sub-command to its scenario.<command>_sequence.
func (s *ScenarioConfig) sequences() map[string]*[]string {
	return map[string]*[]string{
		"test": &s.TestSequence, "create": &s.CreateSequence, "converge": &s.ConvergeSequence,
		"destroy": &s.DestroySequence, "check": &s.CheckSequence, "side_effect": &s.SideEffectSequence,
		"cleanup": &s.CleanupSequence, "dependency": &s.DependencySequence, "prepare": &s.PrepareSequence,
		"verify": &s.VerifySequence, "idempotence": &s.IdempotenceSequence, "syntax": &s.SyntaxSequence,
	}
}

// defaultSequences are Molecule's sequences of the sub-commands that run more than their
// own action; every other sub-command runs just its action.
var defaultSequences = map[string][]string{
	"test":     {"dependency", "cleanup", "destroy", "syntax", "create", "prepare", "converge", "idempotence", "side_effect", "verify", "cleanup", "destroy"},
	"create":   {"dependency", "create", "prepare"},
	"converge": {"dependency", "create", "prepare", "converge"},
	"destroy":  {"dependency", "cleanup", "destroy"},
	"check":    {"dependency", "cleanup", "destroy", "create", "prepare", "converge", "check", "destroy"},
}

// upgradeTestSequence is an upgrade scenario's test sequence: the upgrade action (converge
// at To, with the assertion) follows the converge at From, before idempotence.
var upgradeTestSequence = []string{"dependency", "cleanup", "destroy", "syntax", "create", "prepare", "converge", "upgrade", "idempotence", "side_effect", "verify", "cleanup", "destroy"}

// Sequence returns the actions a sub-command runs, Molecule's defaults unless
// molecule.yml gives its own; nil for a sub-command this runner does not run.
func (c Config) Sequence(command string) []string {
	s := c.Scenario
	if command == "test" && !s.explicitTest && c.Richt.Upgrade != nil {
		return slices.Clone(upgradeTestSequence)
	}
	given, ok := s.sequences()[command]
	switch {
	case !ok:
		return nil
	case *given != nil:
		return *given
	case defaultSequences[command] != nil:
		return slices.Clone(defaultSequences[command])
	}
	return []string{command}
}
