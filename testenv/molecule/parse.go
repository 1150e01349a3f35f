package molecule

import (
	"bytes"
	"fmt"
	"io"
	"sort"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Parse reads molecule.yml from r. Keys Molecule knows that this runner cannot honour,
// and keys nobody knows, are errors naming the key's path.
func Parse(r io.Reader) (Config, error) {
	data, err := io.ReadAll(r)
	if err != nil {
		return Config{}, fmt.Errorf("read molecule.yml: %w", err)
	}
	var root map[string]yaml.Node
	dec := yaml.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&root); err != nil && err != io.EOF {
		return Config{}, fmt.Errorf("molecule.yml: %w", err)
	}
	c := Config{Driver: Driver{Name: "docker"}, Provisioner: Provisioner{Name: "ansible"},
		Verifier: Verifier{Name: "ansible", Directory: "tests"}, Dependency: Dependency{Name: "galaxy"}}
	for _, key := range sortedKeys(root) {
		n := root[key]
		switch key {
		case "driver":
			err = c.parseDriver(&n)
		case "platforms":
			err = c.parsePlatforms(&n)
		case "provisioner":
			err = c.parseProvisioner(&n)
		case "scenario":
			err = c.parseScenario(&n)
		case "verifier":
			err = c.parseVerifier(&n)
		case "dependency":
			err = c.parseDependency(&n)
		case "richt":
			err = c.parseRicht(&n)
		case "lint":
			err = fmt.Errorf("lint: Molecule 6 dropped it and so does this runner; run your linters yourself")
		case "log", "prerun", "role_name_check", "shared_state", "ansible":
			if key == "shared_state" {
				err = fmt.Errorf("shared_state: scenarios never share targets here (each has its own state directory)")
			} else if key == "ansible" {
				err = fmt.Errorf("ansible: Molecule 25's ansible-native section is not supported; use provisioner")
			}
			// log, prerun and role_name_check change only what Molecule prints or checks
			// before a run; nothing here depends on them.
		default:
			err = fmt.Errorf("%s: unknown key", key)
		}
		if err != nil {
			return Config{}, fmt.Errorf("molecule.yml: %w", err)
		}
	}
	if len(c.Platforms) == 0 {
		return Config{}, fmt.Errorf("molecule.yml: platforms: at least one platform is needed")
	}
	if err := c.check(); err != nil {
		return Config{}, fmt.Errorf("molecule.yml: %w", err)
	}
	return c, nil
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// fields decodes a mapping node into key → node, naming where on error.
func fields(where string, n *yaml.Node) (map[string]yaml.Node, error) {
	if n.Kind == 0 || (n.Kind == yaml.ScalarNode && n.Tag == "!!null") {
		return map[string]yaml.Node{}, nil
	}
	var m map[string]yaml.Node
	if err := n.Decode(&m); err != nil {
		return nil, fmt.Errorf("%s: want a mapping: %w", where, err)
	}
	return m, nil
}

func decode(where string, n *yaml.Node, v any) error {
	if err := n.Decode(v); err != nil {
		return fmt.Errorf("%s: %w", where, err)
	}
	return nil
}

func (c *Config) parseDriver(n *yaml.Node) error {
	m, err := fields("driver", n)
	if err != nil {
		return err
	}
	for _, k := range sortedKeys(m) {
		v := m[k]
		switch k {
		case "name":
			if err := decode("driver.name", &v, &c.Driver.Name); err != nil {
				return err
			}
		case "options":
			// managed: true is what the docker driver means anyway; false (the user's own
			// create.yml) is not what this runner does.
			var o map[string]any
			if err := decode("driver.options", &v, &o); err != nil {
				return err
			}
			for ok, ov := range o {
				if ok != "managed" || ov != true {
					return fmt.Errorf("driver.options.%s: not supported (targets are created by testenv)", ok)
				}
			}
		default:
			return fmt.Errorf("driver.%s: not supported", k)
		}
	}
	if c.Driver.Name != "docker" {
		return fmt.Errorf("driver.name %q: only docker is supported (targets are testenv's systemd containers); %q cannot be honoured", c.Driver.Name, c.Driver.Name)
	}
	return nil
}

// subsumedPlatformKeys are docker driver keys Molecule's docs write for systemd
// containers; testenv's targets boot systemd their own way (docs/testenv.md), so these
// are noted, not applied.
var subsumedPlatformKeys = map[string]bool{
	"privileged": true, "cgroupns_mode": true, "volumes": true, "command": true,
	"pre_build_image": true, "tmpfs": true, "capabilities": true, "security_opts": true,
	"override_command": true, "dockerfile": false, "docker_host": false,
}

func (c *Config) parsePlatforms(n *yaml.Node) error {
	var list []yaml.Node
	if err := decode("platforms", n, &list); err != nil {
		return err
	}
	seen := map[string]bool{}
	for i := range list {
		m, err := fields(fmt.Sprintf("platforms[%d]", i), &list[i])
		if err != nil {
			return err
		}
		var p Platform
		for _, k := range sortedKeys(m) {
			v := m[k]
			where := fmt.Sprintf("platforms[%d].%s", i, k)
			switch k {
			case "name":
				err = decode(where, &v, &p.Name)
			case "image":
				err = decode(where, &v, &p.Image)
			case "groups":
				err = decode(where, &v, &p.Groups)
			case "env":
				err = decode(where, &v, &p.Env)
			default:
				if subsumedPlatformKeys[k] {
					p.Subsumed = append(p.Subsumed, k)
				} else {
					err = fmt.Errorf("%s: not supported by this runner's docker targets", where)
				}
			}
			if err != nil {
				return err
			}
		}
		if p.Name == "" {
			return fmt.Errorf("platforms[%d].name: missing", i)
		}
		if !validHostName(p.Name) {
			return fmt.Errorf("platforms[%d].name %q: not a usable inventory host name", i, p.Name)
		}
		if seen[p.Name] {
			return fmt.Errorf("platforms[%d].name %q: given twice", i, p.Name)
		}
		seen[p.Name] = true
		if p.Image == "" {
			return fmt.Errorf("platforms[%d].image: missing (it names the EL generation to stand in for)", i)
		}
		for _, g := range p.Groups {
			if !validHostName(g) || g == "all" || g == "ungrouped" {
				return fmt.Errorf("platforms[%d].groups: %q is not a usable group name", i, g)
			}
		}
		c.Platforms = append(c.Platforms, p)
	}
	return nil
}

// validHostName keeps names that are safe as inventory names, file names and labels.
func validHostName(s string) bool {
	if s == "" || len(s) > 63 {
		return false
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' || r == '.') {
			return false
		}
	}
	return s[0] != '-' && s[0] != '.'
}

