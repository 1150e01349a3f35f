package ansible

import (
	"fmt"
	"os"
	"reflect"
	"sort"
	"strings"
	"time"
)

// Decode copies validated values into the struct dst points to: the field tagged
// `ansible:"NAME"` receives parameter NAME. A pointer field stays nil when the parameter
// was omitted and has no default, which tells "omitted" from a zero value.
//
// Field types by kind: Str and Path string, Bool bool, Duration time.Duration, Mode
// os.FileMode, Raw any, List []any, Dict map[string]any (or Values). A Dict may also decode into a
// struct, and a List of Dict into a slice of structs: then its keys are checked against
// the Suboptions (see ItemError).
//
// Every parameter needs a field and every tagged field a parameter of a fitting kind; a
// mismatch is an error naming both, whatever the input, so any test of a module catches it.
func (s *Spec) Decode(v Values, dst any) error {
	rv := reflect.ValueOf(dst)
	if rv.Kind() != reflect.Pointer || rv.IsNil() || rv.Elem().Kind() != reflect.Struct {
		return fmt.Errorf("decode %s parameters: need a pointer to a struct, got %T", s.Name, dst)
	}
	fields, err := fieldsOf(s.Name, s.Params, rv.Elem().Type())
	if err != nil {
		return err
	}
	var itemErr error
	for i, p := range s.Params {
		x, ok := v[p.Name]
		if !ok {
			continue
		}
		err := assign(p, x, rv.Elem().Field(fields[i]))
		if _, isItem := err.(*ItemError); isItem {
			if itemErr == nil {
				itemErr = err
			}
			continue
		}
		if err != nil {
			return fmt.Errorf("decode %s parameter %s: %w", s.Name, p.Name, err)
		}
	}
	return itemErr
}

// Decode is the request's parameters decoded as Spec.Decode does.
func (r *Request) Decode(dst any) error {
	if r.spec == nil {
		return fmt.Errorf("decode parameters: the request has no spec")
	}
	return r.spec.Decode(r.Params, dst)
}

// ItemError is a malformed item of a List of Dict: not a mapping, an unknown key, a value
// of the wrong type, a missing required key or a value outside the choices. Its message
// names the item as PARAM[INDEX]. Decode still fills the list with the items before it,
// so a module can check those first and report the first problem in list order.
type ItemError struct {
	Param string
	Index int
	Err   error
}

func (e *ItemError) Error() string { return e.Err.Error() }
func (e *ItemError) Unwrap() error { return e.Err }

// fieldsOf maps each parameter (by index) to its field, checking that every parameter has
// exactly one field of a fitting type and every tagged field names a parameter.
func fieldsOf(what string, params []Param, t reflect.Type) ([]int, error) {
	byName := map[string]int{}
	for i := 0; i < t.NumField(); i++ {
		tag, ok := t.Field(i).Tag.Lookup("ansible")
		if !ok {
			continue
		}
		if _, dup := byName[tag]; dup {
			return nil, fmt.Errorf("decode %s: two fields of %s are tagged %q", what, t, tag)
		}
		byName[tag] = i
	}
	out := make([]int, len(params))
	for i, p := range params {
		f, ok := byName[p.Name]
		if !ok {
			return nil, fmt.Errorf("decode %s: %s has no field tagged `ansible:%q`", what, t, p.Name)
		}
		if err := fits(what, p, t.Field(f).Type); err != nil {
			return nil, fmt.Errorf("decode %s: field %s.%s: %w", what, t, t.Field(f).Name, err)
		}
		out[i] = f
		delete(byName, p.Name)
	}
	for tag := range byName {
		return nil, fmt.Errorf("decode %s: field tagged %q of %s is not a parameter", what, tag, t)
	}
	return out, nil
}

var (
	anyType      = reflect.TypeFor[any]()
	anyListType  = reflect.TypeFor[[]any]()
	anyMapType   = reflect.TypeFor[map[string]any]()
	valuesType   = reflect.TypeFor[Values]()
	durationType = reflect.TypeFor[time.Duration]()
	modeType     = reflect.TypeFor[os.FileMode]()
)

// fits checks that a field of type t can hold parameter p.
func fits(what string, p Param, t reflect.Type) error {
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	var want reflect.Type
	switch p.Kind {
	case Str, Path:
		want = reflect.TypeFor[string]()
	case Bool:
		want = reflect.TypeFor[bool]()
	case Duration:
		want = durationType
	case Mode:
		want = modeType
	case Raw:
		want = anyType
	case List:
		if t.Kind() == reflect.Slice && t.Elem().Kind() == reflect.Struct && p.Elements == Dict {
			_, err := fieldsOf(what+" "+p.Name, p.Suboptions, t.Elem())
			return err
		}
		want = anyListType
	case Dict:
		if t.Kind() == reflect.Struct {
			_, err := fieldsOf(what+" "+p.Name, p.Suboptions, t)
			return err
		}
		if t == valuesType {
			// The mapping as given, with Values' accessors.
			return nil
		}
		want = anyMapType
	default:
		return fmt.Errorf("parameter %s has no kind", p.Name)
	}
	if t != want {
		return fmt.Errorf("parameter %s is a %s: the field must be %s, not %s", p.Name, p.Kind, want, t)
	}
	return nil
}

