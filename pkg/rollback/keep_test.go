package rollback

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/richt/services/pkg/nevra"
	"github.com/richt/services/pkg/runner"
	"github.com/richt/services/pkg/runner/runnertest"
)

// splitNEVRA reads a build with nevra.ParseNEVRA, whose rules are tested there; its own rule
// is the kept file name's length.
func TestSplitNEVRA(t *testing.T) {
	b, err := splitNEVRA("nginx-2:1.26.3-1.el10.x86_64")
	require.NoError(t, err)
	assert.Equal(t, "nginx-2:1.26.3-1.el10.x86_64", b.nevra)
	assert.Equal(t, "nginx", b.name)
	assert.Equal(t, "2:1.26.3-1.el10.x86_64", b.evra.String())

	// The longest build that keeps has a file name of maxKeptName bytes.
	const rest = "-0:1-1.x"
	longest := strings.Repeat("n", maxKeptName-len(keptName(rest))) + rest
	_, err = splitNEVRA(longest)
	require.NoError(t, err)
	assert.Len(t, keptName(longest), maxKeptName)
	for _, c := range []struct{ in, err string }{
		{"n" + longest, "too long to keep"},
		{"nginx-1.26.3-1.el10.x86_64", "epoch is missing"}, // nevra's refusal, passed on
	} {
		_, err := splitNEVRA(c.in)
		require.ErrorIs(t, err, nevra.ErrInvalid, c.in)
		assert.ErrorContains(t, err, c.err, c.in)
	}
}

// FuzzSplitNEVRA: builds come from the rpm database, so whatever is accepted must join back
// to itself and give a kept file name that stays inside Dir and fits a file name.
func FuzzSplitNEVRA(f *testing.F) {
	// Seeds at the kept name's edges: its length bound, the '~' that stands for ':', and
	// what would leave Dir.
	for _, s := range []string{"nginx-2:1.26.3-1.el10.x86_64", strings.Repeat("n", 218) + "-0:1-1.x",
		strings.Repeat("n", 219) + "-0:1-1.x", "a~b-0:1~2-3.x", "..-0:1-1.x", "a-0:1-1.x/.."} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		b, err := splitNEVRA(s)
		if err != nil {
			if !errors.Is(err, nevra.ErrInvalid) {
				t.Fatalf("%q: error without ErrInvalid: %v", s, err)
			}
			return
		}
		if b.evra.NEVRA(b.name) != s || nevra.ValidateName(b.name) != nil {
			t.Fatalf("%q split into %q and %q", s, b.name, b.evra)
		}
		name := keptName(s)
		if strings.ContainsAny(name, "/:\x00") || strings.HasPrefix(name, ".") || len(name) > maxKeptName {
			t.Fatalf("%q keeps as unsafe file name %q", s, name)
		}
		k := Keeper{Dir: "/k"}
		if filepath.Dir(k.Path(s)) != "/k" {
			t.Fatalf("%q keeps outside Dir: %q", s, k.Path(s))
		}
	})
}

func TestPath(t *testing.T) {
	assert.Equal(t, "/var/cache/richt/rpms/nginx-2~1.26.3-1.el10.x86_64.rpm", Keeper{}.Path("nginx-2:1.26.3-1.el10.x86_64"))
	assert.Equal(t, "/k/demo-0~1.0~rc1-1.noarch.rpm", Keeper{Dir: "/k"}.Path("demo-0:1.0~rc1-1.noarch"))
	for _, bad := range []string{"", "demo", "../x-0:1-1.noarch", "demo-0:1.0-1.noarch/x", "demo-0:1-1.noarch\n"} {
		assert.Empty(t, Keeper{Dir: "/k"}.Path(bad), bad)
	}
}

// keepPy is the embedded script as it is on disk: the argv below spells the command out
// instead of reusing the package's own variables.
func keepPy(t *testing.T) string {
	src, err := os.ReadFile("keep.py")
	require.NoError(t, err)
	return string(src)
}

const (
	argA = `{"arch":"noarch","epoch":0,"file":"a-0~1.0-1.noarch.rpm","name":"a","nevra":"a-0:1.0-1.noarch","release":"1","version":"1.0"}`
	argB = `{"arch":"x86_64","epoch":2,"file":"b-lib-2~3.1-4.el9.x86_64.rpm","name":"b-lib","nevra":"b-lib-2:3.1-4.el9.x86_64","release":"4.el9","version":"3.1"}`
	argC = `{"arch":"noarch","epoch":0,"file":"c-0~1.0-1.noarch.rpm","name":"c","nevra":"c-0:1.0-1.noarch","release":"1","version":"1.0"}`
)

const (
	nevraA = "a-0:1.0-1.noarch"
	nevraB = "b-lib-2:3.1-4.el9.x86_64"
	nevraC = "c-0:1.0-1.noarch"
)

// listDir names what dir holds, with modes; nil when it does not exist.
func listDir(t *testing.T, dir string) []string {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	require.NoError(t, err)
	out := []string{}
	for _, e := range entries {
		fi, err := e.Info()
		require.NoError(t, err)
		out = append(out, e.Name()+" "+fi.Mode().String())
	}
	sort.Strings(out)
	return out
}

// tempOf is a temporary file keep.py would make for nevra in dir, and a Do that makes it
// with content.
func tempOf(dir, nevra, digits, content string) (string, func()) {
	p := filepath.Join(dir, "."+keptName(nevra)+".richt-"+digits)
	return p, func() {
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			panic(err)
		}
	}
}