func (c *Config) parseProvisioner(n *yaml.Node) error {
	m, err := fields("provisioner", n)
	if err != nil {
		return err
	}
	for _, k := range sortedKeys(m) {
		v := m[k]
		where := "provisioner." + k
		switch k {
		case "name":
			err = decode(where, &v, &c.Provisioner.Name)
			if err == nil && c.Provisioner.Name != "ansible" {
				err = fmt.Errorf("%s %q: only ansible is supported", where, c.Provisioner.Name)
			}
		case "env":
			err = decode(where, &v, &c.Provisioner.Env)
		case "config_options":
			err = decode(where, &v, &c.Provisioner.ConfigOptions)
		case "options":
			err = decode(where, &v, &c.Provisioner.Options)
		case "playbooks":
			err = decode(where, &v, &c.Provisioner.Playbooks)
			for a := range c.Provisioner.Playbooks {
				if !knownActions[a] && err == nil {
					err = fmt.Errorf("%s.%s: not an action this runner runs", where, a)
				}
			}
		case "inventory":
			err = c.parseInventory(&v)
		case "log":
		default:
			err = fmt.Errorf("%s: not supported", where)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

func (c *Config) parseInventory(n *yaml.Node) error {
	m, err := fields("provisioner.inventory", n)
	if err != nil {
		return err
	}
	for _, k := range sortedKeys(m) {
		v := m[k]
		where := "provisioner.inventory." + k
		switch k {
		case "host_vars":
			err = decode(where, &v, &c.Provisioner.HostVars)
		case "group_vars":
			err = decode(where, &v, &c.Provisioner.GroupVars)
		default:
			// hosts and links point at inventories outside the scenario; their hosts would
			// not be targets this runner created.
			err = fmt.Errorf("%s: not supported (only host_vars and group_vars)", where)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

func (c *Config) parseScenario(n *yaml.Node) error {
	m, err := fields("scenario", n)
	if err != nil {
		return err
	}
	s := &c.Scenario
	seqs := map[string]*[]string{
		"test_sequence": &s.TestSequence, "create_sequence": &s.CreateSequence,
		"converge_sequence": &s.ConvergeSequence, "destroy_sequence": &s.DestroySequence,
		"check_sequence": &s.CheckSequence, "side_effect_sequence": &s.SideEffectSequence,
		"cleanup_sequence": &s.CleanupSequence, "dependency_sequence": &s.DependencySequence,
		"prepare_sequence": &s.PrepareSequence, "verify_sequence": &s.VerifySequence,
		"idempotence_sequence": &s.IdempotenceSequence, "syntax_sequence": &s.SyntaxSequence,
	}
	for _, k := range sortedKeys(m) {
		v := m[k]
		where := "scenario." + k
		if k == "name" {
			if err := decode(where, &v, &s.Name); err != nil {
				return err
			}
			continue
		}
		seq, ok := seqs[k]
		if !ok {
			return fmt.Errorf("%s: not supported", where)
		}
		if err := decode(where, &v, seq); err != nil {
			return err
		}
		for _, a := range *seq {
			if !knownActions[a] {
				return fmt.Errorf("%s: %q is not an action this runner runs (%s)", where, a, strings.Join(sortedKeys(knownActions), ", "))
			}
		}
		if k == "test_sequence" {
			s.explicitTest = true
		}
	}
	return nil
}

func (c *Config) parseVerifier(n *yaml.Node) error {
	m, err := fields("verifier", n)
	if err != nil {
		return err
	}
	for _, k := range sortedKeys(m) {
		v := m[k]
		where := "verifier." + k
		switch k {
		case "name":
			err = decode(where, &v, &c.Verifier.Name)
			if err == nil && c.Verifier.Name != "ansible" && c.Verifier.Name != "testinfra" {
				err = fmt.Errorf("%s %q: only ansible and testinfra are supported", where, c.Verifier.Name)
			}
		case "directory":
			err = decode(where, &v, &c.Verifier.Directory)
		case "options":
			err = decode(where, &v, &c.Verifier.Options)
		case "enabled":
			var on bool
			err = decode(where, &v, &on)
			if err == nil && !on {
				err = fmt.Errorf("%s: false is not supported; drop verify from the test_sequence instead", where)
			}
		default:
			err = fmt.Errorf("%s: not supported", where)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

func (c *Config) parseDependency(n *yaml.Node) error {
	m, err := fields("dependency", n)
	if err != nil {
		return err
	}
	for _, k := range sortedKeys(m) {
		v := m[k]
		switch k {
		case "name":
			if err := decode("dependency.name", &v, &c.Dependency.Name); err != nil {
				return err
			}
			if c.Dependency.Name != "galaxy" && c.Dependency.Name != "shell" {
				return fmt.Errorf("dependency.name %q: only galaxy is supported", c.Dependency.Name)
			}
			if c.Dependency.Name == "shell" {
				return fmt.Errorf("dependency.name shell: not supported (it runs a command on the host)")
			}
		case "enabled":
			var on bool
			if err := decode("dependency.enabled", &v, &on); err != nil {
				return err
			}
			if !on {
				c.Dependency.Name = ""
			}
		default:
			return fmt.Errorf("dependency.%s: not supported (collections and roles come from the local paths; nothing is downloaded)", k)
		}
	}
	return nil
}

func (c *Config) parseRicht(n *yaml.Node) error {
	m, err := fields("richt", n)
	if err != nil {
		return err
	}
	for _, k := range sortedKeys(m) {
		v := m[k]
		where := "richt." + k
		switch k {
		case "packages":
			var pkgs []yaml.Node
			if err = decode(where, &v, &pkgs); err != nil {
				return err
			}
			for i := range pkgs {
				var p FixturePackage
				w := fmt.Sprintf("%s[%d]", where, i)
				if err := strictDecode(w, &pkgs[i], &p); err != nil {
					return err
				}
				if p.Name == "" || p.Version == "" {
					return fmt.Errorf("%s: name and version are required", w)
				}
				c.Richt.Packages = append(c.Richt.Packages, p)
			}
		case "repository":
			err = decode(where, &v, &c.Richt.Repository)
			if err == nil && !validHostName(c.Richt.Repository) {
				err = fmt.Errorf("%s %q: not a usable repository id", where, c.Richt.Repository)
			}
		case "upgrade":
			var u struct {
				Var    string            `yaml:"var"`
				From   any               `yaml:"from"`
				To     any               `yaml:"to"`
				Expect map[string]string `yaml:"expect"`
			}
			if err = strictDecode(where, &v, &u); err != nil {
				return err
			}
			up := Upgrade(u)
			c.Richt.Upgrade = &up
		default:
			err = fmt.Errorf("%s: unknown key", where)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// strictDecode decodes a node into a struct and refuses keys the struct lacks.
func strictDecode(where string, n *yaml.Node, v any) error {
	var buf bytes.Buffer
	enc := yaml.NewEncoder(&buf)
	if err := enc.Encode(n); err != nil {
		return fmt.Errorf("%s: %w", where, err)
	}
	dec := yaml.NewDecoder(&buf)
	dec.KnownFields(true)
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("%s: %w", where, err)
	}
	return nil
}
