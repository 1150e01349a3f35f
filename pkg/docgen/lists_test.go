package docgen

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"
)

func TestShortDescription(t *testing.T) {
	for _, tc := range []struct {
		name, stub, want, err string
	}{
		{name: "plain", stub: "DOCUMENTATION = r\"\"\"\nmodule: a\nshort_description: Does a thing\noptions:\n\"\"\"\n", want: "Does a thing"},
		{name: "quoted", stub: "DOCUMENTATION = r\"\"\"\nmodule: a\nshort_description: \"One: two\"\n\"\"\"\n", want: "One: two"},
		{name: "missing", stub: "DOCUMENTATION = r\"\"\"\nmodule: a\n\"\"\"\n", err: "no short_description"},
		{name: "empty", stub: "DOCUMENTATION = r\"\"\"\nshort_description: \"\"\n\"\"\"\n", err: "no short_description"},
		{name: "not yaml", stub: "DOCUMENTATION = r\"\"\"\nshort_description: [\n\"\"\"\n", err: "DOCUMENTATION:"},
		{name: "no documentation", stub: "EXAMPLES = r\"\"\"\n\"\"\"\n", err: "no DOCUMENTATION"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ShortDescription(tc.stub)
			if tc.err != "" {
				assert.ErrorContains(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
}

func TestModuleTableEscapesCells(t *testing.T) {
	got := ModuleTable([]Module{{"a_mod", "one"}, {"b_mod", "this | that"}})
	assert.Equal(t, "| module | what it does |\n| --- | --- |\n"+
		"| `richt.services.a_mod` | one |\n"+
		"| `richt.services.b_mod` | this \\| that |\n", got)
}

func TestSpliceModules(t *testing.T) {
	marked := "# T\n\n" + BeginModules + "\nold\nlines\n" + EndModules + "\n\nafter\n"
	for _, tc := range []struct {
		name, doc, want string
	}{
		{name: "replaces between the markers", doc: marked, want: "# T\n\n" + BeginModules + "\nnew\n" + EndModules + "\n\nafter\n"},
		{name: "empty between the markers", doc: BeginModules + "\n" + EndModules + "\n", want: BeginModules + "\nnew\n" + EndModules + "\n"},
		{name: "no markers", doc: "# T\n"},
		{name: "no end marker", doc: BeginModules + "\nold\n"},
		{name: "end before begin", doc: EndModules + "\n" + BeginModules + "\n"},
		{name: "begin inside a line", doc: "x " + BeginModules + "\n" + EndModules + "\n"},
		{name: "end inside a line", doc: BeginModules + "\nx " + EndModules + "\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := SpliceModules(tc.doc, "new\n")
			if tc.want == "" {
				assert.ErrorIs(t, err, ErrNoModuleMarkers)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
}

// The description names every module, reads back as one line of YAML, and the keys around
// it stay as they were.
func TestGalaxyDescription(t *testing.T) {
	galaxy := "namespace: richt\n# the modules are listed by gendoc\ndescription: >-\n  old text\n  more\nlicense:\n  - Apache-2.0\n"
	got, err := SpliceGalaxyDescription(galaxy, GalaxyDescription([]string{"a_mod", "b_mod", "c_mod"}))
	require.NoError(t, err)
	var meta struct {
		Namespace   string   `yaml:"namespace"`
		Description string   `yaml:"description"`
		License     []string `yaml:"license"`
	}
	require.NoError(t, yaml.Unmarshal([]byte(got), &meta))
	assert.Equal(t, "richt", meta.Namespace)
	assert.Equal(t, []string{"Apache-2.0"}, meta.License)
	assert.Equal(t, "Statically linked Go modules that put RPM packages (DNF 4) and systemd services into an exact, "+
		"verified state: a_mod, b_mod, c_mod.", meta.Description)
	assert.Contains(t, got, "# the modules are listed by gendoc\ndescription: >-\n")
	for _, line := range strings.Split(got, "\n") {
		assert.LessOrEqual(t, len(line), Width, line)
	}

	_, err = SpliceGalaxyDescription("namespace: richt\n", "description: x\n")
	assert.ErrorContains(t, err, "description")
}
