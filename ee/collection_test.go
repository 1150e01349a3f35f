package ee

import (
	"archive/tar"
	"compress/gzip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// writeTarball writes a collection tarball with the given build time and files.
func writeTarball(t *testing.T, path string, mtime time.Time, files map[string]string) {
	t.Helper()
	f, err := os.Create(path)
	require.NoError(t, err)
	gz := gzip.NewWriter(f)
	gz.ModTime = mtime
	tw := tar.NewWriter(gz)
	for _, name := range []string{"MANIFEST.json", "bin/richt-modules-x86_64"} {
		require.NoError(t, tw.WriteHeader(&tar.Header{Name: name, Mode: 0o755, Size: int64(len(files[name])), ModTime: mtime, Typeflag: tar.TypeReg}))
		_, err := tw.Write([]byte(files[name]))
		require.NoError(t, err)
	}
	require.NoError(t, tw.Close())
	require.NoError(t, gz.Close())
	require.NoError(t, f.Close())
}

// Two builds of one commit differ in their archives' times, not in content: one image.
func TestCollectionDigestIgnoresBuildTimes(t *testing.T) {
	dir := t.TempDir()
	manifest := `{"collection_info": {"namespace": "richt", "name": "services", "version": "0.3.0"}}`
	files := map[string]string{"MANIFEST.json": manifest, "bin/richt-modules-x86_64": "ELF one"}
	a, b, c := filepath.Join(dir, "a.tar.gz"), filepath.Join(dir, "b.tar.gz"), filepath.Join(dir, "c.tar.gz")
	writeTarball(t, a, time.Unix(1000, 0), files)
	writeTarball(t, b, time.Unix(2000, 0), files)
	files["bin/richt-modules-x86_64"] = "ELF two"
	writeTarball(t, c, time.Unix(1000, 0), files)
	ca, err := ReadCollection(a)
	require.NoError(t, err)
	cb, err := ReadCollection(b)
	require.NoError(t, err)
	cc, err := ReadCollection(c)
	require.NoError(t, err)
	assert.Equal(t, "richt.services", ca.Name)
	assert.Equal(t, "0.3.0", ca.Version)
	assert.Empty(t, ca.Requirements.Packages, "no meta/execution-environment.yml, requirements.txt or bindep.txt")
	assert.Equal(t, ca.Digest, cb.Digest)
	assert.NotEqual(t, ca.Digest, cc.Digest)

	req := Requirements{Packages: []string{"ansible-core"}}
	assert.Equal(t, Tag(Suite, req, ca), Tag(Suite, req, cb))
	assert.NotEqual(t, Tag(Suite, req, ca), Tag(Suite, req, cc))
	assert.NotEqual(t, Tag(Suite, req, ca), Tag("bookworm", req, ca))
	assert.NotEqual(t, Tag(Suite, req, ca), Tag(Suite, Requirements{Packages: []string{"ansible-core", "sshpass"}}, ca))
	assert.True(t, strings.HasPrefix(Tag(Suite, req, ca), "richt-services-ee:0.3.0-"))

	_, err = ReadCollection(filepath.Join(dir, "missing.tar.gz"))
	assert.ErrorContains(t, err, "collection tarball")
	require.NoError(t, os.WriteFile(filepath.Join(dir, "plain"), []byte("not gzip"), 0o644))
	_, err = ReadCollection(filepath.Join(dir, "plain"))
	assert.ErrorContains(t, err, "collection tarball")
}

// files serves a collection's files from a map, as the tarball would.
func files(m map[string]string) func(string) ([]byte, bool) {
	return func(name string) ([]byte, bool) {
		s, ok := m[name]
		return []byte(s), ok
	}
}

// The collection's own meta/execution-environment.yml, which ansible-builder reads when
// it installs the collection: it asks for nothing beyond the definition.
func TestCollectionRequirementsOfThisCollection(t *testing.T) {
	req, err := CollectionRequirements(func(name string) ([]byte, bool) {
		data, err := os.ReadFile(filepath.Join("../collection", name))
		return data, err == nil
	})
	require.NoError(t, err)
	assert.Empty(t, req.Packages)
	assert.Empty(t, req.Constraints)
}

func TestCollectionRequirements(t *testing.T) {
	for _, c := range []struct {
		name        string
		files       map[string]string
		packages    []string
		constraints map[string]string
		err         string
	}{
		{"no metadata, no files", map[string]string{}, nil, nil, ""},
		{"empty dependencies", map[string]string{"meta/execution-environment.yml": "version: 1\ndependencies: {}\n"}, nil, nil, ""},
		{"inline lists", map[string]string{"meta/execution-environment.yaml": "dependencies:\n  python:\n    - ansible-core>=2.18\n    - ansible_runner\n  system:\n    - sshpass [platform:dpkg]\n    - sshpass [platform:rpm]\n"},
			[]string{"ansible-core", "python3-ansible-runner", "sshpass"}, map[string]string{"ansible-core": ">=2.18"}, ""},
		{"files named by the metadata", map[string]string{"meta/execution-environment.yml": "dependencies:\n  python: meta/req.txt\n  system: bindep.txt\n",
			"meta/req.txt": "# the controller\n-r more.txt\n\nansible-core<2.21  # comment\n", "meta/more.txt": "ansible-runner\n", "bindep.txt": "rsync\nmake [test]\n"},
			[]string{"ansible-core", "python3-ansible-runner", "rsync"}, map[string]string{"ansible-core": "<2.21"}, ""},
		{"files at the root without metadata", map[string]string{"requirements.txt": "ansible-runner\n", "bindep.txt": "  \n"},
			[]string{"python3-ansible-runner"}, nil, ""},
		{"metadata wins over root files", map[string]string{"meta/execution-environment.yml": "dependencies: {}\n", "requirements.txt": "requests\n"}, nil, nil, ""},
		{"a pip package without a row", map[string]string{"meta/execution-environment.yml": "dependencies:\n  python:\n    - ansible-runner\n    - requests>=2\n"},
			nil, nil, `dependencies.python[1]: "requests>=2": no row in the table in ee/definition.go maps pip's requests to a Debian package`},
		{"a pip package without a row, in a file", map[string]string{"requirements.txt": "ansible-runner\njmespath\n"},
			nil, nil, `requirements.txt line 2: "jmespath": no row in the table`},
		{"a bad system name", map[string]string{"meta/execution-environment.yml": "dependencies:\n  system: [\"a;b\"]\n"},
			nil, nil, `dependencies.system[0]: "a;b" is not a Debian package name`},
		{"a missing file", map[string]string{"meta/execution-environment.yml": "dependencies:\n  system: bindep.txt\n"},
			nil, nil, "dependencies.system: bindep.txt: not in the collection"},
		{"an absolute path", map[string]string{"meta/execution-environment.yml": "dependencies:\n  python: /etc/passwd\n"},
			nil, nil, "dependencies.python: /etc/passwd: not a relative path"},
		{"another dependency", map[string]string{"meta/execution-environment.yml": "dependencies:\n  galaxy: requirements.yml\n"},
			nil, nil, "dependencies.galaxy: ansible-builder reads only python and system"},
		{"a requirements loop", map[string]string{"requirements.txt": "-r requirements.txt\n"}, nil, nil, "-r nests deeper than"},
	} {
		t.Run(c.name, func(t *testing.T) {
			req, err := CollectionRequirements(files(c.files))
			if c.err != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), c.err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, c.packages, req.Packages)
			if c.constraints == nil {
				c.constraints = map[string]string{}
			}
			assert.Equal(t, c.constraints, req.Constraints)
		})
	}
}

// A collection's metadata and requirements files are outside input (any collection could
// be installed): an error, or Debian names with parseable specifiers; -r loops end.
func FuzzCollectionRequirements(f *testing.F) {
	f.Add("dependencies:\n  python:\n    - ansible-core>=2.18\n  system: bindep.txt\n", "ansible-runner\n-r requirements.txt\n", "sshpass [platform:dpkg]\n")
	f.Add("dependencies: {}\n", "", "")
	f.Add("dependencies:\n  python: requirements.txt\n", "-r requirements.txt\n", "")
	f.Fuzz(func(t *testing.T, meta, requirements, bindep string) {
		m := map[string]string{"requirements.txt": requirements, "bindep.txt": bindep}
		if meta != "" {
			m["meta/execution-environment.yml"] = meta
		}
		req, err := CollectionRequirements(files(m))
		if err != nil {
			return
		}
		for _, p := range req.Packages {
			assert.Regexp(t, debianName, p)
		}
		for p, spec := range req.Constraints {
			assert.Contains(t, req.Packages, p)
			_, err := parseSpec(spec)
			assert.NoError(t, err)
		}
	})
}
