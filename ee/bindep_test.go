package ee

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A bindep line: an error, or a package name (one word) and whether the image installs it;
// the bare name always applies.
func FuzzBindepLine(f *testing.F) {
	for _, l := range []string{"openssh-client [platform:dpkg]", "git [platform:debian test]", "rsync [!platform:dpkg]", "curl [!test]",
		"less [default]", "openssh-client >= 9 [platform:dpkg]", "  ", "x [!default]"} {
		f.Add(l)
	}
	f.Fuzz(func(t *testing.T, line string) {
		name, ok, err := bindepDpkg(line)
		if err != nil || !ok {
			return
		}
		assert.NotEmpty(t, name)
		assert.Equal(t, strings.Fields(name), []string{name})
		again, ok, err := bindepDpkg(name)
		require.NoError(t, err)
		assert.True(t, ok)
		assert.Equal(t, name, again)
	})
}
