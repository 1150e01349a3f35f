package ee

import (
	"fmt"
	"os"
	"path"
	"regexp"
	"slices"
	"sort"
	"strings"
	"unicode"

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

// addBindep adds the packages of bindep lines that apply to the image; field names line i
// in errors.
func (r *Requirements) addBindep(lines []string, field func(i int) string) error {
	for i, l := range lines {
		pkg, ok, err := bindepDpkg(l)
		if err != nil {
			return fmt.Errorf("%s: %w", field(i), err)
		}
		if ok {
			if err := r.add(field(i), pkg, ""); err != nil {
				return err
			}
		}
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

// CollectionRequirements reads what a collection asks of the execution environment it is
// installed into, as ansible-builder's introspection does when it installs the collection:
// meta/execution-environment.yml (or .yaml) gives dependencies.python and
// dependencies.system, each a list of lines or a file in the collection holding them;
// without that file, requirements.txt and bindep.txt at the collection's root. file returns
// a collection file's content by its path in the collection (false: absent). Every pip
// requirement must have a row in the table (debian) and every bindep line must name a
// Debian package, so what ansible-builder would add to its image make ee adds to its own or
// refuses. (ansible-builder drops a collection's ansible-core requirement; make ee holds the
// image to it.)
func CollectionRequirements(file func(name string) ([]byte, bool)) (Requirements, error) {
	var meta struct {
		Dependencies map[string]yaml.Node `yaml:"dependencies"`
	}
	found := false
	for _, name := range []string{"meta/execution-environment.yml", "meta/execution-environment.yaml"} {
		data, ok := file(name)
		if !ok {
			continue
		}
		if err := yaml.Unmarshal(data, &meta); err != nil {
			return Requirements{}, fmt.Errorf("%s: %w", name, err)
		}
		found = true
		break
	}
	req := Requirements{Constraints: map[string]string{}}
	if !found {
		for key, name := range map[string]string{"python": "requirements.txt", "system": "bindep.txt"} {
			if data, ok := file(name); ok && strings.TrimSpace(string(data)) != "" {
				if err := req.addCollectionFile(key, name, file, 0); err != nil {
					return Requirements{}, err
				}
			}
		}
		return req, nil
	}
	for _, key := range sortedKeys(meta.Dependencies) {
		if key != "python" && key != "system" {
			return Requirements{}, fmt.Errorf("meta/execution-environment.yml: dependencies.%s: ansible-builder reads only python and system from a collection", key)
		}
		node := meta.Dependencies[key]
		var lines []string
		if node.Kind == yaml.SequenceNode {
			if err := node.Decode(&lines); err != nil {
				return Requirements{}, fmt.Errorf("meta/execution-environment.yml: dependencies.%s: %w", key, err)
			}
			field := func(i int) string { return fmt.Sprintf("meta/execution-environment.yml: dependencies.%s[%d]", key, i) }
			if err := req.addCollectionLines(key, lines, field); err != nil {
				return Requirements{}, err
			}
			continue
		}
		var name string
		if err := node.Decode(&name); err != nil {
			return Requirements{}, fmt.Errorf("meta/execution-environment.yml: dependencies.%s: a list or a file name: %w", key, err)
		}
		if path.IsAbs(name) {
			return Requirements{}, fmt.Errorf("meta/execution-environment.yml: dependencies.%s: %s: not a relative path in the collection", key, name)
		}
		if err := req.addCollectionFile(key, path.Clean(name), file, 0); err != nil {
			return Requirements{}, fmt.Errorf("meta/execution-environment.yml: dependencies.%s: %w", key, err)
		}
	}
	return req, nil
}

// maxIncludes bounds `-r` nesting in a collection's pip requirements (a file that
// includes itself would never end).
const maxIncludes = 8

// addCollectionFile adds the lines of a requirements file of the collection (key python:
// pip's format with -r includes, relative to the including file; system: bindep's).
func (r *Requirements) addCollectionFile(key, name string, file func(string) ([]byte, bool), depth int) error {
	if depth > maxIncludes {
		return fmt.Errorf("%s: -r nests deeper than %d files", name, maxIncludes)
	}
	data, ok := file(name)
	if !ok {
		return fmt.Errorf("%s: not in the collection", name)
	}
	var lines []string
	var numbers []int
	for i, l := range strings.Split(string(data), "\n") {
		l = strings.TrimSpace(l)
		if l == "" || strings.HasPrefix(l, "#") {
			continue
		}
		if inc, ok := cutInclude(l); ok && key == "python" {
			if err := r.addCollectionFile(key, path.Join(path.Dir(name), inc), file, depth+1); err != nil {
				return err
			}
			continue
		}
		lines = append(lines, l)
		numbers = append(numbers, i+1)
	}
	return r.addCollectionLines(key, lines, func(i int) string { return fmt.Sprintf("%s line %d", name, numbers[i]) })
}

// cutInclude returns the file of a pip `-r FILE` or `--requirement FILE` line.
func cutInclude(line string) (string, bool) {
	for _, opt := range []string{"-r", "--requirement"} {
		if rest, ok := strings.CutPrefix(line, opt); ok && (rest == "" || rest[0] == ' ' || rest[0] == '=') {
			return strings.TrimSpace(strings.TrimPrefix(rest, "=")), true
		}
	}
	return "", false
}

// addCollectionLines adds a collection's pip requirements (key python) through the table,
// or its bindep lines (key system).
func (r *Requirements) addCollectionLines(key string, lines []string, field func(i int) string) error {
	if key == "system" {
		return r.addBindep(lines, field)
	}
	for i, l := range lines {
		l, _, _ = strings.Cut(l, "#")
		name, spec := splitRequirement(l)
		row, ok := pipRow(name)
		if !ok {
			return fmt.Errorf("%s: %q: no row in the table in ee/definition.go maps pip's %s to a Debian package", field(i), strings.TrimSpace(l), name)
		}
		if _, err := parseSpec(spec); err != nil {
			return fmt.Errorf("%s: %w", field(i), err)
		}
		if err := r.add(field(i), row.deb, spec); err != nil {
			return err
		}
	}
	return nil
}

var pipSeparators = regexp.MustCompile(`[-_.]+`)

// pipRow finds the table's row for a PyPI name, compared as pip compares them (PEP 503:
// case and runs of -_. do not matter).
func pipRow(name string) (debianDependency, bool) {
	norm := func(s string) string { return pipSeparators.ReplaceAllString(strings.ToLower(s), "-") }
	for _, row := range debian {
		if row.pip != "" && norm(row.pip) == norm(name) {
			return row, true
		}
	}
	return debianDependency{}, false
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

// bindepDpkg reads one bindep line and returns the package when the line applies to the
// image, as `bindep` decides it with no profile requested (ansible-builder's final stage):
// a dpkg platform (no platform selector, or one naming dpkg or debian and none excluding
// it) and the default profile (no profile selector, or one naming default and none
// excluding it). A line for another profile (test, compile, doc) is left out.
func bindepDpkg(line string) (string, bool, error) {
	// bindep splits on any whitespace, tabs included.
	name, rest := strings.TrimSpace(line), ""
	if i := strings.IndexFunc(name, unicode.IsSpace); i >= 0 {
		name, rest = name[:i], strings.TrimSpace(name[i:])
	}
	if name == "" {
		return "", false, fmt.Errorf("%q: no package name", line)
	}
	if rest == "" {
		return name, true, nil
	}
	if !strings.HasPrefix(rest, "[") || !strings.HasSuffix(rest, "]") {
		return "", false, fmt.Errorf("%q: only a [selector] list may follow the name here (no version constraints)", line)
	}
	platforms, dpkg := 0, false
	profiles, defaultProfile := 0, false
	for _, sel := range strings.Fields(strings.Trim(rest, "[]")) {
		neg := strings.HasPrefix(sel, "!")
		sel = strings.TrimPrefix(sel, "!")
		p, isPlatform := strings.CutPrefix(sel, "platform:")
		switch {
		case isPlatform && neg:
			if p == "dpkg" || p == "debian" {
				return "", false, nil
			}
		case isPlatform:
			platforms++
			dpkg = dpkg || p == "dpkg" || p == "debian"
		case neg:
			if sel == "default" {
				return "", false, nil
			}
		default:
			profiles++
			defaultProfile = defaultProfile || sel == "default"
		}
	}
	return name, (platforms == 0 || dpkg) && (profiles == 0 || defaultProfile), nil
}
