package ansible

import (
	"fmt"
	"reflect"
	"strings"
)

// ArgsOf is Args for arguments given as a struct instead of a map: the field tagged
// `ansible:"NAME"` is parameter NAME. A nil pointer, slice, map or interface is the
// parameter omitted (its default applies); any other value is given, a zero one too
// (false, ""). A pointer gives what it points to, a struct (or a slice of structs, for a
// List of Dict) gives a mapping (a list of mappings) the same way, and a value of any
// other type is given as it is. A module that composes others builds its steps'
// arguments so, in the types it checked them in, and the step validates and parses them
// once (Args).
func (s *Spec) ArgsOf(params any) (Args, error) {
	raw, err := encodeStruct(reflect.ValueOf(params))
	if err != nil {
		return Args{}, fmt.Errorf("internal error: %s's arguments: %w", s.Name, err)
	}
	return s.Args(raw)
}

// encodeStruct is the mapping of struct v's tagged fields (encodeValue).
func encodeStruct(v reflect.Value) (map[string]any, error) {
	for v.Kind() == reflect.Pointer {
		if v.IsNil() {
			return nil, fmt.Errorf("a nil %s", v.Type())
		}
		v = v.Elem()
	}
	if v.Kind() != reflect.Struct {
		return nil, fmt.Errorf("need a struct, got %s", v.Type())
	}
	out := map[string]any{}
	t := v.Type()
	for i := range t.NumField() {
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("ansible"), ",")
		if name == "" || !t.Field(i).IsExported() {
			continue
		}
		x, given, err := encodeValue(v.Field(i))
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		if given {
			out[name] = x
		}
	}
	return out, nil
}

// encodeValue is v as a raw argument; given is false for a nil pointer, slice, map or
// interface.
func encodeValue(v reflect.Value) (x any, given bool, err error) {
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if v.IsNil() {
			return nil, false, nil
		}
		return encodeValue(v.Elem())
	case reflect.Map:
		if v.IsNil() {
			return nil, false, nil
		}
		if v.Type().ConvertibleTo(anyMapType) {
			// Values as JSON decodes a mapping, the type the Spec validates.
			return v.Convert(anyMapType).Interface(), true, nil
		}
	case reflect.Struct:
		m, err := encodeStruct(v)
		return m, err == nil, err
	case reflect.Slice:
		if v.IsNil() {
			return nil, false, nil
		}
		if v.Type().Elem().Kind() == reflect.Struct {
			items := make([]any, v.Len())
			for i := range v.Len() {
				if items[i], err = encodeStruct(v.Index(i)); err != nil {
					return nil, false, fmt.Errorf("[%d]: %w", i, err)
				}
			}
			return items, true, nil
		}
	}
	return v.Interface(), true, nil
}
