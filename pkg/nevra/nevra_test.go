package nevra

import (
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseEVRA(t *testing.T) {
	cases := []struct {
		in   string
		want EVRA
		err  string
	}{
		{"0:1.0-1.noarch", EVRA{0, "1.0", "1", "noarch"}, ""},
		{"2:4.18.0-553.el9_4.x86_64", EVRA{2, "4.18.0", "553.el9_4", "x86_64"}, ""},
		{"0:1.0~rc1^git3-1.fc40.aarch64", EVRA{0, "1.0~rc1^git3", "1.fc40", "aarch64"}, ""},
		{"1.0-1.noarch", EVRA{}, "epoch is missing"},
		{":1.0-1.noarch", EVRA{}, "epoch must be digits"},
		{"a:1.0-1.noarch", EVRA{}, "epoch must be digits"},
		{"99999999999:1.0-1.noarch", EVRA{}, "out of range"},
		{"0:1.0.noarch", EVRA{}, "release is missing"},
		{"0:1.0-1", EVRA{}, "architecture is missing"},
		{"0:1.0-1.", EVRA{}, "architecture is empty"},
		{"0:-1.noarch", EVRA{}, "version is empty"},
		{"0:1.0-.noarch", EVRA{}, "release is empty"},
		{"0:1.0-1-2.noarch", EVRA{}, "release has '-'"},
		{"0:1.0 -1.noarch", EVRA{}, "whitespace"},
		{"0:1.0-1.no arch", EVRA{}, "whitespace"},
		{"0:1.0-1.noarch;reboot", EVRA{}, "';'"},
		{"0:1.0-1.x86-64", EVRA{}, "architecture has '-'"},
		{"0:1.*-1.noarch", EVRA{}, "'*'"},
		{"0:1.0-1.noarch\n", EVRA{}, "control character"},
		{"0:1:0-1.noarch", EVRA{}, "':'"},
	}
	for _, c := range cases {
		t.Run(c.in, func(t *testing.T) {
			got, err := ParseEVRA(c.in)
			if c.err != "" {
				require.ErrorIs(t, err, ErrInvalid)
				assert.ErrorContains(t, err, c.err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, c.want, got)
			assert.Equal(t, c.in, got.String())
		})
	}
}

func TestValidateName(t *testing.T) {
	for _, ok := range []string{"demo", "python3-dnf", "libstdc++", "NetworkManager", "kernel_core.x", "a"} {
		assert.NoError(t, ValidateName(ok), ok)
	}
	for bad, why := range map[string]string{
		"":                       "empty",
		"-y":                     `starts with "-"`,
		".hidden":                `starts with "."`,
		"a b":                    "whitespace",
		"a/b":                    "'/'",
		"a;b":                    "';'",
		"$(reboot)":              "'$'",
		"a*":                     "'*'",
		"a?":                     "'?'",
		"a[1]":                   "'['",
		"a\tb":                   "whitespace",
		"a\x00b":                 "control character",
		"pkg\u00e9":              "non-ASCII",
		"demo-0:1.0":             "':'",
		"`id`":                   "'`'",
		strings.Repeat("a", 256): "longer than 255",
	} {
		err := ValidateName(bad)
		require.Error(t, err, "%q", bad)
		assert.True(t, errors.Is(err, ErrInvalid))
		assert.ErrorContains(t, err, why, "%q", bad)
	}
}

// FuzzParseEVRA: whatever is accepted is one plain argument, and its canonical form (epoch
// without leading zeros) parses back to the same value.
func FuzzParseEVRA(f *testing.F) {
	for _, s := range []string{"0:1.0-1.noarch", "2:4.18.0-553.el9_4.x86_64", "0:1-1.a", "1:a-b.c.d", "-0:1-1.x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		e, err := ParseEVRA(s)
		if err != nil {
			return
		}
		again, err := ParseEVRA(e.String())
		if err != nil || again != e {
			t.Fatalf("round trip: %q -> %q -> %v, %v", s, e.String(), again, err)
		}
		if strings.ContainsAny(s, " \t\n\r/;|&$`'\"*?[]<>(){}\\!#") || strings.HasPrefix(s, "-") {
			t.Fatalf("accepted unsafe %q", s)
		}
	})
}

func FuzzValidateName(f *testing.F) {
	for _, s := range []string{"demo", "-rf", "a b", "libstdc++", "x/y"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if ValidateName(s) != nil {
			return
		}
		if s == "" || strings.HasPrefix(s, "-") || strings.ContainsAny(s, " \t\n\r/;|&$`'\"*?[]<>(){}\\!#:=,") {
			t.Fatalf("accepted unsafe name %q", s)
		}
	})
}
