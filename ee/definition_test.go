package ee

import (
	"archive/tar"
	"compress/gzip"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The repository's execution-environment.yml is the one source of the image's content:
// this is what make ee installs from it.
func TestRepositoryDefinition(t *testing.T) {
	req, err := ReadDefinition("../execution-environment.yml")
	require.NoError(t, err)
	assert.Equal(t, []string{"ansible-core", "openssh-client", "python3", "python3-ansible-runner"}, req.Packages)
	assert.Equal(t, map[string]string{"ansible-core": ">=2.19.0,<2.20.0", "python3": ">=3.11"}, req.Constraints)
	assert.Equal(t, []string{"richt.services"}, req.Collections)
}

const base = `version: 3
dependencies:
  ansible_core:
    package_pip: ansible-core>=2.19.0,<2.20.0
  ansible_runner:
    package_pip: ansible-runner
  galaxy:
    collections:
      - name: /build/collections/richt/services
        type: dir
`

func TestParseDefinition(t *testing.T) {
	for _, c := range []struct {
		name, def string
		packages  []string
		err       string
	}{
		{"minimal", base, []string{"ansible-core", "python3-ansible-runner"}, ""},
		// bindep installs a profile-tagged line only when that profile is requested; the
		// image, like ansible-builder's final stage, requests none beyond "default".
		{"bindep lines for dpkg only", base + "  system:\n    - openssh-clients [platform:rpm]\n    - openssh-client [platform:dpkg]\n    - sshpass\n    - rsync [!platform:dpkg]\n    - git [platform:debian test]\n    - make [test]\n    - curl [!test]\n    - less [default]\n    - vim [platform:dpkg !test]\n    - \"rsync\\t[platform:dpkg]\"\n    - gcc [compile platform:dpkg]\n",
			[]string{"ansible-core", "curl", "less", "openssh-client", "python3-ansible-runner", "rsync", "sshpass", "vim"}, ""},
		{"interpreter", base + "  python_interpreter:\n    package_system: python3.11\n    python_path: /usr/bin/python3.11\n",
			[]string{"ansible-core", "python3", "python3-ansible-runner"}, ""},
		{"a dependency without a row in the table", base + "  python:\n    - requests\n", nil, "dependencies.python: the Debian-built image has no mapping"},
		{"exclude", base + "  exclude:\n    system: [foo]\n", nil, "dependencies.exclude: the Debian-built image has no mapping"},
		{"another collection", strings.Replace(base, "/build/collections/richt/services", "community.general", 1), nil,
			`collection "community.general": the Debian-built image installs only richt.services`},
		{"bindep version constraint", base + "  system:\n    - openssh-client >= 9 [platform:dpkg]\n", nil, "only a [selector] list may follow"},
		{"bad interpreter", base + "  python_interpreter:\n    package_system: rh-python38\n", nil, "want pythonX.Y"},
		// Package names reach a root shell: only Debian's package name syntax passes.
		{"system name with shell", base + "  system:\n    - sshpass\n    - \"x;touch$IFS/tmp/owned\"\n", nil, `dependencies.system[1]: "x;touch$IFS/tmp/owned" is not a Debian package name`},
		{"system name with capitals", base + "  system:\n    - OpenSSH-Client [platform:dpkg]\n", nil, `dependencies.system[0]: "OpenSSH-Client" is not a Debian package name`},
		{"system name of one character", base + "  system:\n    - x\n", nil, `dependencies.system[0]: "x" is not a Debian package name`},
		{"specifier out of range", strings.Replace(base, ">=2.19.0,<2.20.0", ">=99999999999999999999", 1), nil,
			`dependencies.ansible_core.package_pip: version specifier ">=99999999999999999999": 99999999999999999999 is out of range`},
		// Top-level keys: each either shapes nothing the Debian build must follow, or is
		// held to what the Debian build does; anything else is refused by name.
		{"images", base + "images:\n  base_image:\n    name: quay.io/centos/centos:stream9\n", []string{"ansible-core", "python3-ansible-runner"}, ""},
		{"images other than the base", base + "images:\n  builder_image:\n    name: quay.io/x\n", nil, "images.builder_image: "},
		{"additional_build_files of the collection", base + "additional_build_files:\n  - src: build/ansible_collections/richt/services\n    dest: collections/richt/services\n",
			[]string{"ansible-core", "python3-ansible-runner"}, ""},
		{"additional_build_files of something else", base + "additional_build_files:\n  - src: build/ansible_collections/richt/services\n    dest: collections/richt/services\n  - src: ansible.cfg\n    dest: configs\n",
			nil, `additional_build_files[1]: src "ansible.cfg"`},
		{"additional_build_steps", base + "additional_build_steps:\n  append_final:\n    - RUN dnf install -y git\n", nil, "additional_build_steps: "},
		{"options.package_manager_path", base + "options:\n  package_manager_path: /usr/bin/dnf\n", []string{"ansible-core", "python3-ansible-runner"}, ""},
		{"other options", base + "options:\n  package_manager_path: /usr/bin/dnf\n  user: '0'\n", nil, "options.user: "},
		{"build_arg_defaults", base + "build_arg_defaults:\n  ANSIBLE_GALAXY_CLI_COLLECTION_OPTS: --pre\n", nil, "build_arg_defaults: "},
		{"unknown key", base + "ansible_config: ansible.cfg\n", nil, "ansible_config: "},
		// Keys below the top level are allow-listed too: ansible-builder acts on each of
		// these (installs roles, pulls a collection from elsewhere or at another version,
		// signs), and decoding into a struct would drop them silently.
		{"galaxy roles", base + "    roles:\n      - name: geerlingguy.ntp\n", nil, "dependencies.galaxy.roles: "},
		{"collection source", strings.Replace(base, "        type: dir\n", "        type: dir\n        source: https://galaxy.example\n", 1), nil,
			"dependencies.galaxy.collections[0].source: "},
		{"collection version", strings.Replace(base, "        type: dir\n", "        type: dir\n        version: 9.9.9\n", 1), nil,
			"dependencies.galaxy.collections[0].version: "},
		{"ansible_core other key", strings.Replace(base, "    package_pip: ansible-core>=2.19.0,<2.20.0\n", "    package_pip: ansible-core>=2.19.0,<2.20.0\n    package_system: ansible-core\n", 1), nil,
			"dependencies.ansible_core.package_system: "},
		{"ansible_runner other key", strings.Replace(base, "    package_pip: ansible-runner\n", "    package_pip: ansible-runner\n    index_url: https://pypi.example\n", 1), nil,
			"dependencies.ansible_runner.index_url: "},
		{"python_interpreter other key", base + "  python_interpreter:\n    package_system: python3.11\n    venv: /opt/venv\n", nil,
			"dependencies.python_interpreter.venv: "},
		{"additional_build_files other key", base + "additional_build_files:\n  - src: build/ansible_collections/richt/services\n    dest: collections/richt/services\n    mode: '0777'\n",
			nil, "additional_build_files[0].mode: "},
	} {
		t.Run(c.name, func(t *testing.T) {
			req, err := ParseDefinition([]byte(c.def))
			if c.err != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), c.err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, c.packages, req.Packages)
		})
	}
}

