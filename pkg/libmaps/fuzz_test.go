package libmaps

import (
	"strings"
	"testing"
)

// FuzzParseMaps feeds arbitrary text to the maps parser: it never panics, and every
// mapping it returns is an absolute path with an inode, never a pseudo file.
func FuzzParseMaps(f *testing.F) {
	f.Add(recorded)
	f.Add("7f0000000000-7f0000001000 r--p 00000000 fd:01 12   /a b (deleted)\n")
	f.Add("0-1 ---- 0 0:0 1 /x\\012y\n")
	f.Add("\n\n")
	f.Fuzz(func(t *testing.T, s string) {
		ms, err := ParseMaps(strings.NewReader(s))
		if err != nil {
			return
		}
		for _, m := range ms {
			if !strings.HasPrefix(m.Path, "/") || m.Inode == 0 {
				t.Fatalf("bad mapping %+v from %q", m, s)
			}
			for _, p := range pseudo {
				if strings.HasPrefix(m.Path, p) {
					t.Fatalf("pseudo file %+v from %q", m, s)
				}
			}
		}
	})
}
