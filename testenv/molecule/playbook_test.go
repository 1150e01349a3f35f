package molecule

import (
	"bytes"
	"reflect"
	"sync"
	"testing"

	"github.com/richt/services/testenv/ansibleout"
)

func TestIdempotenceLine(t *testing.T) {
	for _, tc := range []struct {
		c    ansibleout.Change
		want string
	}{
		{ansibleout.Change{Host: "instance", Task: "Stamp the time", What: "cmd=date +%s%N > /var/tmp/stamp"},
			"* [instance] => Stamp the time\n    changed: cmd=date +%s%N > /var/tmp/stamp"},
		{ansibleout.Change{Host: "instance", Task: "Files", Item: "a", What: "dest=/a"}, "* [instance] => Files (item=a)\n    changed: dest=/a"},
		// Without -v there is no result to read: the task is still named.
		{ansibleout.Change{Host: "h", Task: "x"}, "* [h] => x"},
	} {
		if got := idempotenceLine(tc.c); got != tc.want {
			t.Errorf("idempotenceLine(%+v) = %q, want %q", tc.c, got, tc.want)
		}
	}
}

func TestOKFilterDropsResults(t *testing.T) {
	var out bytes.Buffer
	f := okFilter(&out)
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
	p := prefixWriter(&out, "[s] ", &mu)
	_, _ = p.Write([]byte("one\ntw"))
	_, _ = p.Write([]byte("o\n"))
	if out.String() != "[s] one\n[s] two\n" {
		t.Errorf("prefixed = %q", out.String())
	}
}

func TestOptionArgs(t *testing.T) {
	got := optionArgs(map[string]any{"diff": true, "check": false, "vvv": true, "extra_vars": "a=1", "f": 3, "skip-tags": nil,
		"tags": []any{"a", "b"}, "p": []any{"no:cacheprovider", "no:randomly"}})
	want := []string{"--diff", "--extra-vars=a=1", "-f", "3", "-p", "no:cacheprovider", "-p", "no:randomly", "--tags=a", "--tags=b", "-vvv"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("optionArgs = %v, want %v", got, want)
	}
}

func TestShellJoin(t *testing.T) {
	if got := shellJoin([]string{"ansible-playbook", "-e", `{"a": 1}`, "it's", ""}); got != `ansible-playbook -e '{"a": 1}' 'it'\''s' ''` {
		t.Errorf("shellJoin = %s", got)
	}
}
