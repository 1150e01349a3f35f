package main

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strings"
	"testing"
)

// resultFile is the one file of package service that builds and reads the maps Ansible
// reports (its step results: stepResult), and resultField the field that holds one.
const (
	resultFile  = "pkg/service/result.go"
	resultField = "raw"
)

// TestNoStepResultMapOutsideResult keeps the service's steps talking in types: a step's
// result is a map only inside result.go, and every other non-test file of pkg/service
// asks it through result.go's methods (stepMapUses' rule).
func TestNoStepResultMapOutsideResult(t *testing.T) {
	root := filepath.Join("..", "..")
	seen := false
	eachSourceFile(t, root, []string{"pkg/service"}, nil, func(rel string, data []byte) {
		seen = true
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, rel, data, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		for _, u := range stepMapUses(f, rel == resultFile) {
			t.Errorf("%s: %s: a step's result is built and read in %s only (stepResult's methods)", fset.Position(u.pos), u.what, resultFile)
		}
	})
	if !seen {
		t.Fatal("no Go file under pkg/service")
	}
}

type mapUse struct {
	pos  token.Pos
	what string
}

// stepMapUses are the places in f that make a step's result a map again, or reach into
// one. In every file: a type declared as a map (alias or definition: `type reported =
// map[string]any` lets map literals and indexing pass under another name). Outside
// result.go (inResult false) also: the type map[string]any (or interface{}) written
// out, a type assertion to a map, an index by a string literal (res["changed"]), and the
// stepResult's field (res.raw, stepResult{raw: m}).
func stepMapUses(f *ast.File, inResult bool) []mapUse {
	var out []mapUse
	ast.Inspect(f, func(n ast.Node) bool {
		switch x := n.(type) {
		case *ast.TypeSpec:
			if _, ok := x.Type.(*ast.MapType); ok {
				out = append(out, mapUse{x.Pos(), "type " + x.Name.Name + " is a map type"})
			}
		case *ast.MapType:
			if !inResult && isIdent(x.Key, "string") && isAny(x.Value) {
				out = append(out, mapUse{x.Pos(), "map[string]any"})
			}
		case *ast.TypeAssertExpr:
			if _, ok := x.Type.(*ast.MapType); ok && !inResult {
				out = append(out, mapUse{x.Pos(), "a type assertion to a map"})
			}
		case *ast.IndexExpr:
			if lit, ok := x.Index.(*ast.BasicLit); ok && lit.Kind == token.STRING && !inResult {
				out = append(out, mapUse{x.Pos(), "an index by the key " + lit.Value})
			}
		case *ast.SelectorExpr:
			if x.Sel.Name == resultField && !inResult {
				out = append(out, mapUse{x.Pos(), "the step result's field " + resultField})
			}
		case *ast.KeyValueExpr:
			if isIdent(x.Key, resultField) && !inResult {
				out = append(out, mapUse{x.Pos(), "a step result built from a map"})
			}
		}
		return true
	})
	return out
}

// isAny reports whether e is any or interface{}.
func isAny(e ast.Expr) bool {
	if isIdent(e, "any") {
		return true
	}
	it, ok := e.(*ast.InterfaceType)
	return ok && (it.Methods == nil || len(it.Methods.List) == 0)
}

// TestStepMapRule: what the rule counts as a step result's map, in result.go and outside.
func TestStepMapRule(t *testing.T) {
	for _, c := range []struct {
		name, src      string
		inResult       bool
		found          int
		mustMentionOne string
	}{
		{name: "an alias of a map", src: `type reported = map[string]any`, inResult: true, found: 1, mustMentionOne: "map type"},
		{name: "a map type defined", src: `type reported map[string]any`, inResult: true, found: 1, mustMentionOne: "map type"},
		{name: "another map type defined", src: `type byUnit map[string]int`, found: 1, mustMentionOne: "map type"},
		{name: "an alias of a named type", src: `type outcomes = wiring.Outcomes`},
		{name: "a map literal outside result.go", src: `var _ = map[string]any{"unit": u}`, found: 1, mustMentionOne: "map[string]any"},
		{name: "interface{} spelled out", src: `var _ map[string]interface{}`, found: 1, mustMentionOne: "map[string]any"},
		{name: "a map literal in result.go", src: `var _ = map[string]any{"unit": u}`, inResult: true},
		{name: "another map", src: `var _ = map[string]bool{}`},
		{name: "indexed by a key", src: `var _ = res["changed"]`, found: 1, mustMentionOne: "index"},
		{name: "indexed by a variable", src: `var _ = seen[name]`},
		{name: "a type assertion to a map", src: `var _, _ = v.(map[string]any)`, found: 2},
		{name: "the field", src: `var _ = res.raw`, found: 1, mustMentionOne: "field"},
		{name: "built from a map", src: `var _ = stepResult{raw: m}`, found: 1, mustMentionOne: "built"},
		{name: "the field in result.go", src: `var _ = stepResult{raw: m}.raw["msg"]`, inResult: true},
		{name: "a method", src: `var _ = res.changed()`},
	} {
		t.Run(c.name, func(t *testing.T) {
			f, err := parser.ParseFile(token.NewFileSet(), "x.go", "package x\n"+c.src+"\n", 0)
			if err != nil {
				t.Fatal(err)
			}
			uses := stepMapUses(f, c.inResult)
			if len(uses) != c.found {
				t.Fatalf("found %d (%v), want %d", len(uses), uses, c.found)
			}
			if c.mustMentionOne != "" && !strings.Contains(uses[0].what, c.mustMentionOne) {
				t.Errorf("found %q, want it to say %q", uses[0].what, c.mustMentionOne)
			}
		})
	}
}
