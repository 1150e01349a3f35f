package ansible

import (
	"fmt"
	"regexp"
	"sort"
	"strings"
	"unicode"

	"encoding/json"
)

// Masked replaces every secret value in module output, as Ansible's own modules do.
const Masked = "VALUE_SPECIFIED_IN_NO_LOG_PARAMETER"

// minMaskedLine is the shortest line of a multi-line secret that is masked on its own.
// Shorter lines ("[Unit]", blank) carry no secret and masking them would garble output.
const minMaskedLine = 6

// minMaskedSubstring is the shortest secret also masked inside longer strings; a one- or
// two-letter "secret" would otherwise turn every message into noise. Shorter secrets are
// still masked wherever they are a whole value.
const minMaskedSubstring = 3

// secrets collects every string that must not appear in the output.
func secrets(spec *Spec, raw map[string]any) []string {
	names := map[string]bool{}
	for _, p := range spec.Params {
		if p.NoLog {
			names[p.Name] = true
		}
	}
	if spec.NoLogWhen != nil {
		for _, n := range spec.NoLogWhen(raw) {
			names[n] = true
		}
	}
	var out []string
	add := func(s string) {
		if s == "" {
			return
		}
		out = append(out, s)
		if strings.Contains(s, "\n") {
			for _, line := range strings.Split(s, "\n") {
				if line = strings.TrimSpace(line); len(line) >= minMaskedLine {
					out = append(out, line)
				}
			}
		}
	}
	var walk func(v any)
	walk = func(v any) {
		switch x := v.(type) {
		case string:
			add(x)
		case []any:
			for _, e := range x {
				walk(e)
			}
		case map[string]any:
			for _, e := range x {
				walk(e)
			}
		case nil:
		default:
			add(fmt.Sprint(x))
		}
	}
	for n := range names {
		walk(raw[n])
	}
	if spec.NoLogValues != nil {
		for _, v := range spec.NoLogValues(raw) {
			add(v)
		}
	}
	// Longest first, so a secret that contains another is replaced whole.
	sort.Slice(out, func(i, j int) bool { return len(out[i]) > len(out[j]) })
	return out
}

// mask replaces secrets anywhere in v (keys and values), returning a new value.
func mask(v any, secrets []string) any {
	if len(secrets) == 0 {
		return v
	}
	switch x := v.(type) {
	case string:
		for _, s := range secrets {
			switch {
			case x == s:
				return Masked
			case len(s) >= minMaskedSubstring && strings.Contains(x, s):
				x = strings.ReplaceAll(x, s, Masked)
			}
		}
		return x
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = mask(e, secrets)
		}
		return out
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[mask(k, secrets).(string)] = mask(e, secrets)
		}
		return out
	}
	return v
}

// toMap turns a module's result into a JSON object map of JSON's own types. A map is
// re-encoded too: the masking walks only JSON's types, and a []string or a struct inside a
// handler's map would carry a secret past it.
func toMap(result any) (map[string]any, error) {
	if result == nil {
		return map[string]any{}, nil
	}
	data, err := json.Marshal(result)
	if err != nil {
		return nil, fmt.Errorf("encode result: %w", err)
	}
	out := map[string]any{}
	if err := json.Unmarshal(data, &out); err != nil {
		return nil, fmt.Errorf("result is not a JSON object: %w", err)
	}
	return out, nil
}

// moduleArgs is what invocation.module_args shows: every declared parameter, secrets
// masked, summaries instead of values that must not be echoed, unknown keys left out.
func moduleArgs(spec *Spec, raw map[string]any, vals Values) map[string]any {
	out := make(map[string]any, len(spec.Params))
	for _, p := range spec.Params {
		var v any
		if vals != nil {
			v = vals[p.Name]
		} else {
			v = raw[p.Name]
		}
		if v != nil && p.Summarize != nil {
			v = p.Summarize(v)
		}
		out[p.Name] = displayValue(v)
	}
	return out
}

// urlScheme starts a URL (scheme://). Commands the modules run print URLs as they are
// configured (DNF names a repository's baseurl in its errors), and a result must not carry
// a password in one on.
var urlScheme = regexp.MustCompile(`[A-Za-z][A-Za-z0-9+.-]*://`)

// maskURLPasswordsIn replaces the password of every URL in s. A configured URL's password
// is not percent-encoded, so it may hold /, : and @: a URL's user information runs from
// its scheme to the LAST @ before the host, where the URL ends at white space or at the
// next URL (a comma-separated baseurl list), and its password from the first : in it.
// Reading a path's @ (http://host:8080/a@b) as the end of a password masks too much, never
// too little.
func maskURLPasswordsIn(s string) string {
	starts := urlScheme.FindAllStringIndex(s, -1)
	var b strings.Builder
	done := 0
	for i, loc := range starts {
		from, to := loc[1], len(s)
		if i+1 < len(starts) {
			to = starts[i+1][0]
		}
		if ws := strings.IndexFunc(s[from:to], unicode.IsSpace); ws >= 0 {
			to = from + ws
		}
		at := strings.LastIndexByte(s[from:to], '@')
		if at < 0 {
			continue // no user information
		}
		colon := strings.IndexByte(s[from:from+at], ':')
		if colon < 0 {
			continue // a user without a password
		}
		b.WriteString(s[done : from+colon+1])
		b.WriteString(URLPasswordMask)
		done = from + at
	}
	if done == 0 {
		return s
	}
	b.WriteString(s[done:])
	return b.String()
}

// URLPasswordMask is what stands for a URL's password in module output.
const URLPasswordMask = "********"

// maskURLPasswords replaces the password of every URL in v's strings (keys and values),
// as Ansible's own output sanitizing does.
func maskURLPasswords(v any) any {
	switch x := v.(type) {
	case string:
		if !strings.Contains(x, "@") {
			return x
		}
		return maskURLPasswordsIn(x)
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = maskURLPasswords(e)
		}
		return out
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[maskURLPasswords(k).(string)] = maskURLPasswords(e)
		}
		return out
	}
	return v
}
