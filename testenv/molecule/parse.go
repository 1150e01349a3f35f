package molecule

import (
	"bytes"
	"fmt"
	"io"
	"maps"
	"slices"
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
	var doc yaml.Node
	dec := yaml.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&doc); err != nil && err != io.EOF {
		return Config{}, fmt.Errorf("molecule.yml: %w", err)
	}
	root := &doc
	if doc.Kind == yaml.DocumentNode && len(doc.Content) == 1 {
		root = doc.Content[0]
	}
	c := Config{Driver: Driver{Name: "docker"}, Provisioner: Provisioner{Name: "ansible"},
		Verifier: Verifier{Name: "ansible", Directory: "tests"}, Dependency: Dependency{Name: "galaxy"}}
	err = eachField("", root, func(key, _ string, n *yaml.Node) error {
		switch key {
		case "driver":
			return c.parseDriver(n)
		case "platforms":
			return c.parsePlatforms(n)
		case "provisioner":
			return c.parseProvisioner(n)
		case "scenario":
			return c.parseScenario(n)
		case "verifier":
			return c.parseVerifier(n)
		case "dependency":
			return c.parseDependency(n)
		case "richt":
			return c.parseRicht(n)
		case "lint":
			return fmt.Errorf("lint: Molecule 6 dropped it and so does this runner; run your linters yourself")
		case "shared_state":
			return fmt.Errorf("shared_state: scenarios never share targets here (each has its own state directory)")
		case "ansible":
			return fmt.Errorf("ansible: Molecule 25's ansible-native section is not supported; use provisioner")
		case "log", "prerun", "role_name_check":
			// These change only what Molecule prints or checks before a run; nothing here
			// depends on them.
			return nil
		}
		return fmt.Errorf("%s: unknown key", key)
	})
	if err != nil {
		return Config{}, fmt.Errorf("molecule.yml: %w", err)
	}
	if len(c.Platforms) == 0 {
		return Config{}, fmt.Errorf("molecule.yml: platforms: at least one platform is needed")
	}
	if err := c.check(); err != nil {
		return Config{}, fmt.Errorf("molecule.yml: %w", err)
	}
	return c, nil
}

// fields decodes a mapping node into key → node, naming where on error.
func fields(where string, n *yaml.Node) (map[string]yaml.Node, error) {
	if n.Kind == 0 || (n.Kind == yaml.ScalarNode && n.Tag == "!!null") {
		return map[string]yaml.Node{}, nil
	}
	var m map[string]yaml.Node
	if err := n.Decode(&m); err != nil {
		if where == "" {
			return nil, fmt.Errorf("want a mapping: %w", err)
		}
		return nil, fmt.Errorf("%s: want a mapping: %w", where, err)
	}
	return m, nil
}

// eachField calls f for each key of the mapping n, in sorted order, with the key's path
// for messages (where.key); the first error stops it. Every section of molecule.yml is
// read through it, so every unknown key is refused by the same rule.
func eachField(where string, n *yaml.Node, f func(key, path string, v *yaml.Node) error) error {
	m, err := fields(where, n)
	if err != nil {
		return err
	}
	for _, k := range slices.Sorted(maps.Keys(m)) {
		v := m[k]
		path := k
		if where != "" {
			path = where + "." + k
		}
		if err := f(k, path, &v); err != nil {
			return err
		}
	}
	return nil
}

func decode(where string, n *yaml.Node, v any) error {
	if err := n.Decode(v); err != nil {
		return fmt.Errorf("%s: %w", where, err)
	}
	return nil
}

