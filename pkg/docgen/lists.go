package docgen

import (
	"errors"
	"fmt"
	"strings"

	"go.yaml.in/yaml/v3"
)

// The module lists in the repository's README.md and the collection's README.md sit
// between these two lines, which Markdown does not show; everything outside them stays
// hand-written.
const (
	BeginModules = "<!-- BEGIN modules: written by `go run ./cmd/gendoc` from each module's short_description -->"
	EndModules   = "<!-- END modules -->"
)

// ErrNoModuleMarkers is a Markdown file without the BeginModules and EndModules lines, in
// that order, each on a line of its own.
var ErrNoModuleMarkers = errors.New("no " + BeginModules + " line followed by a " + EndModules + " line")

// Module is one module as the lists name it: its name and its stub's short_description.
type Module struct {
	Name    string
	Summary string
}

// ShortDescription reads a stub's DOCUMENTATION short_description, the one line that
// summarises the module wherever the modules are listed.
func ShortDescription(stub string) (string, error) {
	text, _, err := Documentation(stub)
	if err != nil {
		return "", err
	}
	var doc struct {
		Short string `yaml:"short_description"`
	}
	if err := yaml.Unmarshal([]byte(text), &doc); err != nil {
		return "", fmt.Errorf("DOCUMENTATION: %w", err)
	}
	if s := strings.TrimSpace(doc.Short); s != "" {
		return s, nil
	}
	return "", errors.New("DOCUMENTATION has no short_description")
}

// ModuleTable renders the Markdown table of the modules, one row each, in the given order.
func ModuleTable(mods []Module) string {
	var b strings.Builder
	b.WriteString("| module | what it does |\n| --- | --- |\n")
	for _, m := range mods {
		// A | would end the cell; a short_description is one line already.
		fmt.Fprintf(&b, "| `richt.services.%s` | %s |\n", m.Name, strings.ReplaceAll(m.Summary, "|", `\|`))
	}
	return b.String()
}

// SpliceModules replaces what lies between the BeginModules and EndModules lines of a
// Markdown file with block.
func SpliceModules(doc, block string) (string, error) {
	begin := strings.Index(doc, BeginModules+"\n")
	if begin < 0 || (begin > 0 && doc[begin-1] != '\n') {
		return "", ErrNoModuleMarkers
	}
	start := begin + len(BeginModules) + 1
	end := strings.Index(doc[start:], EndModules+"\n")
	if end < 0 || (end > 0 && doc[start+end-1] != '\n') {
		return "", ErrNoModuleMarkers
	}
	return doc[:start] + block + doc[start+end:], nil
}

// GalaxyDescription renders galaxy.yml's description key, which names every module.
func GalaxyDescription(names []string) string {
	s := "Statically linked Go modules that put RPM packages (DNF 4) and systemd services into an exact, verified state: " +
		strings.Join(names, ", ") + "."
	lines, _ := wrap(s, "  ", "  ") // a folded block scalar: its lines are text, never syntax
	return "description: >-\n" + lines
}

// SpliceGalaxyDescription replaces galaxy.yml's top-level description key with block;
// every other key stays as it is.
func SpliceGalaxyDescription(galaxy, block string) (string, error) {
	start, end, ok := topLevel(galaxy, "description")
	if !ok {
		return "", errors.New("no top-level description: key")
	}
	return galaxy[:start] + block + galaxy[end:], nil
}
