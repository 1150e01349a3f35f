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