// found1 is keep.py's answer line for one found build at path and the missing builds.
func found1(nevra, repo, path string, missing ...string) string {
	m := `[]`
	if len(missing) > 0 {
		m = `["` + strings.Join(missing, `", "`) + `"]`
	}
	return "RICHT-KEEP-RESULT " + `{"found": {"` + nevra + `": {"path": "` + path + `", "repo": "` + repo + `"}}, "missing": ` + m + `}`
}

func TestEnsure(t *testing.T) {
	py := "/usr/libexec/platform-python"
	cases := []struct {
		name     string
		keptA    string // content of a's kept file before the run; "" for none
		emptyB   bool   // b's kept file exists, empty, before the run
		nevras   []string
		check    bool
		calls    func(dir string) []runnertest.Call
		missing  []string
		files    []string // Dir afterwards; nil: Dir does not exist
		contentB string   // content of b's kept file afterwards
	}{
		{
			name: "fetch: one kept, one found, one missing", keptA: "old a",
			nevras: []string{nevraA, nevraB, nevraC},
			calls: func(dir string) []runnertest.Call {
				tmp, mk := tempOf(dir, nevraB, "123", "build b")
				return []runnertest.Call{{
					Argv: []string{py, "-I", "-c", keepPy(t), "fetch", dir, argB, argC},
					Do:   mk,
					Stdout: "Last metadata expiration check: 0:00:01 ago.\npartial line\n" +
						found1(nevraB, "local", tmp, nevraC) + "\n",
				}}
			},
			missing:  []string{nevraC},
			files:    []string{"a-0~1.0-1.noarch.rpm -rw-------", "b-lib-2~3.1-4.el9.x86_64.rpm -rw-------"},
			contentB: "build b",
		},
		{
			name:   "check: asks, copies nothing, creates no directory",
			nevras: []string{nevraA, nevraB, nevraC}, check: true,
			calls: func(dir string) []runnertest.Call {
				return []runnertest.Call{{
					Argv:   []string{py, "-I", "-c", keepPy(t), "check", dir, argA, argB, argC},
					Stdout: "RICHT-KEEP-RESULT " + `{"found": {"` + nevraA + `": {"path": "", "repo": "r1"}, "` + nevraB + `": {"path": "", "repo": "r2"}}, "missing": ["` + nevraC + `"]}`,
				}}
			},
			missing: []string{nevraC},
		},
		{
			name: "check with a kept build asks only for the others", keptA: "old a",
			nevras: []string{nevraC, nevraA}, check: true,
			calls: func(dir string) []runnertest.Call {
				return []runnertest.Call{{
					Argv:   []string{py, "-I", "-c", keepPy(t), "check", dir, argC},
					Stdout: found1(nevraC, "r1", ""),
				}}
			},
			files: []string{"a-0~1.0-1.noarch.rpm -rw-------"},
		},
		{
			name: "everything kept: no command", keptA: "old a",
			nevras: []string{nevraA, nevraA},
			calls:  func(string) []runnertest.Call { return nil },
			files:  []string{"a-0~1.0-1.noarch.rpm -rw-------"},
		},
		{
			name:   "nothing asked: no command, no directory",
			nevras: nil,
			calls:  func(string) []runnertest.Call { return nil },
		},
		{
			name: "an empty kept file is fetched again, duplicates asked once", emptyB: true,
			nevras: []string{nevraB, nevraB},
			calls: func(dir string) []runnertest.Call {
				tmp, mk := tempOf(dir, nevraB, "9", "build b")
				return []runnertest.Call{{
					Argv:   []string{py, "-I", "-c", keepPy(t), "fetch", dir, argB},
					Do:     mk,
					Stdout: found1(nevraB, "r", tmp),
				}}
			},
			files:    []string{"b-lib-2~3.1-4.el9.x86_64.rpm -rw-------"},
			contentB: "build b",
		},
		{
			name:   "all missing in a real run creates the directory only",
			nevras: []string{nevraC, nevraA},
			calls: func(dir string) []runnertest.Call {
				return []runnertest.Call{{
					Argv:   []string{py, "-I", "-c", keepPy(t), "fetch", dir, argC, argA},
					Stdout: "RICHT-KEEP-RESULT " + `{"found": {}, "missing": ["` + nevraA + `", "` + nevraC + `"]}`,
				}}
			},
			missing: []string{nevraC, nevraA},
			files:   []string{},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "rpms")
			k := Keeper{Runner: runnertest.New(t, c.calls(dir)...), Dir: dir, Python: py}
			if c.keptA != "" || c.emptyB {
				require.NoError(t, os.Mkdir(dir, 0o700))
			}
			if c.keptA != "" {
				require.NoError(t, os.WriteFile(k.Path(nevraA), []byte(c.keptA), 0o600))
			}
			if c.emptyB {
				require.NoError(t, os.WriteFile(k.Path(nevraB), nil, 0o600))
			}
			missing, err := k.Ensure(context.Background(), c.nevras, c.check)
			require.NoError(t, err)
			assert.Equal(t, c.missing, missing)
			assert.Equal(t, c.files, listDir(t, dir))
			if c.files != nil {
				fi, err := os.Stat(dir)
				require.NoError(t, err)
				assert.Equal(t, os.FileMode(0o700), fi.Mode().Perm())
			}
			if c.contentB != "" {
				got, err := os.ReadFile(k.Path(nevraB))
				require.NoError(t, err)
				assert.Equal(t, c.contentB, string(got))
			}
			if c.keptA != "" {
				got, err := os.ReadFile(k.Path(nevraA))
				require.NoError(t, err)
				assert.Equal(t, c.keptA, string(got), "a kept build is not fetched again")
			}
		})
	}
}

