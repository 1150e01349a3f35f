package ansible

import (
	"context"
	"fmt"
	"io"
	"maps"
	"os"
	"runtime/debug"
	"time"

	"encoding/json"

	"github.com/richt/services/pkg/diffmode"
	"github.com/richt/services/pkg/filemode"
)

// Request is one validated invocation, handed to a module's Handler.
type Request struct {
	Params    Values
	CheckMode bool
	Diff      bool
	Verbosity int
	warnings  []string
	spec      *Spec
	// parsed is what the Spec's Parse made of Params (Parsed).
	parsed any
}

// Parsed is the typed request the Spec's Parse made of the request's parameters, so a
// handler never parses them a second time. A Spec without Parse, or a Parse that returns
// another type, is an error naming the module: a programming error, never a zero value to
// act on.
func Parsed[T any](r *Request) (T, error) {
	v, ok := r.parsed.(T)
	if !ok {
		var zero T
		name := "module"
		if r.spec != nil {
			name = r.spec.Name
		}
		return zero, fmt.Errorf("internal error: %s's parameters were not parsed into %T (its Spec has no Parse, or Parse returns %T)", name, zero, r.parsed)
	}
	return v, nil
}

// Warn adds a warning that Ansible shows after the task.
func (r *Request) Warn(format string, args ...any) {
	r.warnings = append(r.warnings, fmt.Sprintf(format, args...))
}

// Handler is a module's behaviour. It returns the module's result (a struct or map that
// encodes to a JSON object and carries "changed"). A non-nil error fails the task with the
// error as msg; the result, if any, is still returned so facts observed before the failure
// (states, command output) reach the user.
type Handler func(ctx context.Context, req *Request) (any, error)

// Version is the collection version a module binary was built for (set with -ldflags -X by
// the Makefile; "dev" in test builds).
var Version = "dev"

// Main runs a module as a process: it reads os.Args and standard input and writes the one
// result object to standard output. It never exits non-zero; Ansible reads `failed`.
// `--version` alone prints the name and version and exits 0: the collection's fast path uses
// it to probe, before caching a binary, that the target can execute it. `--doc` alone
// prints the parameters' documentation as JSON (SpecDoc), which `go run ./cmd/gendoc`
// writes into the module's DOCUMENTATION.
func Main(spec *Spec, h Handler) {
	if len(os.Args) == 2 && os.Args[1] == "--version" {
		fmt.Printf("%s %s\n", spec.Name, Version)
		return
	}
	if len(os.Args) == 2 && os.Args[1] == "--doc" {
		data, _ := json.Marshal(spec.Doc())
		_, _ = os.Stdout.Write(append(data, '\n'))
		return
	}
	out := Execute(context.Background(), spec, os.Args[1:], os.Stdin, h)
	_, _ = os.Stdout.Write(append(out, '\n'))
}

// Execute is Main without the process: it returns the JSON result object.
func Execute(ctx context.Context, spec *Spec, args []string, stdin io.Reader, h Handler) []byte {
	in, err := ReadInput(spec, args, stdin)
	if err != nil {
		return encode(map[string]any{"failed": true, "changed": false, "msg": err.Error()}, nil)
	}
	return encode(execute(ctx, spec, in, h))
}

// Call runs a module's handler inside this process as Ansible would run the module with
// raw as its arguments: the same validation, and the same result object (failed and msg,
// warnings, diff when asked, invocation, the module's secrets masked). A module that
// composes others (the service module) calls them so: each step's result is the one that
// module gives on its own.
func Call(ctx context.Context, spec *Spec, raw map[string]any, check, diff bool, h Handler) map[string]any {
	res, hidden := execute(ctx, spec, &Input{Raw: raw, CheckMode: check, Diff: diff}, h)
	out, _ := mask(res, hidden).(map[string]any)
	return out
}

// Args are one call's arguments, validated and parsed once (Spec.Args). A module that
// composes others checks each step's arguments when it parses its own, and then calls the
// step with them (CallArgs) as often as its plan and its run need, without validating
// them again.
type Args struct {
	spec   *Spec
	raw    map[string]any
	vals   Values
	parsed any
}

// Args validates and parses raw for calls of the module (CallArgs).
func (s *Spec) Args(raw map[string]any) (Args, error) {
	vals, parsed, err := s.ValidateParse(raw)
	if err != nil {
		return Args{}, err
	}
	return Args{spec: s, raw: raw, vals: vals, parsed: parsed}, nil
}

