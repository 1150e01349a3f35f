package ee

import (
	"fmt"
	"os"
	"regexp"
	"slices"
	"sort"
	"strings"

	yaml "go.yaml.in/yaml/v3"
)

// Requirements is what execution-environment.yml asks of the image, in Debian's terms.
type Requirements struct {
	// Packages are the Debian packages to install, sorted.
	Packages []string
	// Constraints are version specifiers (PEP 440 style, as the definition writes them)
	// by Debian package: the built image's package versions must satisfy them.
	Constraints map[string]string
	// Collections are the collections the definition installs (namespace.name); the image
	// installs each from the collection's own tarball.
	Collections []string
}

// debianDependency is how one of ansible-builder's dependency entries is met from Debian's
// archive: pip is the PyPI name the definition must name (empty: not a pip entry), deb the
// Debian package that provides it.
type debianDependency struct{ pip, deb string }

// debian is the one table between execution-environment.yml and Debian's archive. A
// dependency the definition gains that is not here fails the image build (ReadDefinition),
// so the definition and the image cannot drift apart silently. system entries need no
// row: they are bindep lines, and those for platform:dpkg name Debian packages themselves.
var debian = map[string]debianDependency{
	"python_interpreter": {deb: "python3"},
	"ansible_core":       {pip: "ansible-core", deb: "ansible-core"},
	"ansible_runner":     {pip: "ansible-runner", deb: "python3-ansible-runner"},
}

// required are the dependencies ansible-runner's worker needs: a definition without them
// describes no execution environment.
var required = []string{"ansible_core", "ansible_runner"}

// ReadDefinition reads an ansible-builder version 3 definition (execution-environment.yml)
// and returns what it asks of a Debian-built image.
func ReadDefinition(path string) (Requirements, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return Requirements{}, fmt.Errorf("read execution environment definition: %w", err)
	}
	req, err := ParseDefinition(data)
	if err != nil {
		return Requirements{}, fmt.Errorf("%s: %w", path, err)
	}
	return req, nil
}

// ParseDefinition is ReadDefinition on the file's content. Every top-level key is either
// followed by the Debian build or refused by name (topLevel), so the definition cannot ask
// ansible-builder's image for something make ee's image silently lacks.
func ParseDefinition(data []byte) (Requirements, error) {
	var def map[string]yaml.Node
	if err := yaml.Unmarshal(data, &def); err != nil {
		return Requirements{}, fmt.Errorf("not a YAML definition: %w", err)
	}
	var version int
	if node, ok := def["version"]; ok {
		if err := node.Decode(&version); err != nil {
			return Requirements{}, fmt.Errorf("version: %w", err)
		}
	}
	if version != 3 {
		return Requirements{}, fmt.Errorf("version: %d, want 3 (ansible-builder 3's schema)", version)
	}
	for _, key := range sortedKeys(def) {
		check, ok := topLevel[key]
		if !ok {
			return Requirements{}, fmt.Errorf("%s: not a key the Debian-built image follows (ee/definition.go allows %s)", key, strings.Join(sortedKeys(topLevel), ", "))
		}
		if err := check(def[key]); err != nil {
			return Requirements{}, fmt.Errorf("%s: %w", key, err)
		}
	}
	deps := map[string]yaml.Node{}
	if node, ok := def["dependencies"]; ok {
		if err := node.Decode(&deps); err != nil {
			return Requirements{}, fmt.Errorf("dependencies: a mapping: %w", err)
		}
	}
	req := Requirements{Constraints: map[string]string{}}
	for _, key := range sortedKeys(deps) {
		node := deps[key]
		switch key {
		case "python_interpreter":
			if err := onlyKeys(&node, "dependencies."+key, "package_system", "python_path"); err != nil {
				return Requirements{}, err
			}
			var v struct {
				PackageSystem string `yaml:"package_system"`
				PythonPath    string `yaml:"python_path"`
			}
			if err := node.Decode(&v); err != nil {
				return Requirements{}, fmt.Errorf("dependencies.%s: %w", key, err)
			}
			constraint, err := pythonConstraint(v.PackageSystem)
			if err != nil {
				return Requirements{}, fmt.Errorf("dependencies.%s.package_system: %w", key, err)
			}
			if err := req.add("dependencies."+key, debian[key].deb, constraint); err != nil {
				return Requirements{}, err
			}
		case "ansible_core", "ansible_runner":
			if err := onlyKeys(&node, "dependencies."+key, "package_pip"); err != nil {
				return Requirements{}, err
			}
			var v struct {
				PackagePip string `yaml:"package_pip"`
			}
			if err := node.Decode(&v); err != nil {
				return Requirements{}, fmt.Errorf("dependencies.%s: %w", key, err)
			}
			name, spec := splitRequirement(v.PackagePip)
			if name != debian[key].pip {
				return Requirements{}, fmt.Errorf("dependencies.%s.package_pip: %q names %q, the table in ee/definition.go maps %q to Debian's %s",
					key, v.PackagePip, name, debian[key].pip, debian[key].deb)
			}
			if _, err := parseSpec(spec); err != nil {
				return Requirements{}, fmt.Errorf("dependencies.%s.package_pip: %w", key, err)
			}
			if err := req.add("dependencies."+key, debian[key].deb, spec); err != nil {
				return Requirements{}, err
			}
		case "system":
			var lines []string
			if err := node.Decode(&lines); err != nil {
				return Requirements{}, fmt.Errorf("dependencies.system: a list of bindep lines: %w", err)
			}
			if err := req.addBindep(lines, func(i int) string { return fmt.Sprintf("dependencies.system[%d]", i) }); err != nil {
				return Requirements{}, err
			}
		case "galaxy":
			// Roles, and a collection's source, version or signatures, would make
			// ansible-builder install something else than the staged collection.
			if err := onlyKeys(&node, "dependencies.galaxy", "collections"); err != nil {
				return Requirements{}, err
			}
			var v struct {
				Collections []yaml.Node `yaml:"collections"`
			}
			if err := node.Decode(&v); err != nil {
				return Requirements{}, fmt.Errorf("dependencies.galaxy: %w", err)
			}
			for i, n := range v.Collections {
				at := fmt.Sprintf("dependencies.galaxy.collections[%d]", i)
				if err := onlyKeys(&n, at, "name", "type"); err != nil {
					return Requirements{}, err
				}
				var c struct {
					Name string `yaml:"name"`
				}
				if err := n.Decode(&c); err != nil {
					return Requirements{}, fmt.Errorf("%s: %w", at, err)
				}
				if !isThisCollection(c.Name) {
					return Requirements{}, fmt.Errorf("dependencies.galaxy: collection %q: the Debian-built image installs only richt.services, from its own tarball (no Galaxy server is reachable)", c.Name)
				}
				req.Collections = append(req.Collections, "richt.services")
			}
		default:
			return Requirements{}, fmt.Errorf("dependencies.%s: the Debian-built image has no mapping for it; add one to the table in ee/definition.go", key)
		}
	}
	for _, key := range required {
		if _, ok := deps[key]; !ok {
			return Requirements{}, fmt.Errorf("dependencies.%s: missing; ansible-runner's worker needs it", key)
		}
	}
	if len(req.Collections) == 0 {
		return Requirements{}, fmt.Errorf("dependencies.galaxy: names no collection; the image exists to carry richt.services")
	}
	sort.Strings(req.Packages)
	req.Collections = unique(req.Collections)
	return req, nil
}

