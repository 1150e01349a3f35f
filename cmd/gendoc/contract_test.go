package main

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/richt/services/pkg/ansible"
	"github.com/richt/services/pkg/contract"
	"github.com/richt/services/pkg/lifecycle"
	"github.com/richt/services/pkg/override"
	"github.com/richt/services/pkg/rpmexact"
	"github.com/richt/services/pkg/service"
)

// contractKeys are the keys package contract declares: the json names of contract.Change's
// fields.
func contractKeys() map[string]bool {
	keys := map[string]bool{}
	t := reflect.TypeOf(contract.Change{})
	for i := range t.NumField() {
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
		keys[name] = true
	}
	return keys
}

// moduleParams are the parameter names of each of the collection's modules (their Specs,
// suboptions included).
func moduleParams() []map[string]bool {
	var out []map[string]bool
	for _, s := range []*ansible.Spec{rpmexact.Spec(), override.Spec(), lifecycle.Spec(), service.Spec()} {
		names := map[string]bool{}
		var add func([]ansible.Param)
		add = func(ps []ansible.Param) {
			for _, p := range ps {
				names[p.Name] = true
				add(p.Suboptions)
			}
		}
		add(s.Params)
		out = append(out, names)
	}
	return out
}

// TestNoContractKeyLiteralOutsideContract: a key of the contract between modules is spelled
// in package contract only; everywhere else (non-test Go files of pkg/, modules/, cmd/) a
// result is read through contract.Read and Changed and written by embedding
// contract.Change or through contract.Registered. A string literal equal to a key is a
// parameter name, not the key, in exactly two places, which the rule tells apart by
// their syntax:
//   - the Name of an ansible.Param (unit_override's daemon_reload parameter);
//   - a key of a map literal that is a task's arguments: the value of a key that names a
//     module by its fully qualified name (ansible.builtin.systemd_service, whose
//     daemon_reload is a parameter too), or a map whose literal keys are all parameters
//     of one of the collection's modules.
func TestNoContractKeyLiteralOutsideContract(t *testing.T) {
	keys := contractKeys()
	params := moduleParams()
	root := filepath.Join("..", "..")
	eachSourceFile(t, root, []string{"pkg", "modules", "cmd"}, func(rel string) bool { return rel == "pkg/contract" }, func(rel string, data []byte) {
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, rel, data, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		for _, lit := range keyLiterals(f, keys, params) {
			t.Errorf("%s: %s is a key of package contract: read it with contract.Read, write it through contract.Change", fset.Position(lit.Pos()), lit.Value)
		}
	})
}

// keyLiterals are f's string literals equal to a key that are not a parameter name
// (TestNoContractKeyLiteralOutsideContract's rule). Struct tags are no literals here.
func keyLiterals(f *ast.File, keys map[string]bool, params []map[string]bool) []*ast.BasicLit {
	allowed := map[*ast.BasicLit]bool{}
	ast.Inspect(f, func(n ast.Node) bool {
		switch x := n.(type) {
		case *ast.Field:
			if x.Tag != nil {
				allowed[x.Tag] = true
			}
		case *ast.KeyValueExpr:
			if k, ok := x.Key.(*ast.BasicLit); ok && strings.Contains(stringOf(k), ".") {
				if m, ok := x.Value.(*ast.CompositeLit); ok {
					allowAllKeys(m, allowed)
				}
			}
		case *ast.CompositeLit:
			if isParam(x.Type) {
				for _, e := range x.Elts {
					if kv, ok := e.(*ast.KeyValueExpr); ok && isIdent(kv.Key, "Name") {
						if v, ok := kv.Value.(*ast.BasicLit); ok {
							allowed[v] = true
						}
					}
				}
			}
			if isParamList(x.Type) {
				// Elided element types: each element is a Param.
				for _, e := range x.Elts {
					if c, ok := e.(*ast.CompositeLit); ok && c.Type == nil {
						c.Type = &ast.Ident{Name: "Param"}
					}
				}
			}
			if moduleArgs(x, params) {
				allowAllKeys(x, allowed)
			}
		}
		return true
	})
	var out []*ast.BasicLit
	ast.Inspect(f, func(n ast.Node) bool {
		if lit, ok := n.(*ast.BasicLit); ok && lit.Kind == token.STRING && keys[stringOf(lit)] && !allowed[lit] {
			out = append(out, lit)
		}
		return true
	})
	return out
}

