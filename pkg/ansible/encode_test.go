package ansible

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestArgsOf(t *testing.T) {
	s := &Spec{Name: "m", Params: []Param{
		{Name: "unit", Kind: Str, Required: true},
		{Name: "reload", Kind: Bool, Default: true},
		{Name: "state", Kind: Str, Default: "present", Choices: []string{"present", "absent"}},
		{Name: "mode", Kind: Raw},
		{Name: "health", Kind: Dict},
		{Name: "items", Kind: List, Elements: Dict, Suboptions: []Param{{Name: "name", Kind: Str}, {Name: "version", Kind: Str}}},
	}}
	type item struct {
		Name    string  `ansible:"name"`
		Version *string `ansible:"version"`
	}
	type args struct {
		Unit   string  `ansible:"unit"`
		Reload bool    `ansible:"reload"`
		State  *string `ansible:"state"`
		Mode   any     `ansible:"mode"`
		Items  []item  `ansible:"items"`
		Health any     `ansible:"health"`
		skip   int
	}
	v := "1.0"
	a, err := s.ArgsOf(args{Unit: "demo", Items: []item{{Name: "a"}, {Name: "b", Version: &v}}, Health: Values(nil)})
	require.NoError(t, err)
	assert.Equal(t, map[string]any{"unit": "demo", "reload": false,
		"items": []any{map[string]any{"name": "a"}, map[string]any{"name": "b", "version": "1.0"}}}, a.raw,
		"a zero value is given (reload: false), a nil one omitted (state, mode)")
	assert.Equal(t, "present", a.vals["state"], "the omitted parameter's default")
	a, err = s.ArgsOf(args{Unit: "demo", Health: Values{"tcp": ":80"}})
	require.NoError(t, err)
	assert.Equal(t, map[string]any{"tcp": ":80"}, a.raw["health"], "a Values given as the mapping JSON decodes")
	bogus := "bogus"
	_, err = s.ArgsOf(args{Unit: "demo", State: &bogus})
	assert.ErrorContains(t, err, "state", "validated as Args validates")
	_, err = s.ArgsOf(3)
	assert.ErrorContains(t, err, "need a struct")
}