// topLevel are the top-level keys of a definition the Debian build accepts, each with the
// check that holds it to what the Debian build does. ansible-builder 3 also knows
// additional_build_steps and build_arg_defaults: both change what ansible-builder's image
// holds (commands run in its Containerfile, arguments to its galaxy and pip steps) in ways
// make ee cannot follow, so they are refused like any key not listed here.
var topLevel = map[string]func(yaml.Node) error{
	// version: checked before everything else (3).
	"version": func(yaml.Node) error { return nil },
	// dependencies: mapped through the table (debian) in ParseDefinition.
	"dependencies": func(yaml.Node) error { return nil },
	// images: only base_image, the RPM build's starting point; the Debian build starts from
	// the suite instead, which is the point of it.
	"images": func(n yaml.Node) error {
		return onlyKey(n, "images", "base_image", "replaced by Debian's suite")
	},
	// additional_build_files: only the staged collection, which the Debian build installs
	// from the collection's tarball; any other file would be in ansible-builder's build
	// context for steps make ee does not run.
	"additional_build_files": func(n yaml.Node) error {
		var entries []yaml.Node
		if err := n.Decode(&entries); err != nil {
			return fmt.Errorf("a list of src and dest: %w", err)
		}
		for i, e := range entries {
			at := fmt.Sprintf("additional_build_files[%d]", i)
			if err := onlyKeys(&e, at, "src", "dest"); err != nil {
				return err
			}
			var f struct {
				Src  string `yaml:"src"`
				Dest string `yaml:"dest"`
			}
			if err := e.Decode(&f); err != nil {
				return fmt.Errorf("%s: %w", at, err)
			}
			if !strings.HasSuffix(strings.TrimRight(f.Src, "/"), "ansible_collections/richt/services") {
				return fmt.Errorf("additional_build_files[%d]: src %q: the Debian-built image copies only the staged collection (…/ansible_collections/richt/services)", i, f.Src)
			}
		}
		return nil
	},
	// options: only package_manager_path, the RPM build's dnf; make ee installs with
	// mmdebstrap. The other options (user, workdir, container_init, tags,
	// skip_ansible_check, relax_passwd_permissions, ...) change the image or its checks.
	"options": func(n yaml.Node) error {
		return onlyKey(n, "options", "package_manager_path", "its package manager is apt, through mmdebstrap")
	},
}

