package ansible

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var update = flag.Bool("update", false, "rewrite golden files")

func testSpec() *Spec {
	return &Spec{
		Name: "demo_mod",
		Params: []Param{
			{Name: "name", Kind: Str, Required: true},
			{Name: "state", Kind: Str, Default: "present", Choices: []string{"present", "absent"}},
			{Name: "enabled", Kind: Bool},
			{Name: "timeout", Kind: Duration, Default: "5s"},
			{Name: "mode", Kind: Mode, Default: "0644"},
			{Name: "password", Kind: Str, NoLog: true},
			{Name: "content", Kind: Str},
			{Name: "sensitive", Kind: Bool, Default: false},
			{Name: "triggers", Kind: List, Summarize: func(v any) any { return "summary" }},
		},
		MutuallyExclusive: [][]string{{"password", "content"}},
		RequiredIf:        []RequiredIf{{Param: "state", Value: "absent", Requires: []string{"enabled"}}},
		NoLogWhen: func(raw map[string]any) []string {
			if b, ok := raw["sensitive"].(bool); ok && b {
				return []string{"content"}
			}
			return nil
		},
	}
}

type echo struct {
	Changed bool   `json:"changed"`
	Name    string `json:"name"`
	Content string `json:"content,omitempty"`
	Check   bool   `json:"check"`
}

func echoHandler(ctx context.Context, req *Request) (any, error) {
	if req.Params.String("name") == "fail" {
		return echo{Name: "fail"}, errors.New("it failed: " + req.Params.String("password"))
	}
	if req.Params.String("name") == "panic" {
		panic("boom")
	}
	req.Warn("watch out %d", 1)
	return echo{Changed: true, Name: req.Params.String("name"), Content: req.Params.String("content"), Check: req.CheckMode}, nil
}

func runArgs(t *testing.T, args map[string]any) map[string]any {
	t.Helper()
	data, err := json.Marshal(args)
	require.NoError(t, err)
	p := filepath.Join(t.TempDir(), "args")
	require.NoError(t, os.WriteFile(p, data, 0o600))
	out := Execute(context.Background(), testSpec(), []string{p}, nil, echoHandler)
	var res map[string]any
	require.NoError(t, json.Unmarshal(out, &res), string(out))
	return res
}

func TestValidationMessages(t *testing.T) {
	cases := []struct {
		name string
		args map[string]any
		msg  string
	}{
		{"unknown", map[string]any{"name": "x", "bogus": "secret-ish"}, "Unsupported parameters for (demo_mod) module: bogus. Supported parameters include: content, enabled, mode, name, password, sensitive, state, timeout, triggers."},
		{"missing", map[string]any{}, "missing required arguments: name"},
		{"choice", map[string]any{"name": "x", "state": "gone"}, "value of state must be one of: present, absent, got: gone"},
		{"bool", map[string]any{"name": "x", "enabled": "maybe"}, `argument 'enabled' is of type str and the value "maybe" is not a valid boolean`},
		{"str from list", map[string]any{"name": []any{"x"}}, "argument 'name' is of type list and cannot be converted to str"},
		{"duration", map[string]any{"name": "x", "timeout": "-1s"}, "argument 'timeout': \"-1s\" must be a positive duration"},
		{"duration type", map[string]any{"name": "x", "timeout": true}, "argument 'timeout' is of type bool and must be a number of seconds (20) or a duration string such as 5s or 1m30s"},
		{"duration not positive", map[string]any{"name": "x", "timeout": 0}, "argument 'timeout': \"0\" must be a positive duration"},
		{"mode", map[string]any{"name": "x", "mode": "0999"}, `argument 'mode': "0999" is not an octal file mode`},
		{"exclusive", map[string]any{"name": "x", "password": "pw-123456", "content": "b"}, "parameters are mutually exclusive: password|content"},
		{"required if", map[string]any{"name": "x", "state": "absent"}, "state is absent but all of the following are missing: enabled"},
		{"two problems", map[string]any{"state": "gone"}, "value of state must be one of: present, absent, got: gone; missing required arguments: name"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res := runArgs(t, c.args)
			assert.Equal(t, true, res["failed"])
			assert.Equal(t, false, res["changed"])
			assert.Contains(t, res["msg"], c.msg)
			assert.NotContains(t, mustJSON(t, res), "secret-ish", "unknown parameter values are not echoed")
		})
	}
}

