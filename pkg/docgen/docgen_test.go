package docgen

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/richt/services/pkg/ansible"
)

func tricky() *ansible.Spec {
	return &ansible.Spec{Name: "demo_mod", Params: []ansible.Param{
		{Name: "name", Kind: ansible.Str, Required: true, Description: []string{
			`The unit, for example C(demo.service); without a type
			suffix C(.service) is added.`,
			`"Quoted: with a colon" and more`,
			`Ends in a colon: like this #not-a-comment`,
			strings.Repeat("word ", 40) + "- dash # hash",
		}},
		{Name: "mode", Kind: ansible.Mode, Default: "0644", Description: []string{`The mode.`}},
		{Name: "timeout", Kind: ansible.Duration, Default: "10m", Description: []string{`yes`}},
		{Name: "flag", Kind: ansible.Bool, Default: false, VersionAdded: "0.2.0", Description: []string{`12 is a number first.`}},
		{Name: "path", Kind: ansible.Path, Description: []string{`A path.`}},
		{Name: "state", Kind: ansible.Str, Default: "on", Choices: []string{"on", "off", "a,b"}, Description: []string{`Choices YAML would read as bools.`}},
		{Name: "items", Kind: ansible.List, Elements: ansible.Dict, Description: []string{`Items.`}, Suboptions: []ansible.Param{
			{Name: "name", Kind: ansible.Str, Required: true, Description: []string{`Its name.`}},
			{Name: "state", Kind: ansible.Str, Default: "present", Choices: []string{"present", "absent"}, Description: []string{`Its state.`}},
		}},
		{Name: "triggers", Kind: ansible.List, Elements: ansible.Raw, Description: []string{`Anything.`}},
		{Name: "probe", Kind: ansible.Dict, Description: []string{`A probe.`}, Suboptions: []ansible.Param{
			{Name: "tcp", Kind: ansible.Str, Description: []string{`HOST:PORT.`}},
		}},
	}}
}

const stub = `# header
DOCUMENTATION = r"""
module: demo_mod
short_description: Demo
options:
  old: {}
attributes:
  check_mode:
    support: full
"""

EXAMPLES = r"""
options:
  untouched: true
"""
`

// What is rendered reads back, through a YAML parser, as exactly the Spec's options.
func TestRenderedOptionsReadBackAsTheSpec(t *testing.T) {
	doc := tricky().Doc()
	block, err := Options(doc)
	require.NoError(t, err)
	out, err := SpliceOptions(stub, block)
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(out, "# header\nDOCUMENTATION = r\"\"\"\nmodule: demo_mod\nshort_description: Demo\noptions:\n"))
	assert.Contains(t, out, "\nattributes:\n  check_mode:\n    support: full\n\"\"\"\n\nEXAMPLES = r\"\"\"\noptions:\n  untouched: true\n")
	assert.NotContains(t, out, "old:")
	for _, line := range strings.Split(out, "\n") {
		assert.LessOrEqual(t, len(line), Width, "wrapped: %q", line)
	}
	got, err := ParseOptions(out)
	require.NoError(t, err)
	assert.Empty(t, Compare(got, doc.Options))
	assert.Contains(t, block, "    type: raw\n    default: \"0644\"\n")
	assert.Contains(t, block, "    type: str\n    default: 10m\n")
	assert.Contains(t, block, "    choices: [\"on\", \"off\", \"a,b\"]\n    default: \"on\"\n")

	again, err := SpliceOptions(out, block)
	require.NoError(t, err)
	assert.Equal(t, out, again, "splicing is idempotent")
}

func TestCompareNamesEveryDifference(t *testing.T) {
	doc := tricky().Doc()
	changed := tricky()
	changed.Params[1].Default = "0600"
	changed.Params[6].Suboptions[1].Choices = []string{"present"}
	changed.Params[0].Description[0] = "Other words."
	diff := Compare(changed.Doc().Options, doc.Options)
	require.Len(t, diff, 3)
	assert.Contains(t, diff[0], "options.name: description")
	assert.Contains(t, diff[1], `options.mode: default: the stub has "0600", the Spec "0644"`)
	assert.Contains(t, diff[2], "options.items.suboptions.state: choices")
	renamed := tricky()
	renamed.Params[2].Name = "deadline"
	assert.Equal(t, []string{"options: the stub has [name mode deadline flag path state items triggers probe], the Spec [name mode timeout flag path state items triggers probe]"},
		Compare(renamed.Doc().Options, doc.Options))
}

func TestOptionsRefusesIncompleteDocumentation(t *testing.T) {
	for name, p := range map[string]ansible.Param{
		"no description":    {Name: "x", Kind: ansible.Str},
		"list without kind": {Name: "x", Kind: ansible.List, Description: []string{"X."}},
		"no kind":           {Name: "x", Description: []string{"X."}},
		"suboptions of str": {Name: "x", Kind: ansible.Str, Description: []string{"X."}, Suboptions: []ansible.Param{{Name: "y", Kind: ansible.Str, Description: []string{"Y."}}}},
	} {
		_, err := Options((&ansible.Spec{Name: "m", Params: []ansible.Param{p}}).Doc())
		assert.Error(t, err, name)
	}
}

func TestSpliceOptionsNeedsAnOptionsKey(t *testing.T) {
	_, err := SpliceOptions("DOCUMENTATION = r\"\"\"\nmodule: x\n\"\"\"\n", "options:\n")
	assert.ErrorIs(t, err, ErrNoOptions)
	_, err = SpliceOptions("no documentation here", "options:\n")
	assert.Error(t, err)
}

func TestRoutingKeepsTheOtherKeys(t *testing.T) {
	runtime := "---\nrequires_ansible: \">=2.14.0\"\n"
	added := SpliceRouting(runtime, Routing([]string{"a_mod", "b_mod"}))
	assert.Equal(t, runtime+`plugin_routing:
  # Written by `+"`go run ./cmd/gendoc`"+` from modules/*/module.go: every module runs through
  # the fast path's one action plugin (plugins/action/fastpath.py).
  modules:
    a_mod:
      action_plugin: richt.services.fastpath
    b_mod:
      action_plugin: richt.services.fastpath
`, added)
	moved := SpliceRouting(added+"action_groups:\n  all: [a_mod]\n", Routing([]string{"a_mod"}))
	assert.Equal(t, runtime+`plugin_routing:
  # Written by `+"`go run ./cmd/gendoc`"+` from modules/*/module.go: every module runs through
  # the fast path's one action plugin (plugins/action/fastpath.py).
  modules:
    a_mod:
      action_plugin: richt.services.fastpath
action_groups:
  all: [a_mod]
`, moved)
}
