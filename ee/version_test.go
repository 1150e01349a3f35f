package ee

import (
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestSatisfies(t *testing.T) {
	for _, c := range []struct {
		deb, spec string
		want      bool
	}{
		{"2.19.11-1", ">=2.19.0,<2.20.0", true},
		{"2.14.18-0+deb12u2", ">=2.19.0,<2.20.0", false},
		{"2.20.0-1", ">=2.19.0,<2.20.0", false},
		{"1:2.19.4+dfsg-2", ">=2.19.0,<2.20.0", true},
		{"3.13.5-1", ">=3.11", true},
		{"3.11.2-1+b1", ">=3.11", true},
		{"3.9.2-3", ">=3.11", false},
		{"2.4.1-1", "", true},
		{"2.19.11-1", "==2.19.*", true},
		{"2.19.11-1", "~=2.19.0", true},
		{"2.20.1-1", "~=2.19.0", false},
		{"2.19.11-1", "!=2.19.11", false},
	} {
		got, err := Satisfies(c.deb, c.spec)
		require.NoError(t, err, "%s %s", c.deb, c.spec)
		assert.Equal(t, c.want, got, "%s %s", c.deb, c.spec)
	}
	_, err := Satisfies("git", ">=1")
	assert.ErrorContains(t, err, "no numeric upstream version")
}

// Specifiers come from the definition, versions from dpkg: a parse error or an answer,
// consistent with the clauses one by one and with the version's own number.
func FuzzSatisfies(f *testing.F) {
	for _, s := range [][2]string{{"2.19.11-1", ">=2.19.0,<2.20.0"}, {"1:2.19.4+dfsg-2", "~=2.19.0"}, {"2.19.11-1", "==2.19.*"},
		{"3.11.2-1+b1", ">=3.11"}, {"git", ">=1"}, {"2.4.1-1", ""}, {"1.0-1", ">=99999999999999999999"}, {"99999999999999999999", "!=1"}} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, deb, spec string) {
		got, err := Satisfies(deb, spec)
		if err != nil {
			return
		}
		for _, part := range strings.Split(spec, ",") {
			if strings.TrimSpace(spec) == "" {
				break
			}
			one, err := Satisfies(deb, part)
			require.NoError(t, err, "clause %q of %q", part, spec)
			if !one {
				assert.False(t, got, "%q fails clause %q but meets %q", deb, part, spec)
			}
		}
		v, err := upstreamVersion(deb)
		require.NoError(t, err)
		var parts []string
		for _, n := range v {
			parts = append(parts, strconv.Itoa(n))
		}
		own := strings.Join(parts, ".")
		for spec, want := range map[string]bool{">=" + own: true, "==" + own: true, "<=" + own: true, "<" + own: false, ">" + own: false, "!=" + own: false} {
			ok, err := Satisfies(deb, spec)
			require.NoError(t, err, spec)
			assert.Equal(t, want, ok, "%q %s", deb, spec)
		}
	})
}
