package dnfscript

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestInterpreter(t *testing.T) {
	cases := []struct {
		name, src, want string
		ok              bool
	}{
		{"EL and Debian", "#!/usr/bin/python3\n# The dnf executable script.\n", "/usr/bin/python3", true},
		{"with options", "#!/usr/bin/python3 -s\n", "/usr/bin/python3", true},
		{"EL 8", "#!/usr/libexec/platform-python\n", "/usr/libexec/platform-python", true},
		{"space after #!", "#! /usr/bin/python3\n", "/usr/bin/python3", true},
		{"env indirection", "#!/usr/bin/env python3\n", "", false},
		{"relative", "#!python3\n", "", false},
		{"argument that is no option", "#!/usr/bin/python3 script\n", "", false},
		{"compiled program", "\x7fELF\x02\x01\x01", "", false},
		{"empty #!", "#!\n", "", false},
		{"empty", "", "", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, ok := Interpreter([]byte(c.src))
			assert.Equal(t, c.ok, ok)
			assert.Equal(t, c.want, got)
		})
	}
}

func TestReadFile(t *testing.T) {
	dir := t.TempDir()
	cases := []struct {
		name string
		size int // -1: no file
		err  error
	}{
		{"a DNF 4 script", 1 << 10, nil},
		{"exactly the bound", MaxFile, nil},
		{"one byte over", MaxFile + 1, ErrTooLarge},
		{"a compiled DNF 5", 4 << 20, ErrTooLarge},
		{"missing", -1, fs.ErrNotExist},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(dir, strings.ReplaceAll(c.name, " ", "-"))
			want := []byte(strings.Repeat("x", max(c.size, 0)))
			if c.size >= 0 {
				if err := os.WriteFile(path, want, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			got, err := ReadFile(path)
			if c.err != nil {
				assert.ErrorIs(t, err, c.err)
				assert.Nil(t, got)
				return
			}
			assert.NoError(t, err)
			assert.Equal(t, want, got)
		})
	}
}

func FuzzInterpreter(f *testing.F) {
	for _, s := range []string{"#!/usr/bin/python3\n", "#!/usr/bin/env python3\n", "#! /x -s -E\nbody", "\x7fELF"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, src []byte) {
		got, ok := Interpreter(src)
		if ok && (got == "" || got[0] != '/') {
			t.Fatalf("accepted interpreter %q is not an absolute path", got)
		}
	})
}

func TestShebang(t *testing.T) {
	cases := []struct {
		name, src, interp, arg string
		ok                     bool
	}{
		{"no argument", "#!/usr/bin/python3\nimport sys\n", "/usr/bin/python3", "", true},
		{"one option", "#!/usr/bin/python3 -s\n", "/usr/bin/python3", "-s", true},
		{"options, one argument as the kernel passes them", "#! /usr/bin/python3 -s -E \n", "/usr/bin/python3", "-s -E", true},
		{"env indirection", "#!/usr/bin/env python3\n", "", "", false},
		{"a carriage return (a CRLF file)", "#!/usr/bin/python3\r\n", "", "", false},
		{"a vertical tab", "#!/usr/bin/python3\v-s\n", "", "", false},
		{"no #!", "import sys\n", "", "", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			interp, arg, ok := Shebang([]byte(c.src))
			assert.Equal(t, c.ok, ok)
			assert.Equal(t, c.interp, interp)
			assert.Equal(t, c.arg, arg)
		})
	}
}

func TestRunsCLI(t *testing.T) {
	const tail = "from dnf.cli import main\nmain.user_main(sys.argv[1:], exit_code=True)\n"
	cases := []struct {
		name, src string
		want      bool
	}{
		{"DNF 4's script", "#!/usr/bin/python3\nimport sys\nhere = sys.path[0]\n" + tail, true},
		{"indented in a branch", "#!/usr/bin/python3 -s\nif True:\n    from dnf.cli import main\n    main.user_main(sys.argv[1:], exit_code=True)\n", true},
		{"imports DNF's command line, runs something else", "#!/usr/bin/python3\nfrom dnf.cli import main\nmain.main(sys.argv[1:])\n", false},
		{"runs it without its exit code", "#!/usr/bin/python3\nfrom dnf.cli import main\nmain.user_main(sys.argv[1:])\n", false},
		{"no interpreter DNF's start can run", "#!/usr/bin/env python3\n" + tail, false},
		{"a shell wrapper", "#!/bin/sh\nexec /usr/bin/dnf-3 \"$@\"\n", false},
		{"a compiled program (DNF 5)", "\x7fELF\x02\x01\x01" + tail, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			assert.Equal(t, c.want, RunsCLI([]byte(c.src)))
		})
	}
}

func FuzzShebangAndRunsCLI(f *testing.F) {
	for _, s := range []string{"#!/usr/bin/python3\nfrom dnf.cli import main\nmain.user_main(sys.argv[1:], exit_code=True)\n", "#!/usr/bin/python3 -s\n", "#!  /x  -s -E \nbody", "#!/usr/bin/env python3\n", "\x7fELF"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, src []byte) {
		want, wantOK := Interpreter(src)
		interp, arg, ok := Shebang(src)
		if ok && (!wantOK || interp != want) {
			t.Fatalf("Shebang %q %v, Interpreter %q %v", interp, ok, want, wantOK)
		}
		if ok {
			first, _, _ := strings.Cut(string(src), "\n")
			if strings.ContainsAny(arg, "\n") || (arg != "" && !strings.Contains(first, arg)) || strings.TrimSpace(arg) != arg {
				t.Fatalf("argument %q is not the #! line's rest, trimmed: %q", arg, first)
			}
		}
		if RunsCLI(src) && !wantOK {
			t.Fatalf("a script without an accepted interpreter runs DNF's command line")
		}
	})
}
