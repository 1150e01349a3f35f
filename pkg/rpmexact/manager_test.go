package rpmexact

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/richt/services/pkg/runner/runnertest"
)

func TestConstVersion(t *testing.T) {
	cases := []struct {
		name, src, want string
		ok              bool
	}{
		{"DNF 4's const.py", "from __future__ import unicode_literals\nCONF_FILENAME='/etc/dnf/dnf.conf'\nVERSION='4.23.0'\nUSER_AGENT = \"dnf/%s\" % VERSION\n", "4.23.0", true},
		{"double quotes and a comment", "VERSION = \"4.14.0\"  # set by cmake\n", "4.14.0", true},
		{"no VERSION", "PLUGINPATH = '/usr/lib/python3/dist-packages/dnf-plugins'\n", "", false},
		{"computed", "VERSION = get_version()\n", "", false},
		{"indented (not top level)", "if x:\n    VERSION='4.1.0'\n", "", false},
		{"assigned twice", "VERSION='4.1.0'\nVERSION='4.2.0'\n", "", false},
		{"a longer name", "API_VERSION='1'\nVERSION_X='2'\n", "", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, ok := ConstVersion([]byte(c.src))
			assert.Equal(t, c.ok, ok)
			assert.Equal(t, c.want, got)
		})
	}
}

func TestQuickManagerVersion(t *testing.T) {
	const script = "#!/usr/bin/python3\nfrom dnf.cli import main\n"
	find := runnertest.Call{Argv: []string{"/usr/bin/python3", "-I", "-c", findDNF}, Stdout: "/usr/lib/python3/dist-packages/dnf/__init__.py\n"}
	files := func(fs map[string]string) ManagerFiles {
		return ManagerFiles{
			Locate: func(string) (string, error) { return "/usr/bin/dnf-3", nil },
			ReadFile: func(p string) ([]byte, error) {
				if s, ok := fs[p]; ok {
					return []byte(s), nil
				}
				return nil, errors.New("no such file")
			},
		}
	}
	dnf4 := map[string]string{"/usr/bin/dnf-3": script, "/usr/lib/python3/dist-packages/dnf/const.py": "VERSION='4.23.0'\n"}
	cases := []struct {
		name  string
		files map[string]string
		calls []runnertest.Call
		want  string
		ok    bool
	}{
		{"DNF 4", dnf4, []runnertest.Call{find}, "4.23.0", true},
		{"DNF 5 is a program: not answered", map[string]string{"/usr/bin/dnf-3": "\x7fELF"}, nil, "", false},
		{"a script that does not run dnf.cli", map[string]string{"/usr/bin/dnf-3": "#!/usr/bin/python3\nimport yummain\n"}, nil, "", false},
		{"the interpreter finds no dnf", dnf4, []runnertest.Call{{Argv: find.Argv, Stdout: "\n"}}, "", false},
		{"the interpreter fails", dnf4, []runnertest.Call{{Argv: find.Argv, ExitCode: 1}}, "", false},
		{"no const.py", map[string]string{"/usr/bin/dnf-3": script}, []runnertest.Call{find}, "", false},
		{"a version that is not DNF 4", map[string]string{"/usr/bin/dnf-3": script, "/usr/lib/python3/dist-packages/dnf/const.py": "VERSION='5.0.0'\n"}, []runnertest.Call{find}, "", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := runnertest.New(t, c.calls...)
			got, ok := QuickManagerVersion(context.Background(), s, files(c.files), "dnf")
			assert.Equal(t, c.ok, ok)
			assert.Equal(t, c.want, got)
			assert.Equal(t, len(c.calls), s.Count())
		})
	}
}

func FuzzConstVersion(f *testing.F) {
	for _, s := range []string{"VERSION='4.23.0'\n", "VERSION = \"4.1\" # x\n", "VERSION='1'\nVERSION='2'\n", "  VERSION='1'"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, src []byte) {
		got, ok := ConstVersion(src)
		if ok && (len(got) > len(src)) {
			t.Fatalf("version %q longer than its source", got)
		}
		if strings.ContainsRune(got, '\n') {
			t.Fatalf("version %q spans lines", got)
		}
	})
}