func stringOf(lit *ast.BasicLit) string {
	s, err := strconv.Unquote(lit.Value)
	if err != nil {
		return ""
	}
	return s
}

func isIdent(e ast.Expr, name string) bool {
	id, ok := e.(*ast.Ident)
	return ok && id.Name == name
}

// isParam reports whether e is the type ansible.Param (or Param inside package ansible).
func isParam(e ast.Expr) bool {
	switch x := e.(type) {
	case *ast.Ident:
		return x.Name == "Param"
	case *ast.SelectorExpr:
		return isIdent(x.X, "ansible") && x.Sel.Name == "Param"
	}
	return false
}

// isParamList reports whether e is []ansible.Param.
func isParamList(e ast.Expr) bool {
	a, ok := e.(*ast.ArrayType)
	return ok && isParam(a.Elt)
}

// moduleArgs reports whether the map literal m's literal keys are all parameters of one
// of the collection's modules.
func moduleArgs(m *ast.CompositeLit, params []map[string]bool) bool {
	if _, ok := m.Type.(*ast.MapType); !ok || len(m.Elts) == 0 {
		return false
	}
	for _, names := range params {
		all := true
		for _, e := range m.Elts {
			kv, ok := e.(*ast.KeyValueExpr)
			if !ok {
				all = false
				break
			}
			k, ok := kv.Key.(*ast.BasicLit)
			if !ok || !names[stringOf(k)] {
				all = false
				break
			}
		}
		if all {
			return true
		}
	}
	return false
}

// allowAllKeys marks the literal keys of the map literal m as parameter names.
func allowAllKeys(m *ast.CompositeLit, allowed map[*ast.BasicLit]bool) {
	for _, e := range m.Elts {
		if kv, ok := e.(*ast.KeyValueExpr); ok {
			if k, ok := kv.Key.(*ast.BasicLit); ok {
				allowed[k] = true
			}
		}
	}
}

// TestContractKeyRule: what the rule counts as a key and what as a parameter name.
func TestContractKeyRule(t *testing.T) {
	for _, c := range []struct {
		name, src string
		found     int
	}{
		{"a result's key", `var _ = m["unit_files_changed"]`, 1},
		{"a result built by hand", `var _ = map[string]any{"changed": true, "package_changed": true}`, 1},
		{"a comparison", `var _ = x == "daemon_reload"`, 1},
		{"a Param's name", `var _ = ansible.Param{Name: "daemon_reload"}`, 0},
		{"a Param's name, type elided", `var _ = []ansible.Param{{Name: "daemon_reload"}}`, 0},
		{"another struct's name", `var _ = Other{Name: "daemon_reload"}`, 1},
		{"unit_override's arguments", `var _ = map[string]any{"unit": u, "daemon_reload": false}`, 0},
		{"arguments of no one module", `var _ = map[string]any{"unit": u, "packages": p, "daemon_reload": false}`, 1},
		{"a builtin module's arguments", `var _ = task{"ansible.builtin.systemd_service": map[string]any{"enabled": true, "daemon_reload": true}}`, 0},
		{"a struct tag", "type R struct {\n\tX bool `json:\"files_placed\"`\n}", 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			f, err := parser.ParseFile(token.NewFileSet(), "x.go", "package x\n"+c.src+"\n", 0)
			if err != nil {
				t.Fatal(err)
			}
			if got := len(keyLiterals(f, contractKeys(), moduleParams())); got != c.found {
				t.Errorf("found %d, want %d", got, c.found)
			}
		})
	}
}