func TestEnsureFailures(t *testing.T) {
	py := "/usr/bin/python3"
	cases := []struct {
		name   string
		nevras []string
		check  bool
		insec  bool // Dir exists with mode 0777
		calls  func(dir string) []runnertest.Call
		err    []string
		left   []string // Dir's files afterwards besides nothing
	}{
		{
			name: "bad build: nothing run", nevras: []string{nevraB, "b-lib-2:3.1-4.el9.x86_64;reboot"},
			err: []string{"keep builds", "architecture has ';'"},
		},
		{
			name: "python cannot import dnf", nevras: []string{nevraB, nevraC},
			calls: func(dir string) []runnertest.Call {
				return []runnertest.Call{{
					Argv: []string{py, "-I", "-c", keepPy(t), "fetch", dir, argB, argC}, ExitCode: 1,
					Stdout: "\nRICHT-KEEP-RESULT {\"error\": \"/usr/bin/python3 cannot import dnf (DNF 4's Python API): No module named 'dnf'\"}\n",
				}}
			},
			err: []string{"find " + nevraB + ", " + nevraC + " in the repositories", "No module named 'dnf'", "exit 1"},
		},
		{
			name: "no python", nevras: []string{nevraB},
			calls: func(dir string) []runnertest.Call {
				return []runnertest.Call{{Argv: []string{py, "-I", "-c", keepPy(t), "fetch", dir, argB},
					Err: errors.New("run /usr/bin/python3: no such file or directory")}}
			},
			err: []string{"find " + nevraB + " in the repositories", "no such file"},
		},
		{
			name: "deadline", nevras: []string{nevraB}, check: true,
			calls: func(dir string) []runnertest.Call {
				return []runnertest.Call{{Argv: []string{py, "-I", "-c", keepPy(t), "check", dir, argB}, Err: runner.ErrDeadline}}
			},
			err: []string{"deadline exceeded"},
		},
		{
			name: "crash without an answer", nevras: []string{nevraB},
			calls: func(dir string) []runnertest.Call {
				return []runnertest.Call{{Argv: []string{py, "-I", "-c", keepPy(t), "fetch", dir, argB}, ExitCode: 139, Stderr: "Segmentation fault"}}
			},
			err: []string{"/usr/bin/python3 exited 139: Segmentation fault"},
		},
		{
			name: "exit 0 without an answer", nevras: []string{nevraB},
			calls: func(dir string) []runnertest.Call {
				return []runnertest.Call{{Argv: []string{py, "-I", "-c", keepPy(t), "fetch", dir, argB}, Stdout: "hello"}}
			},
			err: []string{"no answer line", "hello"},
		},
		{
			name: "answer not JSON", nevras: []string{nevraB},
			calls: func(dir string) []runnertest.Call {
				return []runnertest.Call{{Argv: []string{py, "-I", "-c", keepPy(t), "fetch", dir, argB}, Stdout: "RICHT-KEEP-RESULT {found"}}
			},
			err: []string{"answer line"},
		},
		{
			name: "answer leaves a build out: its files are removed", nevras: []string{nevraB, nevraC},
			calls: func(dir string) []runnertest.Call {
				tmp, mk := tempOf(dir, nevraB, "1", "b")
				return []runnertest.Call{{Argv: []string{py, "-I", "-c", keepPy(t), "fetch", dir, argB, argC}, Do: mk, Stdout: found1(nevraB, "r", tmp)}}
			},
			err: []string{"answer leaves " + nevraC + " out"},
		},
		{
			name: "answer names an unasked build", nevras: []string{nevraB},
			calls: func(dir string) []runnertest.Call {
				return []runnertest.Call{{Argv: []string{py, "-I", "-c", keepPy(t), "fetch", dir, argB},
					Stdout: "RICHT-KEEP-RESULT " + `{"found": {}, "missing": ["` + nevraB + `", "` + nevraC + `"]}`}}
			},
			err: []string{`answer names "` + nevraC + `" twice or unasked`},
		},
		{
			name: "answer names a build twice", nevras: []string{nevraB},
			calls: func(dir string) []runnertest.Call {
				return []runnertest.Call{{Argv: []string{py, "-I", "-c", keepPy(t), "fetch", dir, argB},
					Stdout: "RICHT-KEEP-RESULT " + `{"found": {"` + nevraB + `": {"path": "/r/b.rpm"}}, "missing": ["` + nevraB + `"]}`}}
			},
			err: []string{`answer names "` + nevraB + `" twice or unasked`},
		},
		{
			name: "a path that is not the build's temporary file is refused and left alone", nevras: []string{nevraB},
			calls: func(dir string) []runnertest.Call {
				other, mk := tempOf(dir, nevraA, "1", "a") // another build's name
				return []runnertest.Call{{Argv: []string{py, "-I", "-c", keepPy(t), "fetch", dir, argB}, Do: mk, Stdout: found1(nevraB, "r", other)}}
			},
			err:  []string{`answer gives "`, `.a-0~1.0-1.noarch.rpm.richt-1" for ` + nevraB + `, not a temporary file of `},
			left: []string{".a-0~1.0-1.noarch.rpm.richt-1 -rw-------"},
		},
		{
			name: "a repository file's path is refused", nevras: []string{nevraB},
			calls: func(dir string) []runnertest.Call {
				return []runnertest.Call{{Argv: []string{py, "-I", "-c", keepPy(t), "fetch", dir, argB}, Stdout: found1(nevraB, "r", "/repo/b.rpm")}}
			},
			err: []string{`answer gives "/repo/b.rpm" for ` + nevraB + `, not a temporary file of `},
		},
		{
			name: "temporary file gone", nevras: []string{nevraB},
			calls: func(dir string) []runnertest.Call {
				tmp, _ := tempOf(dir, nevraB, "1", "")
				return []runnertest.Call{{Argv: []string{py, "-I", "-c", keepPy(t), "fetch", dir, argB}, Stdout: found1(nevraB, "r", tmp)}}
			},
			err: []string{"keep " + nevraB + " from repository r", "no such file"},
		},
		{
			name: "temporary file empty: removed", nevras: []string{nevraB, nevraA},
			calls: func(dir string) []runnertest.Call {
				tmpB, makeB := tempOf(dir, nevraB, "1", "")
				tmpA, makeA := tempOf(dir, nevraA, "2", "a")
				return []runnertest.Call{{Argv: []string{py, "-I", "-c", keepPy(t), "fetch", dir, argB, argA},
					Do: func() { makeA(); makeB() },
					Stdout: "RICHT-KEEP-RESULT " + `{"found": {"` + nevraB + `": {"path": "` + tmpB + `", "repo": "r"}, "` +
						nevraA + `": {"path": "` + tmpA + `", "repo": "r"}}, "missing": []}`}}
			},
			err: []string{"keep " + nevraB + " from repository r", "is not a non-empty regular file"},
		},
		{
			name: "insecure directory: nothing run", nevras: []string{nevraB}, insec: true,
			err: []string{"keep builds", "writable by group or others"},
		},
		{
			name: "insecure directory in check mode too", nevras: []string{nevraB}, insec: true, check: true,
			err: []string{"keep builds", "writable by group or others"},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "rpms")
			var calls []runnertest.Call
			if c.calls != nil {
				calls = c.calls(dir)
			}
			k := Keeper{Runner: runnertest.New(t, calls...), Dir: dir, Python: py}
			if c.insec {
				require.NoError(t, os.Mkdir(dir, 0o700))
				require.NoError(t, os.Chmod(dir, 0o777))
			}
			missing, err := k.Ensure(context.Background(), c.nevras, c.check)
			require.Error(t, err)
			assert.Nil(t, missing)
			for _, want := range c.err {
				assert.ErrorContains(t, err, want)
			}
			if len(calls) > 0 && calls[0].Err != nil {
				assert.ErrorIs(t, err, calls[0].Err)
			}
			left := c.left
			if left == nil {
				left = []string{}
			}
			if files := listDir(t, dir); files != nil {
				assert.Equal(t, left, files, "nothing kept, no temporary file of ours left")
			}
		})
	}
}

