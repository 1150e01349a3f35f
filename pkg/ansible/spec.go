package ansible

import (
	"fmt"
	"math"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/richt/services/pkg/filemode"
	"github.com/richt/services/pkg/timeout"
)

// Kind is the type of a parameter, with Ansible's conversion rules.
type Kind int

// Parameter kinds. Conversions follow Ansible's argument_spec: a str accepts numbers, a
// bool accepts yes/no/true/false/on/off/1/0, a list accepts one item or a list. The zero
// Kind is no kind, so a Param or an Elements left unset is an error, not a silent str.
const (
	Str      Kind = iota + 1 // a string; numbers are converted
	Bool                     // a boolean with Ansible's spellings
	List                     // a list of any values; a single value becomes a one-item list
	Raw                      // any JSON value, passed through
	Duration                 // a positive Go duration string, parsed by package timeout
	Mode                     // a file mode: octal string ("0644") or an integer
	Path                     // a file path: converted as Str (no ~ expansion)
	Dict                     // a JSON object
)

// String is the kind's name as messages show it.
func (k Kind) String() string {
	switch k {
	case Str:
		return "str"
	case Bool:
		return "bool"
	case List:
		return "list"
	case Raw:
		return "raw"
	case Duration:
		return "duration"
	case Mode:
		return "mode"
	case Path:
		return "path"
	case Dict:
		return "dict"
	}
	return fmt.Sprintf("kind(%d)", int(k))
}

// DocType is the kind's name among Ansible's option types, as DOCUMENTATION states it: a
// Duration is written as a string (str), a Mode as a string or a number (raw).
func (k Kind) DocType() string {
	switch k {
	case Duration:
		return "str"
	case Mode:
		return "raw"
	}
	return k.String()
}

// Param declares one module parameter, with its documentation: the options of the
// module's DOCUMENTATION are written from it (`go run ./cmd/gendoc`).
type Param struct {
	Name string
	Kind Kind
	// Elements is the kind of a List's items, as the documentation states it. Items are
	// not converted one by one; a List of Dict's items are checked by Decode.
	Elements Kind
	Required bool
	// Default is used when the parameter is omitted, in the parameter's raw form (a string
	// for Duration and Mode) so that it goes through the same conversion as user input.
	Default any
	Choices []string
	// NoLog marks a secret: its value never appears in any output.
	NoLog bool
	// Summarize replaces the value in invocation.module_args, for parameters whose value
	// may hold anything (triggers are other tasks' results) and must never be echoed.
	Summarize func(v any) any
	// Description documents the parameter, one paragraph per item, in Ansible's markup
	// (I(option), C(code)). Its first paragraph is also the flag's usage.
	Description []string
	// VersionAdded is the collection version that added the parameter, when it came
	// later than its module.
	VersionAdded string
	// Suboptions are the keys of a Dict, or of each item of a List of Dict. They are
	// documented; Decode checks them when the parameter decodes into a struct.
	Suboptions []Param
}

// RequiredIf requires the parameters in Requires when Param equals Value.
type RequiredIf struct {
	Param    string
	Value    string
	Requires []string
}

// Spec is a module's complete parameter contract.
type Spec struct {
	Name              string
	Params            []Param
	MutuallyExclusive [][]string
	RequiredIf        []RequiredIf
	// NoLogWhen names further secret parameters depending on the input (for example the
	// content of a file marked sensitive). It sees the raw, unvalidated input, so it must
	// tolerate any types there.
	NoLogWhen func(raw map[string]any) []string
	// NoLogValues returns further values to mask wherever they appear, for secrets that
	// are not whole parameters (the content of one sensitive item of a list).
	NoLogValues func(raw map[string]any) []string
	// Check runs last, on converted values, for rules a table cannot express.
	Check func(v Values) error
	// Parse, when set, runs after Check once every other rule has passed, and turns the
	// converted values into the module's typed request, which the handler reads with
	// Parsed: parameters are parsed once, where they are validated. An error is a
	// validation problem, as Check's is.
	Parse func(v Values) (any, error)
}

func (s *Spec) param(name string) (*Param, bool) {
	for i := range s.Params {
		if s.Params[i].Name == name {
			return &s.Params[i], true
		}
	}
	return nil, false
}

func (s *Spec) names() []string {
	out := make([]string, 0, len(s.Params))
	for _, p := range s.Params {
		out = append(out, p.Name)
	}
	sort.Strings(out)
	return out
}

// ValidationError is a parameter problem found before anything was observed or changed.
type ValidationError struct{ Problems []string }

// Error joins every problem, as Ansible does in one msg.
func (e *ValidationError) Error() string { return strings.Join(e.Problems, "; ") }

// Validate converts raw parameters into Values, or reports every problem at once.
// Keys starting with "_ansible_" are Ansible's own and are ignored here.
func (s *Spec) Validate(raw map[string]any) (Values, error) {
	vals, _, err := s.ValidateParse(raw)
	return vals, err
}