// ParsedArgs is the typed request the Spec's Parse made of the arguments (as Parsed of a
// Request).
func ParsedArgs[T any](a Args) (T, error) {
	return Parsed[T](&Request{spec: a.spec, parsed: a.parsed})
}

// With is a for a call whose typed request the caller completed itself, from arguments
// the Spec validated and parsed once: parsed replaces what Parse made of them, and shown
// are the further arguments the caller parsed into it, as the request lists them
// (Request.Params, the result's invocation). Nothing is validated or parsed again.
func (a Args) With(parsed any, shown Values) Args {
	raw := make(map[string]any, len(a.raw)+len(shown))
	vals := make(Values, len(a.vals)+len(shown))
	maps.Copy(raw, a.raw)
	maps.Copy(vals, a.vals)
	for k, v := range shown {
		raw[k], vals[k] = v, v
	}
	return Args{spec: a.spec, raw: raw, vals: vals, parsed: parsed}
}

// CallArgs is Call with arguments validated and parsed already.
func CallArgs(ctx context.Context, a Args, check, diff bool, h Handler) map[string]any {
	in := &Input{Raw: a.raw, CheckMode: check, Diff: diff}
	res, hidden := respond(ctx, a.spec, in, a.vals, a.parsed, h)
	out, _ := mask(res, hidden).(map[string]any)
	return out
}

// execute validates the input, runs the handler and builds the result object, with the
// secrets to mask in it.
func execute(ctx context.Context, spec *Spec, in *Input, h Handler) (map[string]any, []string) {
	vals, parsed, err := spec.ValidateParse(in.Raw)
	if err != nil {
		// Secrets are known from the raw input, so that even a failed validation cannot
		// echo them.
		return map[string]any{
			"failed": true, "changed": false, "msg": err.Error(),
			"invocation": map[string]any{"module_args": moduleArgs(spec, in.Raw, nil)},
		}, secrets(spec, in.Raw)
	}
	return respond(ctx, spec, in, vals, parsed, h)
}

// respond runs the handler on validated input and builds the result object, with the
// secrets to mask in it.
func respond(ctx context.Context, spec *Spec, in *Input, vals Values, parsed any, h Handler) (map[string]any, []string) {
	hidden := secrets(spec, in.Raw)
	req := &Request{Params: vals, CheckMode: in.CheckMode, Diff: in.Diff, Verbosity: in.Verbosity, spec: spec, parsed: parsed}
	result, herr := run(ctx, h, req)
	res, err := toMap(result)
	if err != nil {
		res, herr = map[string]any{}, fmt.Errorf("internal error: %w", err)
	}
	if _, ok := res["changed"]; !ok {
		res["changed"] = false
	}
	if herr != nil {
		res["failed"] = true
		res["msg"] = herr.Error()
	}
	if len(req.warnings) > 0 {
		// As JSON's own type: the masking below must see each warning.
		w := make([]any, len(req.warnings))
		for i, s := range req.warnings {
			w[i] = s
		}
		res["warnings"] = w
	}
	if !in.Diff {
		delete(res, "diff")
	}
	res["invocation"] = map[string]any{"module_args": moduleArgs(spec, in.Raw, vals)}
	return res, hidden
}

// run calls the handler and turns a panic into a failed result: a module must always
// print its one JSON object.
func run(ctx context.Context, h Handler, req *Request) (result any, err error) {
	defer func() {
		if r := recover(); r != nil {
			result = nil
			err = fmt.Errorf("internal error: %v\n%s", r, debug.Stack())
		}
	}()
	return h(ctx, req)
}

func encode(res map[string]any, hidden []string) []byte {
	masked := maskURLPasswords(mask(res, hidden))
	data, err := json.Marshal(masked)
	if err != nil {
		data, _ = json.Marshal(map[string]any{"failed": true, "changed": false,
			"msg": "internal error: encode result: " + err.Error()})
	}
	return data
}

// displayValue turns converted values back into what a user wrote.
func displayValue(v any) any {
	switch x := v.(type) {
	case time.Duration:
		return x.String()
	case os.FileMode:
		return fmt.Sprintf("%04o", filemode.Unix(x))
	}
	return v
}

// Diff is the diff mode result: Ansible prints it as a unified diff of Before and After.
// The type lives in the leaf diffmode, so the packages that draw a change need not import
// the protocol.
type Diff = diffmode.Diff
