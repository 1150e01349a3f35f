package ee

import (
	"fmt"
	"os"
	"regexp"
	"sort"
	"strconv"
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

// ParseDefinition is ReadDefinition on the file's content.
func ParseDefinition(data []byte) (Requirements, error) {
	var def struct {
		Version      int                  `yaml:"version"`
		Dependencies map[string]yaml.Node `yaml:"dependencies"`
	}
	if err := yaml.Unmarshal(data, &def); err != nil {
		return Requirements{}, fmt.Errorf("not a YAML definition: %w", err)
	}
	if def.Version != 3 {
		return Requirements{}, fmt.Errorf("version: %d, want 3 (ansible-builder 3's schema)", def.Version)
	}
	req := Requirements{Constraints: map[string]string{}}
	add := func(deb, constraint string) {
		req.Packages = append(req.Packages, deb)
		if constraint != "" {
			req.Constraints[deb] = constraint
		}
	}
	keys := make([]string, 0, len(def.Dependencies))
	for k := range def.Dependencies {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, key := range keys {
		node := def.Dependencies[key]
		switch key {
		case "python_interpreter":
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
			add(debian[key].deb, constraint)
		case "ansible_core", "ansible_runner":
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
			add(debian[key].deb, spec)
		case "system":
			var lines []string
			if err := node.Decode(&lines); err != nil {
				return Requirements{}, fmt.Errorf("dependencies.system: a list of bindep lines: %w", err)
			}
			for _, l := range lines {
				pkg, ok, err := bindepDpkg(l)
				if err != nil {
					return Requirements{}, fmt.Errorf("dependencies.system: %w", err)
				}
				if ok {
					add(pkg, "")
				}
			}
		case "galaxy":
			var v struct {
				Collections []struct {
					Name string `yaml:"name"`
				} `yaml:"collections"`
			}
			if err := node.Decode(&v); err != nil {
				return Requirements{}, fmt.Errorf("dependencies.galaxy: %w", err)
			}
			for _, c := range v.Collections {
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
		if _, ok := def.Dependencies[key]; !ok {
			return Requirements{}, fmt.Errorf("dependencies.%s: missing; ansible-runner's worker needs it", key)
		}
	}
	if len(req.Collections) == 0 {
		return Requirements{}, fmt.Errorf("dependencies.galaxy: names no collection; the image exists to carry richt.services")
	}
	sort.Strings(req.Packages)
	return req, nil
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

// bindepDpkg reads one bindep line and returns the package when the line applies to a
// dpkg platform (no platform selector, or one naming dpkg or debian and none excluding it).
func bindepDpkg(line string) (string, bool, error) {
	name, rest, _ := strings.Cut(strings.TrimSpace(line), " ")
	rest = strings.TrimSpace(rest)
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
	for _, sel := range strings.Fields(strings.Trim(rest, "[]")) {
		neg := strings.HasPrefix(sel, "!")
		p, ok := strings.CutPrefix(strings.TrimPrefix(sel, "!"), "platform:")
		if !ok {
			continue // a profile (test, doc): the image installs the default profile's packages
		}
		isDpkg := p == "dpkg" || p == "debian"
		if neg {
			if isDpkg {
				return "", false, nil
			}
			continue
		}
		platforms++
		dpkg = dpkg || isDpkg
	}
	return name, platforms == 0 || dpkg, nil
}

// clause is one comparison of a version specifier.
type clause struct {
	op      string
	version []int
	prefix  bool // ==X.Y.*
}

var clausePattern = regexp.MustCompile(`^(~=|==|!=|>=|<=|>|<)\s*(\d+(?:\.\d+)*)(\.\*)?$`)

// parseSpec parses a comma-separated version specifier ("", ">=2.19.0,<2.20.0").
func parseSpec(spec string) ([]clause, error) {
	var out []clause
	if strings.TrimSpace(spec) == "" {
		return nil, nil
	}
	for _, part := range strings.Split(spec, ",") {
		m := clausePattern.FindStringSubmatch(strings.TrimSpace(part))
		if m == nil {
			return nil, fmt.Errorf("version specifier %q: %q is not OP X.Y.Z (ops ~= == != >= <= > <)", spec, part)
		}
		c := clause{op: m[1], version: numbers(m[2]), prefix: m[3] != ""}
		if c.prefix && c.op != "==" && c.op != "!=" {
			return nil, fmt.Errorf("version specifier %q: .* only with == or !=", spec)
		}
		if c.op == "~=" && len(c.version) < 2 {
			return nil, fmt.Errorf("version specifier %q: ~= needs at least X.Y", spec)
		}
		out = append(out, c)
	}
	return out, nil
}

func numbers(s string) []int {
	var out []int
	for _, f := range strings.Split(s, ".") {
		n, _ := strconv.Atoi(f)
		out = append(out, n)
	}
	return out
}

var upstreamPattern = regexp.MustCompile(`^\d+(?:\.\d+)*`)

// upstreamVersion is the numeric upstream part of a Debian version: "1:2.19.11-1+b1" →
// [2 19 11].
func upstreamVersion(deb string) ([]int, error) {
	v := deb
	if _, after, ok := strings.Cut(v, ":"); ok {
		v = after
	}
	if i := strings.LastIndex(v, "-"); i > 0 {
		v = v[:i]
	}
	m := upstreamPattern.FindString(v)
	if m == "" {
		return nil, fmt.Errorf("Debian version %q has no numeric upstream version", deb)
	}
	return numbers(m), nil
}

func compare(a, b []int) int {
	for i := 0; i < max(len(a), len(b)); i++ {
		x, y := 0, 0
		if i < len(a) {
			x = a[i]
		}
		if i < len(b) {
			y = b[i]
		}
		if x != y {
			if x < y {
				return -1
			}
			return 1
		}
	}
	return 0
}

func hasPrefix(v, p []int) bool {
	for i, n := range p {
		if i >= len(v) || v[i] != n {
			return false
		}
	}
	return true
}

// Satisfies tells whether a Debian package version meets a version specifier of the
// definition.
func Satisfies(debVersion, spec string) (bool, error) {
	clauses, err := parseSpec(spec)
	if err != nil {
		return false, err
	}
	v, err := upstreamVersion(debVersion)
	if err != nil {
		return false, err
	}
	for _, c := range clauses {
		cmp := compare(v, c.version)
		ok := false
		switch c.op {
		case "==":
			ok = cmp == 0 || (c.prefix && hasPrefix(v, c.version))
		case "!=":
			ok = cmp != 0 && !(c.prefix && hasPrefix(v, c.version))
		case ">=":
			ok = cmp >= 0
		case "<=":
			ok = cmp <= 0
		case ">":
			ok = cmp > 0
		case "<":
			ok = cmp < 0
		case "~=":
			ok = cmp >= 0 && hasPrefix(v, c.version[:len(c.version)-1])
		}
		if !ok {
			return false, nil
		}
	}
	return true, nil
}