func TestPrune(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "rpms")
	k := Keeper{Dir: dir}
	require.NoError(t, k.Prune([]string{nevraA}), "missing Dir is fine")
	require.NoError(t, os.Mkdir(dir, 0o700))
	for _, f := range []string{
		"a-0~1.0-1.noarch.rpm", "b-lib-2~3.1-4.el9.x86_64.rpm", "c-0~1.0-1.noarch.rpm",
		"a-0~1.0-1.noarch.rpm.gpgcheck", "c-0~1.0-1.noarch.rpm.gpgcheck", // gpgcheck marks
		".c-0~1.0-1.noarch.rpm.richt-12345", ".a-0~1.0-1.noarch.rpm.richt-9", // killed copies
		".a-0~1.0-1.noarch.rpm.richt-x1", "notes.txt", "x.rpm.bak", // not ours
	} {
		require.NoError(t, os.WriteFile(filepath.Join(dir, f), []byte("x"), 0o600))
	}
	require.NoError(t, os.Mkdir(filepath.Join(dir, "d.rpm"), 0o700))
	require.NoError(t, os.Symlink("/etc/passwd", filepath.Join(dir, "link.rpm")))

	err := k.Prune([]string{nevraA, "bad build"})
	require.ErrorContains(t, err, "prune kept builds")
	assert.Len(t, listDir(t, dir), 12, "bad input removes nothing")

	require.NoError(t, k.Prune([]string{nevraA, nevraB}))
	assert.Equal(t, []string{
		".a-0~1.0-1.noarch.rpm.richt-x1 -rw-------",
		"a-0~1.0-1.noarch.rpm -rw-------",
		"a-0~1.0-1.noarch.rpm.gpgcheck -rw-------",
		"b-lib-2~3.1-4.el9.x86_64.rpm -rw-------",
		"d.rpm drwx------",
		"notes.txt -rw-------",
		"x.rpm.bak -rw-------",
	}, listDir(t, dir))
	_, err = os.Stat("/etc/passwd")
	assert.NoError(t, err, "a link is removed, not its target")

	require.NoError(t, k.Prune(nil))
	assert.Len(t, listDir(t, dir), 4, "an empty keep list removes every kept build")

	require.NoError(t, os.Chmod(dir, 0o777))
	assert.ErrorContains(t, k.Prune(nil), "writable by group or others")
}