// onlyKey refuses every key of the top-level mapping n (the definition's key at) but key,
// saying why the Debian build follows that one only.
func onlyKey(n yaml.Node, at, key, why string) error {
	var v map[string]yaml.Node
	if err := n.Decode(&v); err != nil {
		return fmt.Errorf("a mapping: %w", err)
	}
	for _, k := range sortedKeys(v) {
		if k != key {
			return fmt.Errorf("%s.%s: the Debian-built image follows only %s.%s (%s)", at, k, at, key, why)
		}
	}
	return nil
}

// onlyKeys refuses a key of the mapping n (the definition's key at) that is not in allowed,
// by its full path. yaml's Decode into a struct drops unknown keys silently, and
// ansible-builder acts on keys the Debian build would not follow: each level is checked
// before it is decoded.
func onlyKeys(n *yaml.Node, at string, allowed ...string) error {
	var m map[string]yaml.Node
	if err := n.Decode(&m); err != nil {
		return fmt.Errorf("%s: a mapping: %w", at, err)
	}
	for _, k := range sortedKeys(m) {
		if !slices.Contains(allowed, k) {
			return fmt.Errorf("%s.%s: not a key the Debian-built image follows (ee/definition.go allows %s there)", at, k, strings.Join(allowed, ", "))
		}
	}
	return nil
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func unique(s []string) []string {
	sort.Strings(s)
	var out []string
	for i, v := range s {
		if i == 0 || v != s[i-1] {
			out = append(out, v)
		}
	}
	return out
}

// debianName is Debian's package name syntax (Debian Policy 5.6.7). Names reach a root
// shell in build.sh: nothing else passes.
var debianName = regexp.MustCompile(`^[a-z0-9][a-z0-9+.-]+$`)

// add adds a Debian package, from the definition's field, with its version specifier
// (empty: any version); a second specifier for the same package is added to the first.
func (r *Requirements) add(field, deb, constraint string) error {
	if !debianName.MatchString(deb) {
		return fmt.Errorf("%s: %q is not a Debian package name (%s)", field, deb, debianName)
	}
	if r.Constraints == nil {
		r.Constraints = map[string]string{}
	}
	if !slices.Contains(r.Packages, deb) {
		r.Packages = append(r.Packages, deb)
		sort.Strings(r.Packages)
	}
	switch old := r.Constraints[deb]; {
	case constraint == "" || old == constraint:
	case old == "":
		r.Constraints[deb] = constraint
	default:
		r.Constraints[deb] = old + "," + constraint
	}
	return nil
}

// Merge returns the requirements of both: the packages of either, each package's
// specifiers joined (both must hold), the collections of either.
func (r Requirements) Merge(o Requirements) (Requirements, error) {
	out := Requirements{Constraints: map[string]string{}, Collections: unique(append(slices.Clone(r.Collections), o.Collections...))}
	for _, src := range []Requirements{r, o} {
		for _, p := range src.Packages {
			if err := out.add("package", p, src.Constraints[p]); err != nil {
				return Requirements{}, err
			}
		}
	}
	return out, nil
}

// isThisCollection tells whether a galaxy entry's name is this collection: its FQCN, or
// the directory ansible-builder copies the staged collection to (…/richt/services).
func isThisCollection(name string) bool {
	return name == "richt.services" || strings.HasSuffix(strings.TrimRight(name, "/"), "/richt/services")
}

var pythonSystem = regexp.MustCompile(`^python(\d+(?:\.\d+)*)$`)

// pythonConstraint turns an RPM interpreter package name (python3.11) into the minimum
// version Debian's python3 must have (>=3.11): Debian ships one python3, not one package
// per minor version.
func pythonConstraint(pkg string) (string, error) {
	if pkg == "" {
		return "", nil
	}
	m := pythonSystem.FindStringSubmatch(pkg)
	if m == nil {
		return "", fmt.Errorf("%q: want pythonX.Y", pkg)
	}
	if !strings.Contains(m[1], ".") {
		return "", nil // python3: any
	}
	return ">=" + m[1], nil
}

var requirementName = regexp.MustCompile(`^\s*([A-Za-z0-9][A-Za-z0-9._-]*)\s*(.*)$`)

// splitRequirement splits a pip requirement ("ansible-core>=2.19.0,<2.20.0") into the
// package name and its version specifier.
func splitRequirement(r string) (name, spec string) {
	m := requirementName.FindStringSubmatch(r)
	if m == nil {
		return "", ""
	}
	return m[1], strings.TrimSpace(m[2])
}