func TestConversions(t *testing.T) {
	s := testSpec()
	v, err := s.Validate(map[string]any{"name": 42.0, "enabled": "yes", "mode": 420.0, "timeout": "1m30s", "triggers": true, "_ansible_check_mode": true})
	require.NoError(t, err)
	assert.Equal(t, "42", v.String("name"))
	assert.True(t, v.Bool("enabled"))
	assert.Equal(t, os.FileMode(0o644), v.Mode("mode"))
	assert.Equal(t, "1m30s", v.Duration("timeout").String())
	assert.Equal(t, []any{true}, v.List("triggers"))
	assert.Nil(t, v.OptBool("nothing"))
	v, err = s.Validate(map[string]any{"name": "x"})
	require.NoError(t, err)
	assert.False(t, v.IsSet("enabled"), "omitted stays omitted")
	assert.Equal(t, "present", v.String("state"))
}

// Special bits reach the module as Go's os.Mode* bits, not as Unix bits that os.Chmod
// would drop silently, and invocation.module_args shows them the way they were given.
func TestModeSpecialBits(t *testing.T) {
	s := testSpec()
	for in, want := range map[any]os.FileMode{
		"4644": os.ModeSetuid | 0o644, "2644": os.ModeSetgid | 0o644, "1644": os.ModeSticky | 0o644,
		"0644": 0o644, float64(0o4644): os.ModeSetuid | 0o644, "7777": os.ModeSetuid | os.ModeSetgid | os.ModeSticky | 0o777,
	} {
		v, err := s.Validate(map[string]any{"name": "x", "mode": in})
		require.NoError(t, err, in)
		assert.Equal(t, want, v.Mode("mode"), "%v", in)
	}
	res := runArgs(t, map[string]any{"name": "x", "mode": "4644"})
	assert.Equal(t, "4644", res["invocation"].(map[string]any)["module_args"].(map[string]any)["mode"])
}

func TestNoLogMaskedEverywhere(t *testing.T) {
	for name, args := range map[string]map[string]any{
		"success":            {"name": "x", "password": "hunter2-pass", "triggers": []any{map[string]any{"changed": true, "secret": "hunter2-pass"}}},
		"handler failure":    {"name": "fail", "password": "hunter2-pass"},
		"validation failure": {"name": "x", "password": "hunter2-pass", "state": "hunter2-pass"},
		"sensitive content":  {"name": "x", "content": "[Service]\nEnvironment=TOKEN=hunter2-pass\n", "sensitive": true},
	} {
		t.Run(name, func(t *testing.T) {
			out := mustJSON(t, runArgs(t, args))
			assert.NotContains(t, out, "hunter2-pass")
		})
	}
}

func TestCheckModeWarningsAndDiffStripping(t *testing.T) {
	res := runArgs(t, map[string]any{"name": "x", "_ansible_check_mode": true})
	assert.Equal(t, true, res["check"])
	assert.Equal(t, []any{"watch out 1"}, res["warnings"])
}

func TestPanicBecomesFailure(t *testing.T) {
	res := runArgs(t, map[string]any{"name": "panic"})
	assert.Equal(t, true, res["failed"])
	assert.Contains(t, res["msg"], "internal error: boom")
}

func TestFlagsMatchArgsFile(t *testing.T) {
	args := map[string]any{"name": "x", "enabled": true, "timeout": "2s", "_ansible_check_mode": true, "triggers": []any{true, "named"}}
	byFile := runArgs(t, args)
	out := Execute(context.Background(), testSpec(), []string{"--name", "x", "--enabled", "--timeout=2s", "--check", "--triggers", "true", "--triggers", "named"}, nil, echoHandler)
	var byFlags map[string]any
	require.NoError(t, json.Unmarshal(out, &byFlags))
	assert.Equal(t, byFile, byFlags)
}

