package main

import (
	"math/rand"
	"testing"

	"github.com/stretchr/testify/assert"
)

// The same seed draws the same sequence of steps and faults: a failing seed replays.
func TestDrawIsAFunctionOfTheSeed(t *testing.T) {
	draw := func(seed int64) []string {
		r := rand.New(rand.NewSource(seed))
		var out []string
		for range 200 {
			op, fault, check := Draw(r)
			out = append(out, op+"/"+fault+"/"+map[bool]string{true: "check"}[check])
		}
		return out
	}
	assert.Equal(t, draw(42), draw(42))
	assert.NotEqual(t, draw(42), draw(43))
	seen := map[string]bool{}
	for _, s := range draw(7) {
		seen[s] = true
	}
	assert.Greater(t, len(seen), 20, "the draws vary")
}

func TestPickFaults(t *testing.T) {
	for _, tc := range []struct {
		list string
		want []string
		err  string
	}{
		{"reboot", []string{"reboot"}, ""},
		{"power-loss, kill-module", []string{"kill-module", "power-loss"}, ""},
		{"reboot,unplug", nil, `unknown fault kind "unplug"`},
	} {
		t.Run(tc.list, func(t *testing.T) {
			got, err := pickFaults(tc.list)
			if tc.err != "" {
				assert.ErrorContains(t, err, tc.err)
				return
			}
			assert.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
}