func TestIsKeptTemp(t *testing.T) {
	for name, want := range map[string]bool{
		".a-0~1-1.noarch.rpm.richt-1":     true,
		".a-0~1-1.noarch.rpm.richt-":      false,
		"a-0~1-1.noarch.rpm.richt-1":      false,
		".rpm.richt-1":                    false,
		".a-0~1-1.noarch.rpm.richt-1a":    false,
		".a-0~1-1.noarch.conf.richt-1":    false,
		".x.rpm.richt-1.rpm.richt-222222": true,
	} {
		assert.Equal(t, want, isKeptTemp(name), name)
	}
}

func TestDnfPython(t *testing.T) {
	files := map[string]string{
		"/usr/bin/dnf-3":     "#!/usr/libexec/platform-python -s\nimport dnf.cli\n",
		"/usr/bin/dnf-env":   "#!/usr/bin/env python3\n",
		"/usr/bin/dnf5":      "\x7fELF...",
		"/usr/bin/dnf-plain": "#!/usr/bin/python3.12\n",
	}
	for _, c := range []struct{ located, want string }{
		{"/usr/bin/dnf-3", "/usr/libexec/platform-python"},
		{"/usr/bin/dnf-plain", "/usr/bin/python3.12"},
		{"/usr/bin/dnf-env", DefaultPython},
		{"/usr/bin/dnf5", DefaultPython},
		{"/usr/bin/unreadable", DefaultPython},
		{"", DefaultPython},
	} {
		locate := func(cmd string) (string, error) {
			assert.Equal(t, "dnf", cmd)
			if c.located == "" {
				return "", errors.New("not found")
			}
			return c.located, nil
		}
		read := func(p string) ([]byte, error) {
			if s, ok := files[p]; ok {
				return []byte(s), nil
			}
			return nil, os.ErrNotExist
		}
		assert.Equal(t, c.want, dnfPython(locate, read), c.located)
	}
}

func TestParseAnswer(t *testing.T) {
	cases := []struct {
		stdout  string
		missing []string
		err     string
	}{
		{"RICHT-KEEP-RESULT {\"missing\": [\"x\"]}", []string{"x"}, ""},
		{"noise\nRICHT-KEEP-RESULT {\"missing\": [\"x\"]}\n", []string{"x"}, ""},
		{"RICHT-KEEP-RESULT {\"missing\": [\"old\"]}\nmore\nRICHT-KEEP-RESULT {\"missing\": [\"x\"]}\ntrailing noise\n", []string{"x"}, ""},
		{"text RICHT-KEEP-RESULT {\"missing\": [\"x\"]}", nil, "no answer line"},
		{"", nil, "no answer line"},
		{"RICHT-KEEP-RESULT ", nil, "answer line"},
	}
	for _, c := range cases {
		ans, err := parseAnswer(c.stdout)
		if c.err != "" {
			assert.ErrorContains(t, err, c.err, c.stdout)
			continue
		}
		require.NoError(t, err, c.stdout)
		assert.Equal(t, c.missing, ans.Missing, c.stdout)
	}
}

func TestKeepScriptIsEmbedded(t *testing.T) {
	assert.Equal(t, keepPy(t), keepScript)
	assert.Contains(t, keepScript, "MARKER = \""+keepMarker+"\"", "the script and the parser agree on the marker")
}