func TestStdinInput(t *testing.T) {
	out := Execute(context.Background(), testSpec(), []string{"-"}, strings.NewReader(`{"name":"x"}`), echoHandler)
	assert.Contains(t, string(out), `"name":"x"`)
	out = Execute(context.Background(), testSpec(), []string{"-"}, strings.NewReader(`not json`), echoHandler)
	assert.Contains(t, string(out), `"failed":true`)
	assert.Contains(t, string(out), "arguments are not a JSON object")
}

// TestGolden pins the exact protocol output, including invocation.module_args.
func TestGolden(t *testing.T) {
	for _, c := range []struct {
		file string
		args map[string]any
	}{
		{"success.json", map[string]any{"name": "x", "password": "pw-123456", "triggers": []any{map[string]any{"changed": true}}, "_ansible_diff": true}},
		{"invalid.json", map[string]any{"name": "x", "state": "gone", "password": "pw-123456", "bogus": 1}},
	} {
		got := mustJSONIndent(t, runArgs(t, c.args))
		path := filepath.Join("testdata", c.file)
		if *update {
			require.NoError(t, os.WriteFile(path, []byte(got), 0o644))
		}
		want, err := os.ReadFile(path)
		require.NoError(t, err)
		assert.JSONEq(t, string(want), got)
	}
}

func mustJSON(t *testing.T, v any) string {
	data, err := json.Marshal(v)
	require.NoError(t, err)
	return string(data)
}

func mustJSONIndent(t *testing.T, v any) string {
	data, err := json.MarshalIndent(v, "", "  ")
	require.NoError(t, err)
	return string(data) + "\n"
}

func FuzzReadInput(f *testing.F) {
	f.Add([]byte(`{"name":"x","_ansible_check_mode":true}`))
	f.Add([]byte(`{"ANSIBLE_MODULE_ARGS":{"name":"x"}}`))
	f.Add([]byte(`[1,2]`))
	f.Fuzz(func(t *testing.T, data []byte) {
		out := Execute(context.Background(), testSpec(), []string{"-"}, strings.NewReader(string(data)), echoHandler)
		var res map[string]any
		if err := json.Unmarshal(out, &res); err != nil {
			t.Fatalf("output is not one JSON object: %s", out)
		}
		if _, ok := res["changed"]; !ok {
			t.Fatalf("no changed in %s", out)
		}
	})
}

func TestURLPasswordsAreMasked(t *testing.T) {
	cases := []struct{ in, want string }{
		{"Curl error (7): Couldn't connect to server for http://deploy:s3cret@repo.example/el9/repodata/repomd.xml",
			"Curl error (7): Couldn't connect to server for http://deploy:********@repo.example/el9/repodata/repomd.xml"},
		{"https://:token@host/x", "https://:********@host/x"},
		{"two: ftp://a:b@h1/ and https://c:d@h2", "two: ftp://a:********@h1/ and https://c:********@h2"},
		{"no password: https://user@host/x", "no password: https://user@host/x"},
		{"not a URL: user:pass@host", "not a URL: user:pass@host"},
		{"an address: root@localhost", "an address: root@localhost"},
		// The user information ends at the last @ before the host: a password (as
		// configured, unencoded) may hold /, @ and :.
		{"http://deploy:pa/ss@repo.example/el9/", "http://deploy:********@repo.example/el9/"},
		{"http://deploy:p@ss@repo.example/el9/", "http://deploy:********@repo.example/el9/"},
		{"http://deploy:a:b/c@d@repo.example/", "http://deploy:********@repo.example/"},
		{"https://me@corp.example:s3cret@repo.example/x", "https://me@corp.example:********@repo.example/x"},
		{"baseurl=ftp://a:b/c@h1/,https://c:d@e@h2/ end", "baseurl=ftp://a:********@h1/,https://c:********@h2/ end"},
		{"a port, no user: http://repo.example:8080/el9/ and http://u:p/w@h/", "a port, no user: http://repo.example:8080/el9/ and http://u:********@h/"},
		{"no password: https://user@host/a:b", "no password: https://user@host/a:b"},
	}
	for _, c := range cases {
		assert.Equal(t, c.want, maskURLPasswords(c.in), c.in)
	}
	out := maskURLPasswords(map[string]any{"stderr": []any{"http://u:p4ss@h/"}, "http://u:p4ss@h/": 1})
	assert.NotContains(t, fmt.Sprint(out), "p4ss")
}

