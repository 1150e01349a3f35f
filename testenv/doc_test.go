package testenv_test

import (
	"go/parser"
	"go/token"
	"os"
	"strings"
	"testing"
)

// TestDocSnippetsAreExamples keeps the tutorial in doc.go honest: every line of its code
// snippets must be a line of the examples, which the compiler checks.
func TestDocSnippetsAreExamples(t *testing.T) {
	f, err := parser.ParseFile(token.NewFileSet(), "doc.go", nil, parser.ParseComments|parser.PackageClauseOnly)
	if err != nil {
		t.Fatal(err)
	}
	examples, err := os.ReadFile("example_test.go")
	if err != nil {
		t.Fatal(err)
	}
	have := map[string]bool{}
	for _, l := range strings.Split(string(examples), "\n") {
		have[strings.TrimSpace(l)] = true
	}
	n := 0
	for _, l := range strings.Split(f.Doc.Text(), "\n") {
		if !strings.HasPrefix(l, "\t") {
			continue
		}
		n++
		if code := strings.TrimSpace(l); !have[code] {
			t.Errorf("doc.go shows a line no example has: %s", code)
		}
	}
	if n == 0 {
		t.Fatal("found no code in the package documentation")
	}
}
