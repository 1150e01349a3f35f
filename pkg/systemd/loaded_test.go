package systemd

import (
	"context"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/richt/services/pkg/runner/runnertest"
)

func TestParseUnitsLoaded(t *testing.T) {
	for _, tc := range []struct {
		out  string
		want uint64
		err  bool
	}{
		{"UnitsLoadTimestampMonotonic=604267964\n", 604267964, false},
		{"UnitsLoadTimestampMonotonic=0\n", 0, false},
		{"UnitsLoadTimestampMonotonic=\n", 0, true},
		{"UnitsLoadTimestampMonotonic=-1\n", 0, true},
		{"UnitsLoadStartTimestampMonotonic=5\n", 0, true},
		{"UnitsLoadTimestampMonotonic=5\nUnitsLoadTimestampMonotonic=6\n", 0, true},
		{"", 0, true},
	} {
		got, err := ParseUnitsLoaded(tc.out)
		if tc.err {
			assert.Error(t, err, tc.out)
			continue
		}
		require.NoError(t, err, tc.out)
		assert.Equal(t, tc.want, got)
	}
}

// The manager is asked with exactly this command line.
func TestSystemctlUnitsLoaded(t *testing.T) {
	r := runnertest.New(t, runnertest.Call{Argv: []string{"systemctl", "show", "--property=UnitsLoadTimestampMonotonic"}, Stdout: "UnitsLoadTimestampMonotonic=42\n"})
	got, err := Systemctl{Runner: r}.UnitsLoaded(context.Background())
	require.NoError(t, err)
	assert.Equal(t, uint64(42), got)
}

func FuzzParseUnitsLoaded(f *testing.F) {
	f.Add("UnitsLoadTimestampMonotonic=604267964\n")
	f.Add("UnitsLoadTimestampMonotonic=\n")
	f.Add("")
	f.Fuzz(func(t *testing.T, out string) {
		got, err := ParseUnitsLoaded(out)
		if err != nil {
			return
		}
		// Accepted only as the one property with a number that reads back the same.
		v, ok := strings.CutPrefix(strings.TrimSuffix(out, "\n"), UnitsLoadedProperty+"=")
		if n, err := strconv.ParseUint(v, 10, 64); !ok || err != nil || n != got {
			t.Fatalf("accepted %q as %d", out, got)
		}
	})
}