func (c *Config) parseDriver(n *yaml.Node) error {
	err := eachField("driver", n, func(k, where string, v *yaml.Node) error {
		switch k {
		case "name":
			return decode(where, v, &c.Driver.Name)
		case "options":
			// managed: true is what the docker driver means anyway; false (the user's own
			// create.yml) is not what this runner does.
			var o map[string]any
			if err := decode(where, v, &o); err != nil {
				return err
			}
			for ok, ov := range o {
				if ok != "managed" || ov != true {
					return fmt.Errorf("%s.%s: not supported (targets are created by testenv)", where, ok)
				}
			}
			return nil
		}
		return fmt.Errorf("%s: not supported", where)
	})
	if err == nil && c.Driver.Name != "docker" {
		return fmt.Errorf("driver.name %q: only docker is supported (targets are testenv's systemd containers); %q cannot be honoured", c.Driver.Name, c.Driver.Name)
	}
	return err
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
		var p Platform
		err := eachField(fmt.Sprintf("platforms[%d]", i), &list[i], func(k, where string, v *yaml.Node) error {
			switch k {
			case "name":
				return decode(where, v, &p.Name)
			case "image":
				return decode(where, v, &p.Image)
			case "groups":
				return decode(where, v, &p.Groups)
			case "env":
				return decode(where, v, &p.Env)
			}
			if !subsumedPlatformKeys[k] {
				return fmt.Errorf("%s: not supported by this runner's docker targets", where)
			}
			p.Subsumed = append(p.Subsumed, k)
			return nil
		})
		if err != nil {
			return err
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
	return eachField("provisioner", n, func(k, where string, v *yaml.Node) error {
		switch k {
		case "name":
			return decodeChoice(where, v, &c.Provisioner.Name, "ansible")
		case "env":
			return decode(where, v, &c.Provisioner.Env)
		case "config_options":
			return decode(where, v, &c.Provisioner.ConfigOptions)
		case "options":
			return decode(where, v, &c.Provisioner.Options)
		case "playbooks":
			if err := decode(where, v, &c.Provisioner.Playbooks); err != nil {
				return err
			}
			for _, a := range slices.Sorted(maps.Keys(c.Provisioner.Playbooks)) {
				if !knownActions[a] {
					return fmt.Errorf("%s.%s: not an action this runner runs", where, a)
				}
			}
			return nil
		case "inventory":
			return c.parseInventory(v)
		case "log":
			return nil
		}
		return fmt.Errorf("%s: not supported", where)
	})
}

func (c *Config) parseInventory(n *yaml.Node) error {
	return eachField("provisioner.inventory", n, func(k, where string, v *yaml.Node) error {
		switch k {
		case "host_vars":
			return decode(where, v, &c.Provisioner.HostVars)
		case "group_vars":
			return decode(where, v, &c.Provisioner.GroupVars)
		}
		// hosts and links point at inventories outside the scenario; their hosts would
		// not be targets this runner created.
		return fmt.Errorf("%s: not supported (only host_vars and group_vars)", where)
	})
}

func (c *Config) parseScenario(n *yaml.Node) error {
	s := &c.Scenario
	return eachField("scenario", n, func(k, where string, v *yaml.Node) error {
		if k == "name" {
			return decode(where, v, &s.Name)
		}
		command, isSeq := strings.CutSuffix(k, "_sequence")
		seq, ok := s.sequences()[command]
		if !isSeq || !ok {
			return fmt.Errorf("%s: not supported", where)
		}
		if err := decode(where, v, seq); err != nil {
			return err
		}
		for _, a := range *seq {
			if !knownActions[a] {
				return fmt.Errorf("%s: %q is not an action this runner runs (%s)", where, a, strings.Join(slices.Sorted(maps.Keys(knownActions)), ", "))
			}
		}
		if k == "test_sequence" {
			s.explicitTest = true
		}
		return nil
	})
}

func (c *Config) parseVerifier(n *yaml.Node) error {
	return eachField("verifier", n, func(k, where string, v *yaml.Node) error {
		switch k {
		case "name":
			return decodeChoice(where, v, &c.Verifier.Name, "ansible", "testinfra")
		case "directory":
			return decode(where, v, &c.Verifier.Directory)
		case "options":
			return decode(where, v, &c.Verifier.Options)
		case "env":
			return decode(where, v, &c.Verifier.Env)
		case "additional_files_or_dirs":
			return decode(where, v, &c.Verifier.AdditionalFilesOrDirs)
		case "enabled":
			on, err := decodeBool(where, v)
			if err == nil && !on {
				err = fmt.Errorf("%s: false is not supported; drop verify from the test_sequence instead", where)
			}
			return err
		}
		return fmt.Errorf("%s: not supported", where)
	})
}

// decodeChoice decodes a name that must be one of allowed.
func decodeChoice(where string, n *yaml.Node, dst *string, allowed ...string) error {
	if err := decode(where, n, dst); err != nil {
		return err
	}
	if slices.Contains(allowed, *dst) {
		return nil
	}
	if len(allowed) == 1 {
		return fmt.Errorf("%s %q: only %s is supported", where, *dst, allowed[0])
	}
	return fmt.Errorf("%s %q: only %s are supported", where, *dst, strings.Join(allowed, " and "))
}

func decodeBool(where string, n *yaml.Node) (bool, error) {
	var b bool
	err := decode(where, n, &b)
	return b, err
}

func (c *Config) parseDependency(n *yaml.Node) error {
	return eachField("dependency", n, func(k, where string, v *yaml.Node) error {
		switch k {
		case "name":
			if err := decode(where, v, &c.Dependency.Name); err != nil {
				return err
			}
			switch c.Dependency.Name {
			case "galaxy":
				return nil
			case "shell":
				return fmt.Errorf("%s shell: not supported (it runs a command on the host)", where)
			}
			return fmt.Errorf("%s %q: only galaxy is supported", where, c.Dependency.Name)
		case "enabled":
			on, err := decodeBool(where, v)
			if err == nil && !on {
				c.Dependency.Name = ""
			}
			return err
		}
		return fmt.Errorf("%s: not supported (collections and roles come from the local paths; nothing is downloaded)", where)
	})
}

func (c *Config) parseRicht(n *yaml.Node) error {
	return eachField("richt", n, func(k, where string, v *yaml.Node) error {
		switch k {
		case "packages":
			var pkgs []yaml.Node
			if err := decode(where, v, &pkgs); err != nil {
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
			return nil
		case "repository":
			if err := decode(where, v, &c.Richt.Repository); err != nil {
				return err
			}
			if !validHostName(c.Richt.Repository) {
				return fmt.Errorf("%s %q: not a usable repository id", where, c.Richt.Repository)
			}
			return nil
		case "upgrade":
			var u struct {
				Var    string            `yaml:"var"`
				From   any               `yaml:"from"`
				To     any               `yaml:"to"`
				Expect map[string]string `yaml:"expect"`
			}
			if err := strictDecode(where, v, &u); err != nil {
				return err
			}
			up := Upgrade(u)
			c.Richt.Upgrade = &up
			return nil
		}
		return fmt.Errorf("%s: unknown key", where)
	})
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