// ValidateParse is Validate that also returns what Parse made of the values (nil when the
// Spec has no Parse).
func (s *Spec) ValidateParse(raw map[string]any) (Values, any, error) {
	var problems []string
	var unknown []string
	for k := range raw {
		if strings.HasPrefix(k, "_ansible_") {
			continue
		}
		if _, ok := s.param(k); !ok {
			unknown = append(unknown, k)
		}
	}
	if len(unknown) > 0 {
		sort.Strings(unknown)
		problems = append(problems, fmt.Sprintf("Unsupported parameters for (%s) module: %s. Supported parameters include: %s.",
			s.Name, strings.Join(unknown, ", "), strings.Join(s.names(), ", ")))
	}

	vals := Values{}
	var missing []string
	for _, p := range s.Params {
		v, present := raw[p.Name]
		if !present || v == nil {
			if p.Required {
				missing = append(missing, p.Name)
				continue
			}
			if p.Default == nil {
				continue
			}
			v = p.Default
		}
		cv, err := convert(p, v)
		if err != nil {
			problems = append(problems, err.Error())
			continue
		}
		if len(p.Choices) > 0 {
			sv, _ := cv.(string)
			if !contains(p.Choices, sv) {
				problems = append(problems, fmt.Sprintf("value of %s must be one of: %s, got: %s",
					p.Name, strings.Join(p.Choices, ", "), describe(p, sv)))
				continue
			}
		}
		vals[p.Name] = cv
	}
	if len(missing) > 0 {
		problems = append(problems, "missing required arguments: "+strings.Join(missing, ", "))
	}
	for _, group := range s.MutuallyExclusive {
		var set []string
		for _, n := range group {
			if _, ok := raw[n]; ok && raw[n] != nil {
				set = append(set, n)
			}
		}
		if len(set) > 1 {
			problems = append(problems, "parameters are mutually exclusive: "+strings.Join(group, "|"))
		}
	}
	for _, r := range s.RequiredIf {
		if sv, ok := vals[r.Param].(string); !ok || sv != r.Value {
			continue
		}
		var miss []string
		for _, n := range r.Requires {
			if !vals.IsSet(n) {
				miss = append(miss, n)
			}
		}
		if len(miss) > 0 {
			problems = append(problems, fmt.Sprintf("%s is %s but all of the following are missing: %s",
				r.Param, r.Value, strings.Join(miss, ", ")))
		}
	}
	if len(problems) == 0 && s.Check != nil {
		if err := s.Check(vals); err != nil {
			problems = append(problems, err.Error())
		}
	}
	var parsed any
	if len(problems) == 0 && s.Parse != nil {
		var err error
		if parsed, err = s.Parse(vals); err != nil {
			problems = append(problems, err.Error())
		}
	}
	if len(problems) > 0 {
		return nil, nil, &ValidationError{Problems: problems}
	}
	return vals, parsed, nil
}

