// Command gendoc writes the files that restate the list of modules: the multi-call binary's
// table (cmd/richt-modules/modules.go), the options of each module's DOCUMENTATION
// (collection/plugins/modules/NAME.py) from its Spec, the plugin routing in
// collection/meta/runtime.yml that sends every module through the fast path's action
// plugin, the module tables of README.md and collection/README.md (each module's
// short_description) and the modules named in galaxy.yml's description. The modules are
// those of modules/*/module.go (package modules).
//
//	go run ./cmd/gendoc          rewrite what is out of date, and name it
//	go run ./cmd/gendoc -check   change nothing; exit 1 when something is out of date
//
// A module's Spec comes from the multi-call binary (`richt-modules NAME --doc`), built here
// with the table as rendered, so the documented parameters are those of the code that runs.
package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"

	"github.com/richt/services/modules"
	"github.com/richt/services/pkg/ansible"
	"github.com/richt/services/pkg/docgen"
)

// Regenerate is the command that brings the files up to date.
const Regenerate = "go run ./cmd/gendoc"

// Paths of the generated files, relative to the repository root.
const (
	StubDir = "collection/plugins/modules"
	Runtime = "collection/meta/runtime.yml"
	// The files that list the modules for people, between markers (docgen.BeginModules)
	// or in galaxy.yml's description.
	Readme           = "README.md"
	CollectionReadme = "collection/README.md"
	Galaxy           = "galaxy.yml"
)

func main() {
	check := flag.Bool("check", false, "change nothing; exit 1 when a file is out of date")
	flag.Parse()
	root, err := repoRoot()
	if err == nil {
		var stale []string
		stale, err = Generate(root, !*check)
		for _, f := range stale {
			if *check {
				fmt.Printf("out of date: %s (run %s)\n", f, Regenerate)
			} else {
				fmt.Printf("wrote %s\n", f)
			}
		}
		if err == nil && *check && len(stale) > 0 {
			os.Exit(1)
		}
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "gendoc: %v\n", err)
		os.Exit(1)
	}
}

// Generate renders every generated file under root and returns those whose content on
// disk differs, writing them when write is true.
func Generate(root string, write bool) (stale []string, err error) {
	files, err := Render(root)
	if err != nil {
		return nil, err
	}
	for _, f := range files {
		path := filepath.Join(root, f.Path)
		old, err := os.ReadFile(path)
		if err != nil && !(errors.Is(err, os.ErrNotExist) && f.Path == modules.MultiCallTable) {
			return nil, err
		}
		if string(old) == f.Content {
			continue
		}
		stale = append(stale, f.Path)
		if write {
			if err := os.WriteFile(path, []byte(f.Content), 0o644); err != nil {
				return nil, err
			}
		}
	}
	return stale, nil
}

// File is one generated file: its path relative to the repository root and the content
// it must have.
type File struct {
	Path    string
	Content string
	// Spec is the module's documented parameters, for a doc stub.
	Spec *ansible.SpecDoc
}

// Render computes the generated files from the checked-in ones and the modules' Specs.
func Render(root string) ([]File, error) {
	names := modules.Names()
	table := File{Path: modules.MultiCallTable, Content: docgen.MultiCall(names, modules.ImportPath)}
	specs, err := Specs(root, names, table.Content)
	if err != nil {
		return nil, err
	}
	out := []File{table}
	mods := make([]docgen.Module, len(names))
	for i, name := range names {
		rel := filepath.Join(StubDir, name+".py")
		stub, err := os.ReadFile(filepath.Join(root, rel))
		if errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("module %s has no documentation stub %s: write its DOCUMENTATION (with an options: line), EXAMPLES and RETURN, then run %s", name, rel, Regenerate)
		}
		if err != nil {
			return nil, err
		}
		block, err := docgen.Options(specs[i])
		if err != nil {
			return nil, fmt.Errorf("module %s: %w", name, err)
		}
		content, err := docgen.SpliceOptions(string(stub), block)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", rel, err)
		}
		summary, err := docgen.ShortDescription(content)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", rel, err)
		}
		mods[i] = docgen.Module{Name: name, Summary: summary}
		out = append(out, File{Path: rel, Content: content, Spec: &specs[i]})
	}
	runtime, err := os.ReadFile(filepath.Join(root, Runtime))
	if err != nil {
		return nil, err
	}
	out = append(out, File{Path: Runtime, Content: docgen.SpliceRouting(string(runtime), docgen.Routing(names))})
	lists, err := moduleLists(root, names, mods)
	if err != nil {
		return nil, err
	}
	return append(out, lists...), nil
}

// moduleLists renders the files that name every module for people: the module tables of
// the two READMEs and galaxy.yml's description.
func moduleLists(root string, names []string, mods []docgen.Module) ([]File, error) {
	var out []File
	table := docgen.ModuleTable(mods)
	for _, rel := range []string{Readme, CollectionReadme} {
		doc, err := os.ReadFile(filepath.Join(root, rel))
		if err != nil {
			return nil, err
		}
		content, err := docgen.SpliceModules(string(doc), table)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", rel, err)
		}
		out = append(out, File{Path: rel, Content: content})
	}
	galaxy, err := os.ReadFile(filepath.Join(root, Galaxy))
	if err != nil {
		return nil, err
	}
	content, err := docgen.SpliceGalaxyDescription(string(galaxy), docgen.GalaxyDescription(names))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", Galaxy, err)
	}
	return append(out, File{Path: Galaxy, Content: content}), nil
}

// Specs builds the multi-call binary with table as its list of modules (a go build
// overlay, so a new module is documented before its table is written) and asks it for each
// module's documented parameters.
func Specs(root string, names []string, table string) ([]ansible.SpecDoc, error) {
	dir, err := os.MkdirTemp("", "richt-gendoc-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	tablePath := filepath.Join(dir, "modules.go")
	overlay, err := json.Marshal(map[string]any{"Replace": map[string]string{filepath.Join(root, modules.MultiCallTable): tablePath}})
	if err == nil {
		err = os.WriteFile(tablePath, []byte(table), 0o644)
	}
	if err == nil {
		err = os.WriteFile(filepath.Join(dir, "overlay.json"), overlay, 0o644)
	}
	if err != nil {
		return nil, err
	}
	bin := filepath.Join(dir, "richt-modules")
	build := exec.Command("go", "build", "-trimpath", "-overlay", filepath.Join(dir, "overlay.json"), "-o", bin, modules.Command)
	build.Dir = root
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("build modules: %w\n%s", err, out)
	}
	specs := make([]ansible.SpecDoc, len(names))
	for i, n := range names {
		out, err := exec.Command(bin, n, "--doc").Output()
		if err != nil {
			return nil, fmt.Errorf("%s --doc: %w", n, err)
		}
		dec := json.NewDecoder(bytes.NewReader(out))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&specs[i]); err != nil {
			return nil, fmt.Errorf("%s --doc: %w", n, err)
		}
		if specs[i].Module != n {
			return nil, fmt.Errorf("modules/%s declares the module %q: a module's Spec name is its directory's", n, specs[i].Module)
		}
	}
	return specs, nil
}

// repoRoot is the directory of the main module's go.mod.
func repoRoot() (string, error) {
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOMOD: %w", err)
	}
	mod := string(bytes.TrimSpace(out))
	if mod == "" || mod == os.DevNull {
		return "", errors.New("run gendoc inside the repository")
	}
	return filepath.Dir(mod), nil
}