// assign sets field f to the converted value x of parameter p.
func assign(p Param, x any, f reflect.Value) error {
	if f.Kind() == reflect.Pointer {
		ptr := reflect.New(f.Type().Elem())
		if err := assign(p, x, ptr.Elem()); err != nil {
			return err
		}
		f.Set(ptr)
		return nil
	}
	switch {
	case p.Kind == List && f.Kind() == reflect.Slice && f.Type().Elem().Kind() == reflect.Struct:
		items, _ := x.([]any)
		out := reflect.MakeSlice(f.Type(), 0, len(items))
		defer func() { f.Set(out) }()
		for i, item := range items {
			ref := fmt.Sprintf("%s[%d]", p.Name, i)
			elem := reflect.New(f.Type().Elem()).Elem()
			if err := decodeItem(ref, p.Suboptions, item, elem); err != nil {
				return &ItemError{Param: p.Name, Index: i, Err: err}
			}
			out = reflect.Append(out, elem)
		}
		return nil
	case p.Kind == Dict && f.Kind() == reflect.Struct:
		if err := decodeItem(p.Name, p.Suboptions, x, f); err != nil {
			return &ItemError{Param: p.Name, Index: -1, Err: err}
		}
		return nil
	}
	v := reflect.ValueOf(x)
	if x == nil || !v.Type().AssignableTo(f.Type()) {
		return fmt.Errorf("value of type %T does not fit %s", x, f.Type())
	}
	f.Set(v)
	return nil
}

// decodeItem checks one mapping against its suboptions and fills the struct dst. Its
// messages start with ref (packages[0]) and name the key (packages[0].state).
func decodeItem(ref string, opts []Param, item any, dst reflect.Value) error {
	names := make([]string, len(opts))
	for i, o := range opts {
		names[i] = o.Name
	}
	m, ok := item.(map[string]any)
	if !ok {
		return fmt.Errorf("%s: expected a mapping with %s", ref, andList(names))
	}
	var unknown []string
	for k := range m {
		if !contains(names, k) {
			unknown = append(unknown, k)
		}
	}
	if len(unknown) > 0 {
		sort.Strings(unknown)
		return fmt.Errorf("%s: unsupported key %q (supported: %s)", ref, unknown[0], strings.Join(names, ", "))
	}
	fields, err := fieldsOf(ref, opts, dst.Type())
	if err != nil {
		return err
	}
	for i, o := range opts {
		x := m[o.Name]
		if x == nil {
			if o.Required {
				return fmt.Errorf("%s.%s: is required", ref, o.Name)
			}
			// The default is in its raw form (Param.Default): it is converted as a
			// given value is, as a top-level parameter's default is.
			x = o.Default
		}
		if x == nil {
			continue
		}
		cx, err := itemValue(ref, o, x)
		if err != nil {
			return err
		}
		x = cx
		if len(o.Choices) > 0 {
			if s, _ := x.(string); !contains(o.Choices, s) {
				return fmt.Errorf("%s.%s: value of %s must be one of: %s, got: %s", ref, o.Name, o.Name, strings.Join(o.Choices, ", "), describe(o, s))
			}
		}
		if err := assign(o, x, dst.Field(fields[i])); err != nil {
			return err
		}
	}
	return nil
}

// itemValue converts one value of a mapping. Strings are taken as they are, with no
// conversion from numbers: a key of a mapping is checked strictly.
func itemValue(ref string, o Param, x any) (any, error) {
	switch o.Kind {
	case Str, Path:
		s, ok := x.(string)
		if !ok {
			return nil, fmt.Errorf("%s.%s: expected a string", ref, o.Name)
		}
		return s, nil
	}
	cx, err := convert(o, x)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", ref, err)
	}
	return cx, nil
}

// andList writes "a, b and c".
func andList(l []string) string {
	if len(l) < 2 {
		return strings.Join(l, "")
	}
	return strings.Join(l[:len(l)-1], ", ") + " and " + l[len(l)-1]
}

// PlainlyFalse reports whether a raw value is one of Ansible's spellings of false (false,
// 0, "no", "false", "off", "0", "n", "f" in any case). Modules that must hide something
// unless told plainly not to (a sensitive flag) use it on raw input, before validation.
func PlainlyFalse(v any) bool {
	switch x := v.(type) {
	case bool:
		return !x
	case float64:
		return x == 0
	case string:
		switch strings.ToLower(x) {
		case "no", "false", "off", "0", "n", "f":
			return true
		}
	}
	return false
}

// ParseInto sets s.Parse to decode the values into a P (Decode) and hand them to parse,
// which checks what no table can express and returns the module's typed request.
func ParseInto[P, T any](s *Spec, parse func(P) (T, error)) {
	s.Parse = func(v Values) (any, error) {
		var p P
		if err := s.Decode(v, &p); err != nil {
			return nil, err
		}
		return parse(p)
	}
}
