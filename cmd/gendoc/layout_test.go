package main

import (
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
)

// TestREADMELayoutListsEveryPackage keeps the README's layout table equal to the packages
// under pkg/: a package added without a row, or a row left for a package that went, fails
// here rather than misleading a reader.
func TestREADMELayoutListsEveryPackage(t *testing.T) {
	readme, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	listed := map[string]bool{}
	row := regexp.MustCompile("^\\| ([^|]*) \\|")
	name := regexp.MustCompile("`pkg/([a-z0-9_]+)`")
	for _, line := range strings.Split(string(readme), "\n") {
		m := row.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		for _, n := range name.FindAllStringSubmatch(m[1], -1) {
			listed[n[1]] = true
		}
	}
	entries, err := os.ReadDir(filepath.Join("..", "..", "pkg"))
	if err != nil {
		t.Fatal(err)
	}
	var missing []string
	present := map[string]bool{}
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		gofiles, _ := filepath.Glob(filepath.Join("..", "..", "pkg", e.Name(), "*.go"))
		if len(gofiles) == 0 {
			continue
		}
		present[e.Name()] = true
		if !listed[e.Name()] {
			missing = append(missing, "pkg/"+e.Name())
		}
	}
	var stale []string
	for n := range listed {
		if !present[n] {
			stale = append(stale, "pkg/"+n)
		}
	}
	sort.Strings(stale)
	if len(missing) > 0 || len(stale) > 0 {
		t.Errorf("README.md's layout table is out of date: packages without a row %v, rows without a package %v", missing, stale)
	}
}
