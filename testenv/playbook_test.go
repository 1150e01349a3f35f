package testenv

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// sampleOutput is a run's output cut to what a result reads: two changes and the recap.
const sampleOutput = "TASK [Fixture repository file] ***\nchanged: [web2]\n" +
	"RUNNING HANDLER [richt.services.service : demo: reload] ***\nchanged: [web1]\n" +
	"web1 : ok=5 changed=1 unreachable=0 failed=0 skipped=2 rescued=0 ignored=0\n" +
	"web2 : ok=4 changed=1 unreachable=1 failed=1 skipped=0 rescued=0 ignored=0\n"

// The output itself is read by ansibleout (tested and fuzzed there); a result names each
// change "TASK (host)" and sums the recap.
func TestReadOutput(t *testing.T) {
	recap, changed := readOutput(sampleOutput)
	assert.Equal(t, []string{"Fixture repository file (web2)", "richt.services.service : demo: reload (web1)"}, changed)
	r := PlaybookResult{Recap: recap}
	assert.Equal(t, 2, r.Changed())
	assert.Equal(t, 2, r.Failed())
	recap, changed = readOutput("")
	assert.Empty(t, recap)
	assert.Nil(t, changed)
}