// fakeDNF is just enough of DNF 4's Python API for keep.py, as keep.py uses it: it checks
// the calls' order and arguments and logs them to $FAKE_DNF_LOG. It shows the script's own
// logic (choice, modes, answer); whether real DNF behaves so is the end-to-end tests' part.
const fakeDNF = `
import json, os, sys
STATE = json.load(open(os.environ["FAKE_DNF_STATE"]))
def log(*a):
    with open(os.environ["FAKE_DNF_LOG"], "a") as f:
        f.write(" ".join(str(x) for x in a) + "\n")

class Subst(dict):
    def update_from_etc(self, installroot, varsdir=()):
        log("vars", installroot, ",".join(varsdir))

class Conf:
    installroot = "/"
    varsdir = ("/etc/dnf/vars",)
    keepcache = False
    def __init__(self):
        self.substitutions = Subst()
    def read(self):
        log("conf.read")
    def __setattr__(self, name, value):
        if name == "cachedir":
            log("cachedir", value, os.path.isdir(value))
        object.__setattr__(self, name, value)

class Repo:
    def __init__(self, d):
        self.id = d["id"]
        self.gpgcheck = d.get("gpgcheck", False)
        self.priority = d.get("priority", 99)
        self.cost = 1000
        self.local = d.get("local", False)
        self.skip_if_unavailable = False

class Repos(dict):
    def iter_enabled(self):
        return iter(self.values())

class Pkg:
    def __init__(self, d, repo):
        self.d, self.repo, self.reponame = d, repo, repo.id
        self.downloaded = repo.local
    def _is_local_pkg(self):
        return self.repo.local
    def localPkg(self):
        return self.d["path"]
    def verifyLocalPkg(self):
        return self.d.get("verifies", True)

class Query:
    def __init__(self, pkgs):
        self.pkgs = pkgs
    def available(self):
        return self
    def filter(self, **kw):
        assert set(kw) == {"name", "epoch", "version", "release", "arch"}, kw
        assert isinstance(kw["epoch"], int), kw
        return Query([p for p in self.pkgs if all(p.d[k] == v for k, v in kw.items())])
    def __iter__(self):
        return iter(self.pkgs)

class Sack:
    def __init__(self, pkgs):
        self.pkgs = pkgs
    def query(self):
        return Query(self.pkgs)

class Base:
    def __init__(self):
        self.conf = Conf()
        self.repos = Repos()
        self.sack = None
        self.tempfiles = []
    def read_all_repos(self):
        log("read_all_repos")
        for d in STATE["repos"]:
            self.repos[d["id"]] = Repo(d)
    def fill_sack(self, load_system_repo=True, load_available_repos=True):
        log("fill_sack", load_system_repo, load_available_repos,
            "skip=" + ",".join(sorted(r.id for r in self.repos.values() if r.skip_if_unavailable)))
        if STATE.get("fill_fails"):
            raise RuntimeError("Failed to download metadata for repo 'r1'")
        self.sack = Sack([Pkg(d, self.repos[d["repo"]]) for d in STATE["pkgs"]])
    def download_packages(self, pkgs, progress=None, callback_total=None):
        sys.stdout.write("downloading, no newline")
        log("download", " ".join(sorted(p.d["name"] + "@" + p.reponame for p in pkgs)))
        for p in pkgs:
            if not p.repo.local:
                with open(p.d["path"], "w") as f:
                    f.write("downloaded " + p.d["name"])
                self.tempfiles.append(p.d["path"])
    def package_signature_check(self, pkg):
        # 0 verified, 1 the key is missing, 2 a bad signature, 3 not signed.
        sig = pkg.d.get("sig", 0)
        log("signature", pkg.d["name"], sig)
        return sig, {0: "", 1: "public key not installed", 2: "bad signature", 3: "package is not signed"}[sig]
    def _get_key_for_package(self, pkg, askcb=None, fullaskcb=None):
        log("import key", pkg.reponame, askcb(pkg, "uid", "0xKEY"))
        pkg.d["sig"] = 0
    def close(self):
        # As DNF 4 does with keepcache off: what download_packages fetched goes.
        log("close")
        if not self.conf.keepcache:
            for path in self.tempfiles:
                os.unlink(path)
`

