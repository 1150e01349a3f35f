package testenv

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

const sampleOutput = `PLAY [demo] ********************************************************************

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

func TestParseOutput(t *testing.T) {
	recap, changed := parseOutput(sampleOutput)
	assert.Equal(t, map[string]Recap{
		"web1": {Ok: 5, Changed: 1, Skipped: 2},
		"web2": {Ok: 4, Changed: 1, Unreachable: 1, Failed: 1},
	}, recap)
	assert.Equal(t, []string{"Fixture repository file (web2)", "richt.services.service : demo: drop-ins (web1)"}, changed)
	r := PlaybookResult{Recap: recap}
	assert.Equal(t, 2, r.Changed())
	assert.Equal(t, 2, r.Failed())
}

func FuzzParseOutput(f *testing.F) {
	f.Add(sampleOutput)
	f.Add("TASK [x\nchanged: [\n")
	f.Fuzz(func(t *testing.T, out string) {
		recap, changed := parseOutput(out)
		for host := range recap {
			if host == "" || strings.ContainsAny(host, " \t\n") {
				t.Fatalf("bad host %q", host)
			}
		}
		if len(changed) > strings.Count(out, "changed: [") {
			t.Fatalf("more changes than lines")
		}
	})
}
