package wiring

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseRef(t *testing.T) {
	cases := []struct {
		in   string
		want Ref
		str  string // canonical form
		err  string
	}{
		{in: "package:nginx", want: Ref{Kind: Package, Name: "nginx"}, str: "package:nginx"},
		{in: "package:perl-IO-Socket+SSL_1.2", want: Ref{Kind: Package, Name: "perl-IO-Socket+SSL_1.2"}, str: "package:perl-IO-Socket+SSL_1.2"},
		{in: "config:main", want: Ref{Kind: Config, Name: "main"}, str: "config:main"},
		{in: "config:site/a b", want: Ref{Kind: Config, Name: "site/a b"}, str: "config:site/a b"},
		{in: "unit:demo", want: Ref{Kind: Unit, Unit: "demo.service"}, str: "unit:demo.service"},
		{in: "unit:demo.socket", want: Ref{Kind: Unit, Unit: "demo.socket"}, str: "unit:demo.socket"},
		{in: "unit:getty@tty1", want: Ref{Kind: Unit, Unit: "getty@tty1.service"}, str: "unit:getty@tty1.service"},
		{in: "dropin:demo/10-env.conf", want: Ref{Kind: Dropin, Unit: "demo.service", Name: "10-env.conf"}, str: "dropin:demo.service/10-env.conf"},
		{in: "dropin:a:b.service/x:y.conf", want: Ref{Kind: Dropin, Unit: "a:b.service", Name: "x:y.conf"}, str: "dropin:a:b.service/x:y.conf"},

		{in: "nginx", err: `"nginx" is not a reference to a part of the service: want KIND:NAME with KIND one of package:, config:, unit: or dropin:`},
		{in: "", err: `"" is not a reference`},
		{in: "pkg:nginx", err: `unknown kind "pkg" (want package:, config:, unit: or dropin:)`},
		{in: "Package:nginx", err: `unknown kind "Package"`},
		{in: ":nginx", err: `unknown kind ""`},
		{in: "package:", err: `"package:" names nothing: want package:NAME`},
		{in: "config:", err: `"config:" names nothing: want config:NAME`},
		{in: "unit:", err: `"unit:" names nothing: want unit:UNIT`},
		{in: "dropin:", err: `"dropin:" names nothing: want dropin:UNIT/NAME`},
		{in: "package: nginx", err: `package: invalid: package name " nginx" has whitespace at position 1`},
		{in: "package:-x", err: `package: invalid: package name "-x" starts with "-"`},
		{in: "unit:a b", err: `unit: "a b" has a character systemd does not allow`},
		{in: "unit:foo@", err: `unit: "foo@.service" is a template`},
		{in: "dropin:demo", err: `"dropin:demo" has no drop-in name: want dropin:UNIT/NAME`},
		{in: "dropin:demo/", err: `"dropin:demo/" has an empty drop-in name`},
		{in: "dropin:/x.conf", err: `dropin: unit: empty name`},
		{in: "dropin:demo/a/b.conf", err: `the drop-in name "a/b.conf" has a /`},
	}
	for _, c := range cases {
		t.Run(c.in, func(t *testing.T) {
			got, err := ParseRef(c.in)
			if c.err != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), c.err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, c.want, got)
			assert.Equal(t, c.str, got.String())
		})
	}
}

// FuzzParseRef: ParseRef never panics, and what it accepts prints in a form it reads back
// as the same reference, which prints the same again.
func FuzzParseRef(f *testing.F) {
	for _, s := range []string{"package:nginx", "config:main", "unit:demo", "unit:a@b.socket",
		"dropin:demo/10.conf", "dropin:a:b/c/d", "pkg:x", "dropin:", ":", "unit:-x", "config:\xff"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		r, err := ParseRef(s)
		if err != nil {
			return
		}
		again, err := ParseRef(r.String())
		if err != nil {
			t.Fatalf("ParseRef(%q) = %+v, whose form %q does not parse: %v", s, r, r.String(), err)
		}
		if again != r || again.String() != r.String() {
			t.Fatalf("ParseRef(%q) = %+v, read back from %q as %+v", s, r, r.String(), again)
		}
	})
}
