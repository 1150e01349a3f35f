package molecule

import (
	"bytes"
	"reflect"
	"strings"
	"sync"
	"testing"
)

// verboseRun is ansible-playbook -v output as 2.14's default callback prints it.
const verboseRun = `PLAY [Converge] ****************************************************************

TASK [webrole : Web unit file] *************************************************
ok: [instance] => {"changed": false, "dest": "/etc/systemd/system/web.service"}

TASK [Stamp the time] **********************************************************
changed: [instance] => {"changed": true, "cmd": "date +%s%N > /var/tmp/stamp", "rc": 0, "stdout": ""}
changed: [other -> localhost] => {"changed": true, "cmd": ["true"]}

TASK [Files] *******************************************************************
changed: [instance] => (item=a) => {"ansible_loop_var": "item", "changed": true, "diff": {"before": {"path": "/a", "state": "absent"}, "after": {"path": "/a", "state": "file"}}, "item": "a"}

TASK [richt.services.service] **************************************************
changed: [instance] => {"changed": true, "plan": ["restart demo.service"], "msg": "x"}

RUNNING HANDLER [webrole : Restart web] ****************************************
changed: [instance] => {"changed": true, "name": "web.service", "state": "started", "status": {"A": "b"}}

PLAY RECAP *********************************************************************
instance                   : ok=5    changed=4    unreachable=0    failed=0    skipped=0    rescued=0    ignored=0
`

func TestParseChanges(t *testing.T) {
	got := ParseChanges(verboseRun)
	want := []Change{
		{Host: "instance", Task: "Stamp the time", What: "cmd=date +%s%N > /var/tmp/stamp"},
		{Host: "other", Task: "Stamp the time", What: `cmd=["true"]`},
		{Host: "instance", Task: "Files", Item: "a", What: `diff={"path":"/a","state":"absent"} → {"path":"/a","state":"file"}`},
		{Host: "instance", Task: "richt.services.service", What: `plan=["restart demo.service"]; msg=x`},
		{Host: "instance", Task: "webrole : Restart web", What: "name=web.service; state=started"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("ParseChanges =\n%#v\nwant\n%#v", got, want)
	}
	if s := got[0].String(); s != "* [instance] => Stamp the time\n    changed: cmd=date +%s%N > /var/tmp/stamp" {
		t.Errorf("String() = %q", s)
	}
	// Without -v there is no result to read: the task is still named.
	if got := ParseChanges("TASK [x] ***\nchanged: [h]\n"); !reflect.DeepEqual(got, []Change{{Host: "h", Task: "x"}}) || got[0].String() != "* [h] => x" {
		t.Errorf("plain run: %#v", got)
	}
}

func TestSummarise(t *testing.T) {
	for _, tc := range []struct {
		result map[string]any
		want   string
	}{
		{map[string]any{"changed": true}, "(the module reported changed and returned nothing else)"},
		{map[string]any{"changed": true, "foo": 1, "_ansible_no_log": false}, "(result keys: foo)"},
		{map[string]any{"diff": map[string]any{"before_header": "/a (old)", "after_header": "/a (new)"}}, "diff=/a (old) → /a (new)"},
		{map[string]any{"diff": []any{map[string]any{}}, "dest": "/x"}, "dest=/x"},
		{map[string]any{"msg": strings.Repeat("y", 500)}, "msg=" + strings.Repeat("y", maxSummary-4) + "…"},
		{map[string]any{"msg": "a\nb"}, `msg=a\nb`},
	} {
		if got := Summarise(tc.result); got != tc.want {
			t.Errorf("Summarise(%v) = %q, want %q", tc.result, got, tc.want)
		}
	}
}

func TestOKFilterDropsResults(t *testing.T) {
	var out bytes.Buffer
	f := &okFilter{w: &out}
	in := "TASK [a]\nok: [h] => {\"changed\": false}\nok: [h] => {\n    \"msg\": \"All assertions passed\"\n}\nchanged: [h] => {\"changed\": true}\nskipping: [h] => {\"x\": 1}\n"
	for _, chunk := range []string{in[:7], in[7:40], in[40:]} { // lines split across writes
		if _, err := f.Write([]byte(chunk)); err != nil {
			t.Fatal(err)
		}
	}
	want := "TASK [a]\nok: [h]\nok: [h]\nchanged: [h] => {\"changed\": true}\nskipping: [h]\n"
	if out.String() != want {
		t.Errorf("filtered =\n%s\nwant\n%s", out.String(), want)
	}
}

func TestPrefixWriter(t *testing.T) {
	var out bytes.Buffer
	var mu sync.Mutex
	p := &prefixWriter{w: &out, prefix: "[s] ", mu: &mu}
	_, _ = p.Write([]byte("one\ntw"))
	_, _ = p.Write([]byte("o\n"))
	if out.String() != "[s] one\n[s] two\n" {
		t.Errorf("prefixed = %q", out.String())
	}
}

func TestOptionArgs(t *testing.T) {
	got := optionArgs(map[string]any{"diff": true, "check": false, "vvv": true, "extra_vars": "a=1", "f": 3, "skip-tags": nil})
	want := []string{"--diff", "--extra-vars=a=1", "-f=3", "-vvv"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("optionArgs = %v, want %v", got, want)
	}
}

func TestShellJoin(t *testing.T) {
	if got := shellJoin([]string{"ansible-playbook", "-e", `{"a": 1}`, "it's", ""}); got != `ansible-playbook -e '{"a": 1}' 'it'\''s' ''` {
		t.Errorf("shellJoin = %s", got)
	}
}
