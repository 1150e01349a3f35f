package ee

import (
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Every part of the requirements shapes the image or what it is held to: changing any one
// of them must give a new tag, or the old image would be reused unchecked.
func TestTagCoversRequirements(t *testing.T) {
	coll := Collection{Name: "richt.services", Version: "0.3.0", Digest: "d1"}
	req := func() Requirements {
		return Requirements{
			Packages:    []string{"ansible-core", "python3-ansible-runner"},
			Constraints: map[string]string{"ansible-core": ">=2.19.0,<2.20.0"},
			Collections: []string{"richt.services"},
		}
	}
	want, wantBase := Tag(Suite, req(), coll), BaseTag(Suite, req())
	assert.Equal(t, want, Tag(Suite, req(), coll), "the key is stable")
	assert.Equal(t, wantBase, BaseTag(Suite, req()), "the base's key is stable")
	assert.Regexp(t, `^richt-services-ee-base:[0-9a-f]{12}$`, wantBase)
	assert.Regexp(t, `^richt-services-ee:0\.3\.0-[0-9a-f]{12}$`, want)
	for _, c := range []struct {
		name   string
		change func(*string, *Requirements, *Collection)
		// base: the change is the base's too (a new base is built), not only the layer's.
		base bool
	}{
		{"constraint", func(_ *string, r *Requirements, _ *Collection) { r.Constraints["ansible-core"] = ">=2.20" }, true},
		{"new constraint", func(_ *string, r *Requirements, _ *Collection) { r.Constraints["python3"] = ">=3.11" }, true},
		{"package", func(_ *string, r *Requirements, _ *Collection) { r.Packages = append(r.Packages, "sshpass") }, true},
		{"suite", func(s *string, _ *Requirements, _ *Collection) { *s = "forky" }, true},
		{"collections", func(_ *string, r *Requirements, _ *Collection) { r.Collections = nil }, false},
		{"collection content", func(_ *string, _ *Requirements, c *Collection) { c.Digest = "d2" }, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			suite, r, cl := Suite, req(), coll
			c.change(&suite, &r, &cl)
			assert.NotEqual(t, want, Tag(suite, r, cl))
			if c.base {
				assert.NotEqual(t, wantBase, BaseTag(suite, r), "a new base")
			} else {
				assert.Equal(t, wantBase, BaseTag(suite, r), "the base is reused")
			}
		})
	}
}

// The collection's version goes into a docker tag, which allows only [A-Za-z0-9_.-], may
// not start with '.' or '-', and has at most 128 characters.
func TestTagIsAValidDockerTag(t *testing.T) {
	valid := regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$`)
	req := Requirements{Packages: []string{"ansible-core"}}
	for _, c := range []struct{ version, prefix string }{
		{"0.3.0", "0.3.0-"},
		{"1.0.0+b1", "1.0.0-b1-"},
		{"1.0.0-rc.1+build/7 x", "1.0.0-rc.1-build-7-x-"},
		{".hidden", "_hidden-"},
		{strings.Repeat("9", 300), strings.Repeat("9", 115) + "-"},
	} {
		t.Run(c.version, func(t *testing.T) {
			tag := Tag(Suite, req, Collection{Name: "richt.services", Version: c.version, Digest: "d"})
			name, ver, ok := strings.Cut(tag, ":")
			require.True(t, ok)
			assert.Equal(t, Repository, name)
			assert.Regexp(t, valid, ver)
			assert.True(t, strings.HasPrefix(ver, c.prefix), "%q starts with %q", ver, c.prefix)
		})
	}
}
