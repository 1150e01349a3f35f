package ee

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseVersionsLabel(t *testing.T) {
	assert.Equal(t, map[string]string{"ansible-core": "2.19.11-1", "openssh-client": "1:10.0p1-7"},
		parseVersionsLabel(" ansible-core=2.19.11-1  openssh-client=1:10.0p1-7 junk =x y= \n"))
	assert.Empty(t, parseVersionsLabel(""))
	assert.Empty(t, parseVersionsLabel("<no value>"))
}

// build.sh's output and an image's label are read back: any text gives one-word names and
// versions, and a label written from the versions reads back the same.
func FuzzBuiltVersions(f *testing.F) {
	f.Add("package ansible-core 2.19.11-1\nnoise\npackage python3 3.13.5-1\nbuilt x\n")
	f.Add("package a=b 1\npackage  x\n")
	f.Fuzz(func(t *testing.T, out string) {
		v := builtVersions(out)
		var label []string
		for name, version := range v {
			assert.Equal(t, []string{name}, strings.Fields(name))
			assert.Equal(t, []string{version}, strings.Fields(version))
			if !strings.Contains(name, "=") {
				label = append(label, name+"="+version)
			} else {
				delete(v, name) // not a Debian name: build.sh never writes it into a label
			}
		}
		assert.Equal(t, v, parseVersionsLabel(strings.Join(label, " ")))
		parseVersionsLabel(out)
	})
}

func TestCheckVersions(t *testing.T) {
	req := Requirements{Packages: []string{"ansible-core", "openssh-client"}, Constraints: map[string]string{"ansible-core": ">=2.19.0,<2.20.0"}}
	assert.NoError(t, checkVersions(req, map[string]string{"ansible-core": "2.19.11-1", "openssh-client": "1:10.0p1-7"}))
	err := checkVersions(req, map[string]string{"ansible-core": "2.14.18-0+deb12u2"})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "ansible-core is 2.14.18-0+deb12u2, the definition wants >=2.19.0,<2.20.0")
	assert.Contains(t, err.Error(), "openssh-client is not installed")
	assert.Equal(t, map[string]string{"ansible-core": "2.19.11-1", "python3": "3.13.5-1"},
		builtVersions("package ansible-core 2.19.11-1\nnoise\npackage python3 3.13.5-1\nbuilt x\n"))
}