func TestParseDefinitionRefuses(t *testing.T) {
	for _, c := range []struct{ name, def, err string }{
		{"schema version 1", strings.Replace(base, "version: 3", "version: 1", 1), "version: 1, want 3"},
		{"renamed pip package", strings.Replace(base, "package_pip: ansible-runner", "package_pip: ansible-runner-ng", 1), `names "ansible-runner-ng"`},
		{"bad specifier", strings.Replace(base, ">=2.19.0,<2.20.0", ">=2.19.0,<<2.20", 1), "is not OP X.Y.Z"},
		{"no runner", strings.Replace(base, "  ansible_runner:\n    package_pip: ansible-runner\n", "", 1), "dependencies.ansible_runner: missing"},
		{"no collection", base[:strings.Index(base, "  galaxy:")], "names no collection"},
		{"not YAML", "version: [3", "not a YAML definition"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := ParseDefinition([]byte(c.def))
			require.Error(t, err)
			assert.Contains(t, err.Error(), c.err)
		})
	}
}

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

func TestMerge(t *testing.T) {
	def := Requirements{Packages: []string{"ansible-core", "python3"}, Constraints: map[string]string{"ansible-core": ">=2.19.0,<2.20.0"}, Collections: []string{"richt.services"}}
	coll := Requirements{Packages: []string{"ansible-core", "sshpass"}, Constraints: map[string]string{"ansible-core": ">=2.18"}}
	got, err := def.Merge(coll)
	require.NoError(t, err)
	assert.Equal(t, Requirements{
		Packages:    []string{"ansible-core", "python3", "sshpass"},
		Constraints: map[string]string{"ansible-core": ">=2.19.0,<2.20.0,>=2.18"},
		Collections: []string{"richt.services"},
	}, got)
}

// The definition is outside input: whatever it holds, ParseDefinition returns an error or
// requirements build.sh can take (Debian names only, sorted and unique, parseable
// specifiers for installed packages, the one collection).
func FuzzParseDefinition(f *testing.F) {
	def, err := os.ReadFile("../execution-environment.yml")
	require.NoError(f, err)
	f.Add(string(def))
	f.Add(base)
	f.Add(base + "  system:\n    - git [platform:debian test]\n    - \"x;y\"\n")
	f.Add(base + "additional_build_steps:\n  append_final: [RUN x]\n")
	f.Add(base + "    roles:\n      - name: geerlingguy.ntp\n")
	f.Add(strings.Replace(base, ">=2.19.0,<2.20.0", ">=99999999999999999999", 1))
	f.Fuzz(func(t *testing.T, data string) {
		req, err := ParseDefinition([]byte(data))
		if err != nil {
			return
		}
		assert.True(t, sort.StringsAreSorted(req.Packages))
		assert.Equal(t, unique(slices.Clone(req.Packages)), req.Packages)
		for _, p := range req.Packages {
			assert.Regexp(t, debianName, p)
		}
		for p, spec := range req.Constraints {
			assert.Contains(t, req.Packages, p)
			_, err := parseSpec(spec)
			assert.NoError(t, err)
		}
		assert.Equal(t, []string{"richt.services"}, req.Collections)
	})
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
