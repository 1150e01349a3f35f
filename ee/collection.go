package ee

import (
	"archive/tar"
	"compress/gzip"
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path"
	"regexp"
	"strings"

	yaml "go.yaml.in/yaml/v3"
)

// Collection is what a collection tarball holds, as far as the image is concerned.
type Collection struct {
	// Name is the collection's namespace.name, from MANIFEST.json.
	Name string
	// Version is the collection's version, from MANIFEST.json.
	Version string
	// Digest is a hash of the members' names, modes, link targets and contents, not of
	// the archive: ansible-galaxy writes build times into it, so two builds of one commit
	// differ as files but not here.
	Digest string
	// Requirements are what the collection's own meta/execution-environment.yml (or its
	// requirements.txt and bindep.txt) asks of the image (CollectionRequirements).
	Requirements Requirements
}

// maxMetaFile is the largest member ReadCollection keeps for CollectionRequirements:
// requirements files are small, the collection's binaries are not.
const maxMetaFile = 64 << 10

// ReadCollection reads a collection tarball's MANIFEST.json, digests its content and reads
// what the collection asks of the image (CollectionRequirements).
func ReadCollection(path string) (Collection, error) {
	f, err := os.Open(path)
	if err != nil {
		return Collection{}, fmt.Errorf("collection tarball: %w", err)
	}
	defer f.Close()
	gz, err := gzip.NewReader(f)
	if err != nil {
		return Collection{}, fmt.Errorf("collection tarball %s: %w", path, err)
	}
	tr := tar.NewReader(gz)
	h := sha256.New()
	var c Collection
	small := map[string][]byte{}
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return Collection{}, fmt.Errorf("collection tarball %s: %w", path, err)
		}
		fmt.Fprintf(h, "%s\x00%c\x00%o\x00%s\x00", hdr.Name, hdr.Typeflag, hdr.Mode, hdr.Linkname)
		name := strings.TrimPrefix(hdr.Name, "./")
		if hdr.Typeflag != tar.TypeReg || hdr.Size > maxMetaFile {
			if _, err := io.Copy(h, tr); err != nil {
				return Collection{}, fmt.Errorf("collection tarball %s: %w", path, err)
			}
			continue
		}
		data, err := io.ReadAll(tr)
		if err != nil {
			return Collection{}, fmt.Errorf("collection tarball %s: %s: %w", path, name, err)
		}
		h.Write(data)
		small[name] = data
		if name == "MANIFEST.json" {
			var m struct {
				Info struct{ Namespace, Name, Version string } `json:"collection_info"`
			}
			if err := json.Unmarshal(data, &m); err != nil {
				return Collection{}, fmt.Errorf("collection tarball %s: MANIFEST.json: %w", path, err)
			}
			c.Name, c.Version = m.Info.Namespace+"."+m.Info.Name, m.Info.Version
		}
	}
	if c.Name == "" || c.Version == "" {
		return Collection{}, fmt.Errorf("collection tarball %s: no MANIFEST.json naming the collection and its version", path)
	}
	c.Digest = hex.EncodeToString(h.Sum(nil))
	c.Requirements, err = CollectionRequirements(func(name string) ([]byte, bool) {
		data, ok := small[name]
		return data, ok
	})
	if err != nil {
		return Collection{}, fmt.Errorf("collection tarball %s: %w", path, err)
	}
	return c, nil
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