// Warnings and a handler's own slices and structs go through the same masking as the rest
// of the result: none of them is a way around it.
func TestWarningsAndTypedValuesAreMasked(t *testing.T) {
	h := func(ctx context.Context, req *Request) (any, error) {
		pw := req.Params.String("password")
		req.Warn("retrying http://deploy:urlpass9@repo/ with %s", pw)
		return map[string]any{"changed": false, "lines": []string{"said " + pw}, "step": echo{Name: pw}}, nil
	}
	data, err := json.Marshal(map[string]any{"name": "x", "password": "hunter2-pass"})
	require.NoError(t, err)
	p := filepath.Join(t.TempDir(), "args")
	require.NoError(t, os.WriteFile(p, data, 0o600))
	out := string(Execute(context.Background(), testSpec(), []string{p}, nil, h))
	assert.NotContains(t, out, "hunter2-pass")
	assert.NotContains(t, out, "urlpass9")
	assert.Contains(t, out, Masked)
	assert.Contains(t, out, "retrying http://deploy:"+URLPasswordMask+"@repo/")
}

// A mode written without quotes and without its leading 0 is read by YAML as decimal: 644
// is refused with the quoted form, not explained as the sticky bit 01204 sets. The number
// YAML makes of an unquoted 0644 (420) is still the mode 0644.
func TestModeWrittenAsDecimalIsRefused(t *testing.T) {
	s := testSpec()
	for _, c := range []struct {
		in   float64
		want string // "" accepted
	}{
		{644, "mode: 644 was read as the decimal number 644"},
		{600, "quote it: '0600'"},
		{755, "which as a mode is 1363; quote it: '0755'"},
		{4644, "quote it: '4644'"},
		{420, ""}, // YAML's 0644
		{384, ""}, // YAML's 0600
	} {
		_, err := s.Validate(map[string]any{"name": "x", "mode": c.in})
		if c.want == "" {
			assert.NoError(t, err, "%v", c.in)
			continue
		}
		require.Error(t, err, "%v", c.in)
		assert.Contains(t, err.Error(), strings.TrimPrefix(c.want, "mode: "), "%v", c.in)
	}
}

// A duration is what users write: a number of seconds (timeout: 20) or a string with its
// unit.
func TestDurationAsSecondsOrWithUnit(t *testing.T) {
	s := testSpec()
	for in, want := range map[any]time.Duration{20.0: 20 * time.Second, 1.5: 1500 * time.Millisecond, "20": 20 * time.Second, "1m30s": 90 * time.Second} {
		v, err := s.Validate(map[string]any{"name": "x", "timeout": in})
		require.NoError(t, err, "%v", in)
		assert.Equal(t, want, v.Duration("timeout"), "%v", in)
	}
}

// A mapping where a list of mappings is expected is refused, not taken as a list of one.
func TestAMappingForAListOfMappingsIsRefused(t *testing.T) {
	spec := &Spec{Name: "demo_mod", Params: []Param{{Name: "processes", Kind: List, Elements: Dict}, {Name: "restart_on", Kind: List, Elements: Raw}}}
	_, err := spec.Validate(map[string]any{"processes": map[string]any{"unit": "demo"}})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "argument 'processes' is a mapping, and a list of mappings is expected")
	v, err := spec.Validate(map[string]any{"processes": []any{map[string]any{"unit": "demo"}}, "restart_on": map[string]any{"changed": true}})
	require.NoError(t, err, "a list, and a single trigger where any value is an item")
	assert.Len(t, v["restart_on"], 1)
}
