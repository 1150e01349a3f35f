package ee

import (
	"os"
	"slices"
	"sort"
	"strings"
	"testing"

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