// TestKeepScriptWithFakeDNF runs keep.py in the host's python3 against fakeDNF.
func TestKeepScriptWithFakeDNF(t *testing.T) {
	python, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("no python3 on this host")
	}
	root := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(root, "dnf"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(root, "dnf", "__init__.py"), []byte(fakeDNF), 0o644))
	local := filepath.Join(root, "local-b.rpm")
	require.NoError(t, os.WriteFile(local, []byte("local b"), 0o644))
	remoteA, remoteB := filepath.Join(root, "cache-a.rpm"), filepath.Join(root, "cache-b.rpm")
	state := `{"repos": [{"id": "r1", "priority": 10}, {"id": "local", "local": true}, {"id": "dead"}],
	  "pkgs": [
	    {"repo": "r1", "name": "a", "epoch": 0, "version": "1.0", "release": "1", "arch": "noarch", "path": "` + remoteA + `"},
	    {"repo": "r1", "name": "a", "epoch": 1, "version": "1.0", "release": "1", "arch": "noarch", "path": "/wrong-epoch"},
	    {"repo": "r1", "name": "b-lib", "epoch": 2, "version": "3.1", "release": "4.el9", "arch": "x86_64", "path": "` + remoteB + `"},
	    {"repo": "local", "name": "b-lib", "epoch": 2, "version": "3.1", "release": "4.el9", "arch": "x86_64", "path": "` + local + `"},
	    {"repo": "r1", "name": "c", "epoch": 0, "version": "1.0", "release": "1", "arch": "x86_64", "path": "/wrong-arch"}
	  ]%s}`
	dest := filepath.Join(root, "rpms")
	require.NoError(t, os.Mkdir(dest, 0o700))
	run := func(t *testing.T, extraState string, args ...string) (runner.Result, string) {
		stateFile, logFile := filepath.Join(t.TempDir(), "state.json"), filepath.Join(t.TempDir(), "log")
		require.NoError(t, os.WriteFile(stateFile, []byte(strings.Replace(state, "%s", extraState, 1)), 0o644))
		// Not -I: the fake is found through PYTHONPATH, which -I ignores.
		cmd := exec.Command(python, append([]string{"-c", keepScript}, args...)...)
		cmd.Env = append(os.Environ(), "PYTHONPATH="+root, "FAKE_DNF_STATE="+stateFile, "FAKE_DNF_LOG="+logFile, "PYTHONDONTWRITEBYTECODE=1")
		var out, errOut strings.Builder
		cmd.Stdout, cmd.Stderr = &out, &errOut
		err := cmd.Run()
		res := runner.Result{Stdout: out.String(), Stderr: errOut.String()}
		var exitErr *exec.ExitError
		if errors.As(err, &exitErr) {
			res.ExitCode = exitErr.ExitCode()
		} else {
			require.NoError(t, err)
		}
		logged, _ := os.ReadFile(logFile)
		return res, string(logged)
	}
	setup := "conf.read\nvars / /etc/dnf/vars\nread_all_repos\nfill_sack False True skip=dead,local,r1\n"

	// checkSetup is setup in check mode: DNF's cache is a new temporary directory.
	checkSetup := func(t *testing.T, logged string) string {
		m := regexp.MustCompile(`(?m)^cachedir (\S+) True\n`).FindStringSubmatch(logged)
		require.NotNil(t, m, "check mode sets a temporary cache directory: %s", logged)
		assert.NoDirExists(t, m[1], "and removes it")
		return strings.Replace(logged, m[0], "", 1)
	}
	t.Run("check", func(t *testing.T) {
		res, logged := run(t, "", "check", dest, argA, argB, argC)
		require.Equal(t, 0, res.ExitCode, res.Stderr)
		ans, err := parseAnswer(res.Stdout)
		require.NoError(t, err)
		assert.Equal(t, answer{Found: map[string]found{nevraA: {Repo: "r1"}, nevraB: {Repo: "local"}}, Missing: []string{nevraC}}, ans)
		assert.Equal(t, setup+"close\n", checkSetup(t, logged), "no download in check mode")
		assert.NoFileExists(t, remoteA)
	})
	t.Run("fetch checks signatures where the repository has gpgcheck on", func(t *testing.T) {
		for _, c := range []struct {
			name, sig string
			err       string
			log       string
		}{
			{"signed", `"sig": 0`, "", "signature a 0\n"},
			{"its key imported from the repository first", `"sig": 1`, "", "signature a 1\nimport key r1 True\nsignature a 0\n"},
			{"a bad signature: refused", `"sig": 2`, "bad signature", "signature a 2\n"},
			{"not signed: refused", `"sig": 3`, "package is not signed", "signature a 3\n"},
		} {
			t.Run(c.name, func(t *testing.T) {
				t.Cleanup(func() { require.NoError(t, os.RemoveAll(dest)); require.NoError(t, os.Mkdir(dest, 0o700)) })
				signed := strings.Replace(strings.Replace(state, `{"id": "r1", "priority": 10}`, `{"id": "r1", "priority": 10, "gpgcheck": true}`, 1),
					`"path": "`+remoteA+`"`, `"path": "`+remoteA+`", `+c.sig, 1)
				stateBackup := state
				state = signed
				defer func() { state = stateBackup }()
				res, logged := run(t, "", "fetch", dest, argA, argB)
				assert.Equal(t, setup+"download a@r1 b-lib@local\n"+c.log+"close\n", logged)
				ans, err := parseAnswer(res.Stdout)
				require.NoError(t, err, res.Stdout)
				if c.err != "" {
					assert.Equal(t, 1, res.ExitCode)
					assert.Contains(t, ans.Error, nevraA+" from repository r1, which has gpgcheck on, fails DNF's signature check ("+c.err+")")
					assert.Empty(t, listDir(t, dest), "nothing copied is left")
					return
				}
				require.Equal(t, 0, res.ExitCode, res.Stderr)
				assert.True(t, ans.Found[nevraA].GPGCheck, "a's repository has gpgcheck on")
				assert.False(t, ans.Found[nevraB].GPGCheck, "b's has not: not checked")
			})
		}
	})
	t.Run("fetch prefers the local repository, copies into dest before close", func(t *testing.T) {
		t.Cleanup(func() { require.NoError(t, os.RemoveAll(dest)); require.NoError(t, os.Mkdir(dest, 0o700)) })
		res, logged := run(t, "", "fetch", dest, argA, argB, argC)
		require.Equal(t, 0, res.ExitCode, res.Stderr)
		ans, err := parseAnswer(res.Stdout)
		require.NoError(t, err, res.Stdout)
		k := Keeper{Dir: dest}
		require.Len(t, ans.Found, 2)
		assert.Equal(t, []string{nevraC}, ans.Missing)
		for n, want := range map[string]struct{ repo, content string }{nevraA: {"r1", "downloaded a"}, nevraB: {"local", "local b"}} {
			f := ans.Found[n]
			assert.Equal(t, want.repo, f.Repo, n)
			assert.True(t, isTempOf(f.Path, k.Path(n)), "%s: %s", n, f.Path)
			got, err := os.ReadFile(f.Path)
			require.NoError(t, err, n)
			assert.Equal(t, want.content, string(got), n)
			fi, err := os.Stat(f.Path)
			require.NoError(t, err)
			assert.Equal(t, os.FileMode(0o600), fi.Mode().Perm(), n)
		}
		assert.Equal(t, setup+"download a@r1 b-lib@local\nclose\n", logged)
		assert.NoFileExists(t, remoteA, "the fake's close removed the download, after the copy")
		assert.FileExists(t, local, "a local repository's file stays")
	})
	t.Run("nothing found: no download", func(t *testing.T) {
		res, logged := run(t, "", "fetch", dest, argC)
		require.Equal(t, 0, res.ExitCode, res.Stderr)
		ans, err := parseAnswer(res.Stdout)
		require.NoError(t, err)
		assert.Equal(t, answer{Found: map[string]found{}, Missing: []string{nevraC}}, ans)
		assert.Equal(t, setup+"close\n", logged)
	})
	t.Run("check says whether the repository has gpgcheck on", func(t *testing.T) {
		signed := strings.Replace(state, `{"id": "r1", "priority": 10}`, `{"id": "r1", "priority": 10, "gpgcheck": true}`, 1)
		stateBackup := state
		state = signed
		defer func() { state = stateBackup }()
		res, logged := run(t, "", "check", dest, argA, argB)
		require.Equal(t, 0, res.ExitCode, res.Stderr)
		ans, err := parseAnswer(res.Stdout)
		require.NoError(t, err)
		assert.Equal(t, answer{Found: map[string]found{nevraA: {Repo: "r1", GPGCheck: true}, nevraB: {Repo: "local"}}, Missing: []string{}}, ans)
		assert.Equal(t, setup+"close\n", checkSetup(t, logged), "no download, no signature check in check mode")
	})
	t.Run("a build named with its repository comes from that one only", func(t *testing.T) {
		t.Cleanup(func() { require.NoError(t, os.RemoveAll(dest)); require.NoError(t, os.Mkdir(dest, 0o700)) })
		fromR1 := strings.Replace(argB, `"release"`, `"repo":"r1","release"`, 1)
		fromDead := strings.Replace(argA, `"release"`, `"repo":"dead","release"`, 1)
		res, logged := run(t, "", "fetch", dest, fromR1, fromDead)
		require.Equal(t, 0, res.ExitCode, res.Stderr)
		ans, err := parseAnswer(res.Stdout)
		require.NoError(t, err, res.Stdout)
		assert.Equal(t, "r1", ans.Found[nevraB].Repo, "not the local repository DNF would prefer")
		assert.Equal(t, []string{nevraA}, ans.Missing, "r1 has a, but the plan named another repository")
		assert.Equal(t, setup+"download b-lib@r1\nclose\n", logged)
	})
	t.Run("a file that fails its checksum is an error", func(t *testing.T) {
		bad := strings.Replace(state, `"arch": "x86_64", "path": "`+local+`"`, `"arch": "x86_64", "path": "`+local+`", "verifies": false`, 1)
		require.NotEqual(t, state, bad)
		stateBackup := state
		state = bad
		defer func() { state = stateBackup }()
		res, _ := run(t, "", "fetch", dest, argA, argB)
		assert.Equal(t, 1, res.ExitCode)
		entries, err := os.ReadDir(dest)
		require.NoError(t, err)
		assert.Empty(t, entries, "the copy made before the failure is removed")
		ans, err := parseAnswer(res.Stdout)
		require.NoError(t, err)
		assert.Contains(t, ans.Error, nevraB+" from repository local: "+local+" does not match the repository's checksum")
	})
	t.Run("DNF failing to load is an error, and the base is closed", func(t *testing.T) {
		res, logged := run(t, `, "fill_fails": true`, "check", dest, argA)
		assert.Equal(t, 1, res.ExitCode)
		ans, err := parseAnswer(res.Stdout)
		require.NoError(t, err)
		assert.Equal(t, "RuntimeError: Failed to download metadata for repo 'r1'", ans.Error)
		assert.Equal(t, setup+"close\n", checkSetup(t, logged))
	})
	t.Run("bad arguments", func(t *testing.T) {
		for _, args := range [][]string{{}, {"check"}, {"download", dest, argA}, {"check", "rpms", argA}, {"check", dest, "{"}, {"check", dest, `{"nevra": "x"}`}} {
			res, _ := run(t, "", args...)
			assert.Equal(t, 2, res.ExitCode, args)
			ans, err := parseAnswer(res.Stdout)
			require.NoError(t, err, args)
			assert.NotEmpty(t, ans.Error, args)
		}
	})
	t.Run("no dnf module", func(t *testing.T) {
		cmd := exec.Command(python, "-I", "-c", keepScript, "check", dest, argA)
		out, _ := cmd.Output()
		if exitErr := cmd.ProcessState.ExitCode(); exitErr == 0 {
			t.Skip("this host's python3 imports a real dnf")
		}
		ans, err := parseAnswer(string(out))
		require.NoError(t, err)
		assert.Contains(t, ans.Error, "cannot import dnf (DNF 4's Python API)")
	})
}

