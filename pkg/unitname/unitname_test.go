package unitname

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestNormalize(t *testing.T) {
	for in, want := range map[string]string{"demo": "demo.service", "demo.service": "demo.service", "web@blue.service": "web@blue.service", "web@blue": "web@blue.service", "dbus.socket": "dbus.socket", "a-b\\x2dc.mount": "a-b\\x2dc.mount"} {
		got, err := Normalize(in)
		require.NoError(t, err, in)
		assert.Equal(t, want, got)
	}
	for in, msg := range map[string]string{"": "empty", "-x": "starts with", ".x": "starts with", "a b": "does not allow", "a/b": "does not allow", "web@.service": "is a template", "@x.service": "no name before @", "a;b": "does not allow", strings.Repeat("a", 260): "longer than 255"} {
		_, err := Normalize(in)
		require.Error(t, err, in)
		assert.Contains(t, err.Error(), msg, in)
	}
}

func FuzzNormalize(f *testing.F) {
	for _, s := range []string{"demo", "web@a.service", "-x", "a b"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		u, err := Normalize(s)
		if err != nil {
			return
		}
		if strings.HasPrefix(u, "-") || strings.ContainsAny(u, " /\t\n;$`'\"") {
			t.Fatalf("accepted unsafe unit %q", u)
		}
	})
}
