package ansible

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// typed is what a Spec's Parse makes of the parameters in these tests.
type typed struct{ Name string }

// A Spec with Parse hands its handler the typed request it parsed, once: the handler reads
// it and never parses again; a Parse error is a validation problem like Check's.
func TestParseHandsTheHandlerItsTypedRequest(t *testing.T) {
	parses := 0
	s := testSpec()
	s.Parse = func(v Values) (any, error) {
		parses++
		if v.String("name") == "refused" {
			return nil, errors.New("name: refused by Parse")
		}
		return typed{Name: v.String("name")}, nil
	}
	var got typed
	h := func(_ context.Context, req *Request) (any, error) {
		var err error
		got, err = Parsed[typed](req)
		return map[string]any{"changed": false}, err
	}
	res := Call(context.Background(), s, map[string]any{"name": "demo"}, false, false, h)
	require.Nil(t, res["failed"], res["msg"])
	assert.Equal(t, typed{Name: "demo"}, got)
	assert.Equal(t, 1, parses, "parsed once")

	res = Call(context.Background(), s, map[string]any{"name": "refused"}, false, false, h)
	assert.Equal(t, true, res["failed"])
	assert.Equal(t, "name: refused by Parse", res["msg"])

	_, err := s.Validate(map[string]any{"name": "refused"})
	assert.EqualError(t, err, "name: refused by Parse", "Validate reports Parse's problem too")
}

// A handler that asks for a typed request its Spec does not parse gets an error, never a
// zero value it could act on.
func TestParsedWithoutParse(t *testing.T) {
	h := func(_ context.Context, req *Request) (any, error) {
		_, err := Parsed[typed](req)
		return nil, err
	}
	res := Call(context.Background(), testSpec(), map[string]any{"name": "demo"}, false, false, h)
	assert.Equal(t, true, res["failed"])
	assert.Contains(t, res["msg"], "demo_mod")
}

// Arguments validated once (Spec.Args) are called any number of times (CallArgs) without
// parsing again, and each call's result is the one Call gives for the same arguments.
func TestCallArgsParsesOnce(t *testing.T) {
	parses := 0
	s := testSpec()
	s.Parse = func(v Values) (any, error) {
		parses++
		return typed{Name: v.String("name")}, nil
	}
	h := func(_ context.Context, req *Request) (any, error) {
		got, err := Parsed[typed](req)
		return map[string]any{"changed": false, "name": got.Name}, err
	}
	raw := map[string]any{"name": "demo"}
	a, err := s.Args(raw)
	require.NoError(t, err)
	first := CallArgs(context.Background(), a, false, false, h)
	second := CallArgs(context.Background(), a, true, false, h)
	assert.Equal(t, 1, parses, "parsed once for both calls")
	assert.Equal(t, "demo", first["name"])
	assert.Equal(t, first, second)
	assert.Equal(t, Call(context.Background(), s, raw, false, false, h), first, "the result Call gives")

	_, err = s.Args(map[string]any{"name": 5, "bogus": true})
	assert.ErrorContains(t, err, "bogus", "invalid arguments are refused when validated, not when called")
}