// A build kept from a repository with gpgcheck on is marked so (GPGCheck), the mark
// written before the build is renamed into place; one kept again from a repository
// without gpgcheck loses an old mark.
func TestEnsureMarksBuildsFromAGPGCheckRepository(t *testing.T) {
	py := "/usr/bin/python3"
	for _, c := range []struct {
		name     string
		gpgcheck bool
		oldMark  bool
	}{
		{"gpgcheck on: marked", true, false},
		{"gpgcheck off: not marked", false, false},
		{"gpgcheck off: an old mark goes", false, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "rpms")
			tmp, mk := tempOf(dir, nevraA, "7", "build a")
			line := fmt.Sprintf(`RICHT-KEEP-RESULT {"found": {"%s": {"path": "%s", "repo": "r1", "gpgcheck": %v}}, "missing": []}`, nevraA, tmp, c.gpgcheck)
			k := Keeper{Runner: runnertest.New(t, runnertest.Call{Argv: []string{py, "-I", "-c", keepPy(t), "fetch", dir, argA}, Do: mk, Stdout: line}),
				Dir: dir, Python: py}
			if c.oldMark {
				require.NoError(t, os.Mkdir(dir, 0o700))
				require.NoError(t, os.WriteFile(k.Path(nevraA)+".gpgcheck", nil, 0o600))
			}
			missing, err := k.Ensure(context.Background(), []string{nevraA}, false)
			require.NoError(t, err)
			assert.Empty(t, missing)
			assert.Equal(t, c.gpgcheck, k.GPGCheck(nevraA))
			assert.FileExists(t, k.Path(nevraA))
			assert.False(t, k.GPGCheck("not a build"))
		})
	}
}
