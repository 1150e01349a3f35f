package ansibleout

import (
	"reflect"
	"strings"
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
other                      : ok=1    changed=1    unreachable=0    failed=0    skipped=0    rescued=0    ignored=0
`

// plainRun is a run without -v, two hosts, one of them failing.
const plainRun = `PLAY [demo] ********************************************************************

TASK [Fixture repository file] *************************************************
ok: [web1]
changed: [web2]

TASK [richt.services.service : demo: drop-ins] *********************************
changed: [web1] => (item=demo.service/10-reload.conf)
ok: [web1] => (item=demo.service/20-level.conf)

PLAY RECAP *********************************************************************
web1                       : ok=5    changed=1    unreachable=0    failed=0    skipped=2    rescued=0    ignored=0   
web2                       : ok=4    changed=1    unreachable=1    failed=1    skipped=0    rescued=0    ignored=0   
`

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		name string
		out  string
		want Output
	}{
		{"verbose: what each module changed, handlers by name, delegation and items", verboseRun, Output{
			Recap: map[string]Recap{"instance": {Ok: 5, Changed: 4}, "other": {Ok: 1, Changed: 1}},
			Changes: []Change{
				{Host: "instance", Task: "Stamp the time", What: "cmd=date +%s%N > /var/tmp/stamp"},
				{Host: "other", Task: "Stamp the time", What: `cmd=["true"]`},
				{Host: "instance", Task: "Files", Item: "a", What: `diff={"path":"/a","state":"absent"} → {"path":"/a","state":"file"}`},
				{Host: "instance", Task: "richt.services.service", What: `plan=["restart demo.service"]; msg=x`},
				{Host: "instance", Task: "webrole : Restart web", What: "name=web.service; state=started"},
			}}},
		{"plain: tasks named, no results to read", plainRun, Output{
			Recap: map[string]Recap{"web1": {Ok: 5, Changed: 1, Skipped: 2}, "web2": {Ok: 4, Changed: 1, Unreachable: 1, Failed: 1}},
			Changes: []Change{
				{Host: "web2", Task: "Fixture repository file"},
				{Host: "web1", Task: "richt.services.service : demo: drop-ins", Item: "demo.service/10-reload.conf"},
			}}},
		{"a line longer than any buffer still reaches the recap", "TASK [x]\nok: [h] " + strings.Repeat("z", 3<<20) + "\nchanged: [h]\nh : ok=1 changed=1 unreachable=0 failed=0 skipped=0 rescued=0 ignored=0\n", Output{
			Recap: map[string]Recap{"h": {Ok: 1, Changed: 1}}, Changes: []Change{{Host: "h", Task: "x"}}}},
		{"nothing", "", Output{Recap: map[string]Recap{}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Parse(tc.out); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("Parse =\n%#v\nwant\n%#v", got, tc.want)
			}
		})
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
		{map[string]any{"msg": strings.Repeat("y", 500)}, "msg=" + strings.Repeat("y", MaxSummary-4) + "…"},
		{map[string]any{"msg": "a\nb"}, `msg=a\nb`},
	} {
		if got := Summarise(tc.result); got != tc.want {
			t.Errorf("Summarise(%v) = %q, want %q", tc.result, got, tc.want)
		}
	}
}

// FuzzParse: a run's output holds whatever modules and tasks print. Parse never panics,
// every recap host is one word, and no more changes come out than "changed: [" lines
// went in.
func FuzzParse(f *testing.F) {
	f.Add(verboseRun)
	f.Add(plainRun)
	f.Add("TASK [x\nchanged: [\n")
	f.Add("RUNNING HANDLER [h]\nchanged: [a -> b] => (item=x) => {\"diff\": [1, {\"before\": 2}]}\n")
	f.Fuzz(func(t *testing.T, out string) {
		o := Parse(out)
		for host := range o.Recap {
			if host == "" || strings.ContainsAny(host, " \t\n") {
				t.Fatalf("bad host %q", host)
			}
		}
		if len(o.Changes) > strings.Count(out, "changed: [") {
			t.Fatalf("more changes than lines")
		}
	})
}
