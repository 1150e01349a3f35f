package ansible

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"encoding/json"
	"github.com/spf13/pflag"
)

// Input is what one invocation asked for, before validation.
type Input struct {
	Raw       map[string]any
	CheckMode bool
	Diff      bool
	Verbosity int
	NoLog     bool
}

// ErrUsage wraps problems with how the module was invoked (not with its parameters).
var ErrUsage = errors.New("usage")

// ReadInput reads the parameters the way Ansible or a person passed them:
//
//	MODULE ARGS_FILE     Ansible's binary-module convention
//	MODULE -             the same JSON object on standard input (used by the fast path)
//	MODULE --name x ...  flags, one per parameter, for debugging by hand
//
// Flags are turned into the same raw map an args file gives, so both take the same path
// through validation and produce the same result.
func ReadInput(spec *Spec, args []string, stdin io.Reader) (*Input, error) {
	if len(args) == 1 && (args[0] == "-" || !strings.HasPrefix(args[0], "-")) {
		var data []byte
		var err error
		if args[0] == "-" {
			data, err = io.ReadAll(stdin)
		} else {
			data, err = os.ReadFile(args[0])
		}
		if err != nil {
			return nil, fmt.Errorf("%w: read arguments: %w", ErrUsage, err)
		}
		return parseJSONInput(data)
	}
	return parseFlags(spec, args)
}

func parseJSONInput(data []byte) (*Input, error) {
	var raw map[string]any
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&raw); err != nil {
		return nil, fmt.Errorf("%w: arguments are not a JSON object: %w", ErrUsage, err)
	}
	if raw == nil {
		return nil, fmt.Errorf("%w: arguments are not a JSON object", ErrUsage)
	}
	// Ansible's Python modules wrap the parameters; accept that shape too.
	if inner, ok := raw["ANSIBLE_MODULE_ARGS"].(map[string]any); ok && len(raw) == 1 {
		raw = inner
	}
	in := &Input{Raw: raw}
	in.CheckMode, _ = raw["_ansible_check_mode"].(bool)
	in.Diff, _ = raw["_ansible_diff"].(bool)
	in.NoLog, _ = raw["_ansible_no_log"].(bool)
	if v, ok := raw["_ansible_verbosity"].(float64); ok {
		in.Verbosity = int(v)
	}
	return in, nil
}

func flagName(param string) string { return strings.ReplaceAll(param, "_", "-") }

func parseFlags(spec *Spec, args []string) (*Input, error) {
	fs := pflag.NewFlagSet(spec.Name, pflag.ContinueOnError)
	fs.SetOutput(io.Discard)
	// Accept both --allow-missing and --allow_missing.
	fs.SetNormalizeFunc(func(_ *pflag.FlagSet, name string) pflag.NormalizedName {
		return pflag.NormalizedName(flagName(name))
	})
	in := &Input{Raw: map[string]any{}}
	fs.BoolVar(&in.CheckMode, "check", false, "observe and report, change nothing")
	fs.BoolVar(&in.Diff, "diff", false, "return a diff of the change")
	fs.CountVarP(&in.Verbosity, "verbose", "v", "verbosity")
	bools := map[string]*bool{}
	strs := map[string]*[]string{}
	for _, p := range spec.Params {
		usage := ""
		if len(p.Description) > 0 {
			usage = paragraphs(p.Description[:1])[0]
		}
		switch p.Kind {
		case Bool:
			bools[p.Name] = fs.Bool(flagName(p.Name), false, usage)
		default:
			// Repeatable; lists take every occurrence, scalars the last one.
			strs[p.Name] = fs.StringArray(flagName(p.Name), nil, usage)
		}
	}
	if err := fs.Parse(args); err != nil {
		return nil, fmt.Errorf("%w: %w (run with an args file, '-' for JSON on stdin, or --PARAM VALUE flags)", ErrUsage, err)
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("%w: unexpected argument %q", ErrUsage, fs.Arg(0))
	}
	for _, p := range spec.Params {
		if !fs.Changed(flagName(p.Name)) {
			continue
		}
		if b, ok := bools[p.Name]; ok {
			in.Raw[p.Name] = *b
			continue
		}
		vals := *strs[p.Name]
		switch p.Kind {
		case List:
			items := make([]any, 0, len(vals))
			for _, s := range vals {
				items = append(items, jsonOrString(s))
			}
			in.Raw[p.Name] = items
		case Raw, Dict:
			in.Raw[p.Name] = jsonOrString(vals[len(vals)-1])
		default:
			in.Raw[p.Name] = vals[len(vals)-1]
		}
	}
	return in, nil
}

// jsonOrString lets a flag carry a structured value (a registered result, true/false)
// while plain words stay strings.
func jsonOrString(s string) any {
	var v any
	if err := json.Unmarshal([]byte(s), &v); err == nil {
		return v
	}
	return s
}