// describe shows a bad value in a message unless the parameter is secret.
func describe(p Param, s string) string {
	if p.NoLog {
		return Masked
	}
	return s
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func typeName(v any) string {
	switch v.(type) {
	case string:
		return "str"
	case bool:
		return "bool"
	case float64, int, int64:
		return "number"
	case []any:
		return "list"
	case map[string]any:
		return "dict"
	case nil:
		return "null"
	}
	return fmt.Sprintf("%T", v)
}

func convert(p Param, v any) (any, error) {
	bad := func(why string) error {
		return fmt.Errorf("argument '%s' is of type %s and %s", p.Name, typeName(v), why)
	}
	switch p.Kind {
	case Str:
		switch x := v.(type) {
		case string:
			return x, nil
		case float64:
			return strconv.FormatFloat(x, 'f', -1, 64), nil
		}
		return nil, bad("cannot be converted to str")
	case Bool:
		return toBool(v, p)
	case List:
		if x, ok := v.([]any); ok {
			return x, nil
		}
		if _, ok := v.(map[string]any); ok && p.Elements == Dict {
			// A list of mappings given one mapping (processes: {unit: demo}): taken as a
			// list of one it hides a YAML indentation slip, and the keys the user meant as
			// items would be read as one item's.
			return nil, fmt.Errorf("argument '%s' is a mapping, and a list of mappings is expected: write each item under a dash (%s:\n  - KEY: VALUE)", p.Name, p.Name)
		}
		return []any{v}, nil
	case Raw:
		return v, nil
	case Path:
		return convert(Param{Name: p.Name, Kind: Str}, v)
	case Dict:
		if x, ok := v.(map[string]any); ok {
			return x, nil
		}
		return nil, bad("cannot be converted to dict")
	case Duration:
		// A number is seconds (timeout: 20); a string a number of seconds or a Go duration.
		s, ok := v.(string)
		if x, isNumber := v.(float64); isNumber {
			s, ok = strconv.FormatFloat(x, 'f', -1, 64), true
		}
		if !ok {
			return nil, bad("must be a number of seconds (20) or a duration string such as 5s or 1m30s")
		}
		d, err := timeout.Parse(s)
		if err != nil {
			return nil, fmt.Errorf("argument '%s': %w", p.Name, err)
		}
		return d, nil
	case Mode:
		return toMode(v, p)
	}
	return nil, fmt.Errorf("argument '%s' has an unknown kind %v", p.Name, p.Kind)
}

func toBool(v any, p Param) (any, error) {
	switch x := v.(type) {
	case bool:
		return x, nil
	case float64:
		switch x {
		case 1:
			return true, nil
		case 0:
			return false, nil
		}
	case string:
		switch strings.ToLower(x) {
		case "yes", "true", "on", "1", "y", "t":
			return true, nil
		case "no", "false", "off", "0", "n", "f":
			return false, nil
		}
		return nil, fmt.Errorf("argument '%s' is of type str and the value %q is not a valid boolean (use true or false)", p.Name, describe(p, x))
	}
	return nil, fmt.Errorf("argument '%s' is of type %s and cannot be converted to bool", p.Name, typeName(v))
}

// toMode accepts an octal string ("0644", "644") or a number. A number is taken as the
// mode's value, as Ansible does: YAML reads an unquoted 0644 as octal already.
func toMode(v any, p Param) (any, error) {
	var m uint64
	switch x := v.(type) {
	case string:
		n, err := strconv.ParseUint(x, 8, 32)
		if err != nil || x == "" {
			return nil, fmt.Errorf("argument '%s': %q is not an octal file mode such as \"0644\"", p.Name, x)
		}
		m = n
	case float64:
		if x < 0 || x != math.Trunc(x) {
			return nil, fmt.Errorf("argument '%s': %v is not a file mode", p.Name, x)
		}
		m = uint64(x)
		if err := decimalMode(p.Name, m); err != nil {
			return nil, err
		}
	default:
		return nil, fmt.Errorf("argument '%s' is of type %s and cannot be converted to a file mode", p.Name, typeName(v))
	}
	if m > 0o7777 {
		return nil, fmt.Errorf("argument '%s': %04o has bits beyond 07777", p.Name, m)
	}
	return filemode.FromUnix(uint32(m)), nil
}

// decimalMode refuses a number that reads like an octal mode written without its leading
// 0 or quotes (644, 600, 755): YAML reads it as decimal, and as a mode it means something
// else (644 is 01204: the sticky bit, no read for others). Such a number is refused with
// the quoted form to write, not explained as the bits it happens to set. A number whose
// decimal reading is a mode the modules accept stays accepted: that is how YAML reads an
// unquoted 0644 (420), and Ansible's own modules take it so.
func decimalMode(name string, m uint64) error {
	digits := strconv.FormatUint(m, 10)
	if len(digits) < 3 || len(digits) > 4 || strings.Trim(digits, "01234567") != "" {
		return nil
	}
	if m <= 0o7777 && m&0o7000 == 0 && m&0o022 == 0 {
		return nil
	}
	quoted := digits
	if len(quoted) == 3 {
		quoted = "0" + quoted
	}
	return fmt.Errorf("argument '%s': %s was read as the decimal number %s (YAML reads a number without a leading 0 as decimal), which as a mode is %04o; quote it: '%s'",
		name, digits, digits, m, quoted)
}

// Values are validated, converted parameters. Optional parameters without a default are
// absent, so IsSet tells "omitted" from "false".
type Values map[string]any

// IsSet reports whether the parameter was given or has a default.
func (v Values) IsSet(name string) bool { _, ok := v[name]; return ok }

// String returns a Str parameter, or "" when unset.
func (v Values) String(name string) string { s, _ := v[name].(string); return s }

// Bool returns a Bool parameter, or false when unset.
func (v Values) Bool(name string) bool { b, _ := v[name].(bool); return b }

// OptBool returns a Bool parameter as a pointer, nil when omitted.
func (v Values) OptBool(name string) *bool {
	b, ok := v[name].(bool)
	if !ok {
		return nil
	}
	return &b
}

// List returns a List parameter, or nil when unset.
func (v Values) List(name string) []any { l, _ := v[name].([]any); return l }

// Raw returns a parameter as given.
func (v Values) Raw(name string) any { return v[name] }

// Duration returns a Duration parameter, or 0 when unset.
func (v Values) Duration(name string) time.Duration { d, _ := v[name].(time.Duration); return d }

// Mode returns a Mode parameter, or 0 when unset.
func (v Values) Mode(name string) os.FileMode { m, _ := v[name].(os.FileMode); return m }
