package invocation

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

func TestSinceAndEpoch(t *testing.T) {
	old := Start
	t.Cleanup(func() { Start = old })
	Start = time.Unix(1000, 900_000_000)
	cases := []struct {
		name string
		at   time.Time
		want bool
	}{
		{"before this run", time.Unix(1000, 899_999_999), false},
		{"the moment it began", time.Unix(1000, 900_000_000), true},
		{"later", time.Unix(1001, 0), true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { assert.Equal(t, c.want, Since(c.at)) })
	}
	assert.Equal(t, int64(1000), Epoch(), "rounded down: the journal lines of the first second are kept")
}
