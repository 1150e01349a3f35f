package ansible

import (
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

type demoItem struct {
	Name    string  `ansible:"name"`
	Version *string `ansible:"version"`
	State   string  `ansible:"state"`
}

type demoParams struct {
	Name      string         `ansible:"name"`
	State     string         `ansible:"state"`
	Enabled   *bool          `ansible:"enabled"`
	Timeout   time.Duration  `ansible:"timeout"`
	Mode      os.FileMode    `ansible:"mode"`
	Password  *string        `ansible:"password"`
	Content   *string        `ansible:"content"`
	Sensitive bool           `ansible:"sensitive"`
	Triggers  []any          `ansible:"triggers"`
	Items     []demoItem     `ansible:"items"`
	Probe     map[string]any `ansible:"probe"`
	Path      string         `ansible:"path"`
	Untagged  int
}

func decodeSpec() *Spec {
	s := testSpec()
	s.Params = append(s.Params,
		Param{Name: "items", Kind: List, Elements: Dict, Suboptions: []Param{
			{Name: "name", Kind: Str, Required: true},
			{Name: "version", Kind: Str},
			{Name: "state", Kind: Str, Default: "present", Choices: []string{"present", "absent"}},
		}},
		Param{Name: "probe", Kind: Dict},
		Param{Name: "path", Kind: Path},
	)
	return s
}

func TestDecode(t *testing.T) {
	s := decodeSpec()
	v, err := s.Validate(map[string]any{"name": "x", "enabled": "no", "mode": "0600", "path": 12.0,
		"items": []any{map[string]any{"name": "a", "version": "1"}, map[string]any{"name": "b", "state": "absent"}},
		"probe": map[string]any{"tcp": "h:1"}})
	require.NoError(t, err)
	var p demoParams
	require.NoError(t, s.Decode(v, &p))
	one := "1"
	assert.Equal(t, demoParams{Name: "x", State: "present", Enabled: new(bool), Timeout: 5 * time.Second, Mode: 0o600,
		Items: []demoItem{{Name: "a", Version: &one, State: "present"}, {Name: "b", State: "absent"}},
		Probe: map[string]any{"tcp": "h:1"}, Path: "12"}, p)
	assert.Nil(t, p.Password, "omitted stays nil")

	v, err = s.Validate(map[string]any{"name": "x", "items": []any{}})
	require.NoError(t, err)
	p = demoParams{}
	require.NoError(t, s.Decode(v, &p))
	assert.NotNil(t, p.Items, "an empty list is given, not omitted")
	assert.Empty(t, p.Items)
}

func TestDecodeItemProblems(t *testing.T) {
	s := decodeSpec()
	for _, c := range []struct {
		items []any
		msg   string
		index int
	}{
		{[]any{"app"}, "items[0]: expected a mapping with name, version and state", 0},
		{[]any{map[string]any{"name": "a"}, map[string]any{"name": "b", "vers": 1, "bad": 2}}, `items[1]: unsupported key "bad" (supported: name, version, state)`, 1},
		{[]any{map[string]any{"name": 1}}, "items[0].name: expected a string", 0},
		{[]any{map[string]any{"version": "1"}}, "items[0].name: is required", 0},
		{[]any{map[string]any{"name": "a", "version": nil, "state": "gone"}}, "items[0].state: value of state must be one of: present, absent, got: gone", 0},
	} {
		v, err := s.Validate(map[string]any{"name": "x", "items": c.items})
		require.NoError(t, err)
		var p demoParams
		err = s.Decode(v, &p)
		var ie *ItemError
		require.ErrorAs(t, err, &ie, c.msg)
		assert.Equal(t, c.msg, err.Error())
		assert.Equal(t, c.index, ie.Index)
		assert.Len(t, p.Items, c.index, "the items before the bad one are decoded")
		assert.Equal(t, "x", p.Name, "the other parameters are decoded")
	}
}

// A struct that does not match the Spec fails on any input, naming the field.
func TestDecodeRefusesMismatchedStructs(t *testing.T) {
	s := decodeSpec()
	v, err := s.Validate(map[string]any{"name": "x"})
	require.NoError(t, err)
	var missing struct {
		Name string `ansible:"name"`
	}
	assert.ErrorContains(t, s.Decode(v, &missing), "has no field tagged `ansible:\"state\"`")
	var wrongType struct {
		Name  string `ansible:"name"`
		Other string `ansible:"other"`
	}
	small := &Spec{Name: "demo_mod", Params: []Param{{Name: "name", Kind: Str}, {Name: "other", Kind: Bool}}}
	assert.ErrorContains(t, small.Decode(v, &wrongType), "parameter other is a bool: the field must be bool, not string")
	var wrong struct {
		demoParams
		Timeout string `ansible:"timeout"`
	}
	assert.ErrorContains(t, s.Decode(v, &wrong), "has no field tagged `ansible:\"name\"`", "tags of embedded structs are not searched")
	var stray struct {
		Name string `ansible:"name"`
		Nope string `ansible:"nope"`
	}
	s.Params = s.Params[:1]
	assert.ErrorContains(t, s.Decode(v, &stray), `field tagged "nope"`)
	assert.ErrorContains(t, s.Decode(v, stray), "need a pointer to a struct")
	var item struct {
		Name  string `ansible:"name"`
		Items []struct {
			Name string `ansible:"name"`
		} `ansible:"items"`
	}
	s = decodeSpec()
	s.Params = []Param{s.Params[0], s.Params[len(s.Params)-3]}
	assert.ErrorContains(t, s.Decode(v, &item), "has no field tagged `ansible:\"version\"`", "items are checked too")
}

// TestDecodeSuboptionDefaults: a suboption's Default is in its raw form, as a top-level
// parameter's is (Param.Default), and goes through the same conversion as a value given
// in the item, so a Mode or Duration default decodes into its typed field.
func TestDecodeSuboptionDefaults(t *testing.T) {
	type item struct {
		Name    string        `ansible:"name"`
		Mode    *os.FileMode  `ansible:"mode"`
		Perm    os.FileMode   `ansible:"perm"`
		Timeout time.Duration `ansible:"timeout"`
		Enabled bool          `ansible:"enabled"`
		State   string        `ansible:"state"`
	}
	type params struct {
		Items []item `ansible:"items"`
	}
	s := &Spec{Name: "demo_mod", Params: []Param{{Name: "items", Kind: List, Elements: Dict, Suboptions: []Param{
		{Name: "name", Kind: Str, Required: true},
		{Name: "mode", Kind: Mode, Default: "0644"},
		{Name: "perm", Kind: Mode, Default: 384.0}, // 0600 as JSON reads a number
		{Name: "timeout", Kind: Duration, Default: "30s"},
		{Name: "enabled", Kind: Bool, Default: "yes"},
		{Name: "state", Kind: Str, Default: "present", Choices: []string{"present", "absent"}},
	}}}}
	mode := func(m os.FileMode) *os.FileMode { return &m }
	cases := []struct {
		name string
		item map[string]any
		want item
	}{
		{name: "every default", item: map[string]any{"name": "a"},
			want: item{Name: "a", Mode: mode(0o644), Perm: 0o600, Timeout: 30 * time.Second, Enabled: true, State: "present"}},
		{name: "null counts as omitted", item: map[string]any{"name": "a", "mode": nil, "timeout": nil},
			want: item{Name: "a", Mode: mode(0o644), Perm: 0o600, Timeout: 30 * time.Second, Enabled: true, State: "present"}},
		{name: "every value given", item: map[string]any{"name": "a", "mode": "0640", "perm": 256.0, "timeout": "1m", "enabled": false, "state": "absent"},
			want: item{Name: "a", Mode: mode(0o640), Perm: 0o400, Timeout: time.Minute, State: "absent"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			v, err := s.Validate(map[string]any{"items": []any{c.item}})
			require.NoError(t, err)
			var p params
			require.NoError(t, s.Decode(v, &p))
			assert.Equal(t, []item{c.want}, p.Items)
		})
	}
}
