package main

import (
	"bytes"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// maxLines bounds a non-test Go file in pkg/, ee/ and cmd/: a file longer than that does
// more than one thing, and a reader cannot hold it.
const maxLines = 500

// longFiles are the files allowed over maxLines, with their line counts: none today (the
// EE's three were split into ee and ee/runner). The counts can only go down: a file that
// grows fails, one that shrinks must have its count lowered here, and one at or under
// maxLines (or gone) must leave the list.
var longFiles = map[string]int{}

// TestNoLongSourceFile keeps every non-test Go file in pkg/, ee/ and cmd/ at most maxLines
// long, but for longFiles, which can only shrink.
func TestNoLongSourceFile(t *testing.T) {
	root := filepath.Join("..", "..")
	seen := map[string]bool{}
	eachSourceFile(t, root, []string{"pkg", "ee", "cmd"}, nil, func(rel string, data []byte) {
		n := bytes.Count(data, []byte("\n"))
		allowed, excepted := longFiles[rel]
		seen[rel] = true
		switch {
		case excepted && n <= maxLines:
			t.Errorf("%s has %d lines, no more than %d: remove it from longFiles", rel, n, maxLines)
		case excepted && n > allowed:
			t.Errorf("%s grew to %d lines (allowed %d, and only fewer): split it", rel, n, allowed)
		case excepted && n < allowed:
			t.Errorf("%s shrank to %d lines: lower its count in longFiles from %d to %d", rel, n, allowed, n)
		case !excepted && n > maxLines:
			t.Errorf("%s has %d lines, more than %d: split it by what its parts do", rel, n, maxLines)
		}
	})
	for f := range longFiles {
		if !seen[f] {
			t.Errorf("%s is gone: remove it from longFiles", f)
		}
	}
}

// mustNotImport are imports that would run upward: a leaf reaching into the protocol
// package, or one module's package into another's. What both sides need lives in a leaf
// (filemode, diffmode, dnfscript). The EE's two packages stay apart the same way.
var mustNotImport = map[string][]string{
	"pkg/safefile": {"pkg/ansible"},
	"pkg/rollback": {"pkg/rpmexact"},
	// The EE's two jobs share only the image's tag: the job path needs nothing of the
	// build, and the build nothing of a job.
	"ee":        {"ee/runner"},
	"ee/runner": {"ee"},
}

// TestNoUpwardImports fails when a package in mustNotImport imports what it must not, in
// its non-test files.
func TestNoUpwardImports(t *testing.T) {
	const module = "github.com/richt/services/"
	for pkg, banned := range mustNotImport {
		files, err := filepath.Glob(filepath.Join("..", "..", pkg, "*.go"))
		if err != nil || len(files) == 0 {
			t.Fatalf("%s: no Go files (%v)", pkg, err)
		}
		for _, f := range files {
			if strings.HasSuffix(f, "_test.go") {
				continue
			}
			parsed, err := parser.ParseFile(token.NewFileSet(), f, nil, parser.ImportsOnly)
			if err != nil {
				t.Fatal(err)
			}
			for _, imp := range parsed.Imports {
				path, _ := strconv.Unquote(imp.Path.Value)
				for _, b := range banned {
					if path == module+b {
						t.Errorf("%s imports %s: move what it needs to a leaf both can import", filepath.ToSlash(f), b)
					}
				}
			}
		}
	}
}

// eachSourceFile calls fn with the slash path (relative to root) and content of every
// non-test Go file under root's tops, testdata and the directories skip names left out:
// the one walk the shape tests share.
func eachSourceFile(t *testing.T, root string, tops []string, skip func(rel string) bool, fn func(rel string, data []byte)) {
	t.Helper()
	for _, top := range tops {
		err := filepath.WalkDir(filepath.Join(root, top), func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			rel, _ := filepath.Rel(root, p)
			rel = filepath.ToSlash(rel)
			if d.IsDir() && (d.Name() == "testdata" || (skip != nil && skip(rel))) {
				return filepath.SkipDir
			}
			if d.IsDir() || !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
				return nil
			}
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			fn(rel, data)
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
}
