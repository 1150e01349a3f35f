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

func TestParseNEVRA(t *testing.T) {
	cases := []struct {
		in, name, evra string
		err            string
	}{
		{"nginx-2:1.26.3-1.el10.x86_64", "nginx", "2:1.26.3-1.el10.x86_64", ""},
		{"demo-0:1.0-1.noarch", "demo", "0:1.0-1.noarch", ""},
		{"python3-foo-bar-0:1.2-3.el9.noarch", "python3-foo-bar", "0:1.2-3.el9.noarch", ""},
		{"libstdc++-devel-0:11.5.0-2.el9.aarch64", "libstdc++-devel", "0:11.5.0-2.el9.aarch64", ""},
		{"a-1-0:1.0~rc1^git3-1.fc40.s390x", "a-1", "0:1.0~rc1^git3-1.fc40.s390x", ""},
		{"x--0:1-1.noarch", "x-", "0:1-1.noarch", ""},
		{"nginx-1.26.3-1.el10.x86_64", "", "", "epoch is missing"},
		{"0:1.0-1.noarch", "", "", "no '-' before the epoch"},
		{"-0:1.0-1.noarch", "", "", "empty package name"},
		{"demo-00:1.0-1.noarch", "", "", `not in canonical form "demo-0:1.0-1.noarch"`},
		{"demo-0:1.0-1-2.noarch", "", "", "release has '-'"},
		{"demo-0:1.0-1", "", "", "architecture is missing"},
		{"demo-0:1.0-1.noarch.rpm", "demo", "0:1.0-1.noarch.rpm", ""}, // valid: architecture "rpm"
		{"a/b-0:1.0-1.noarch", "", "", "'/'"},
		{"..-0:1.0-1.noarch", "", "", `starts with "."`},
		{"demo-0:1.0/../x-1.noarch", "", "", "'/'"},
		{"de mo-0:1.0-1.noarch", "", "", "whitespace"},
		{"demo-0:1:0-1.noarch", "", "", "':'"},
		{"demo-x:1.0-1.noarch", "", "", "epoch must be digits"},
		{"demo-0:1.0-1.noarch\n", "", "", "control character"},
		{"", "", "", "epoch is missing"},
	}
	for _, c := range cases {
		t.Run(c.in, func(t *testing.T) {
			n, err := ParseNEVRA(c.in)
			if c.name == "" {
				require.ErrorIs(t, err, ErrInvalid)
				assert.ErrorContains(t, err, c.err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, c.name, n.Name)
			assert.Equal(t, c.evra, n.EVRA.String())
			assert.Equal(t, c.in, n.String())
		})
	}
}

// FuzzParseNEVRA: builds come from the rpm database and from records on disk, so whatever
// is accepted must be one plain argument that joins back to itself, its name valid.
func FuzzParseNEVRA(f *testing.F) {
	for _, s := range []string{"nginx-2:1.26.3-1.el10.x86_64", "python3-foo-bar-0:1.2-3.el9.noarch", "x--0:1-1.a",
		"-0:1-1.x", "a-01:1-1.x", "a-0:1-1.x/..", "a:b-0:1-1.x", "a-0:1~2-3.x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		n, err := ParseNEVRA(s)
		if err != nil {
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("%q: error without ErrInvalid: %v", s, err)
			}
			return
		}
		if n.String() != s || ValidateName(n.Name) != nil {
			t.Fatalf("%q split into %q and %q", s, n.Name, n.EVRA)
		}
		if strings.ContainsAny(s, " \t\n\r/;|&$`'\"*?[]<>(){}\\!#") || strings.HasPrefix(s, "-") {
			t.Fatalf("accepted unsafe %q", s)
		}
	})
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
