package rpmexact

import (
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/richt/services/pkg/runner/runnertest"
)

// dnf4Script is DNF 4's command-line script as Debian and EL ship it, after its #! line.
const dnf4Script = `
import sys
here = sys.path[0]
if here == '/usr/bin':
    del sys.path[0]

from dnf.cli import main
main.user_main(sys.argv[1:], exit_code=True)
`

// fakeScriptFiles is a host with the given PATH entries (command -> path), symlinks (path
// -> target) and files.
func fakeScriptFiles(path, links map[string]string, files map[string]string) scriptFiles {
	return scriptFiles{
		LookPath: func(f string) (string, error) {
			if p, ok := path[f]; ok {
				return p, nil
			}
			return "", exec.ErrNotFound
		},
		EvalSymlinks: func(p string) (string, error) {
			if t, ok := links[p]; ok {
				return t, nil
			}
			if _, ok := files[p]; ok {
				return p, nil
			}
			return "", os.ErrNotExist
		},
		ReadFile: func(p string) ([]byte, error) {
			if c, ok := files[p]; ok {
				return []byte(c), nil
			}
			return nil, os.ErrNotExist
		},
	}
}

// The launcher starts DNF 4's own script only: anything else argv[0] names runs as it is.
func TestLauncherIsChosenForDNF4sScriptOnly(t *testing.T) {
	cases := []struct {
		name    string
		argv0   string
		path    map[string]string
		links   map[string]string
		files   map[string]string
		want    bool
		script  string
		shebang string
	}{
		{name: "dnf, a link to DNF 4's dnf-3", argv0: "dnf",
			path: map[string]string{"dnf": "/usr/bin/dnf"}, links: map[string]string{"/usr/bin/dnf": "/usr/bin/dnf-3"},
			files: map[string]string{"/usr/bin/dnf-3": "#!/usr/bin/python3" + dnf4Script},
			want:  true, script: "/usr/bin/dnf", shebang: "#!/usr/bin/python3"},
		{name: "yum, DNF 4's compatibility link, with an option on the #! line", argv0: "yum",
			path: map[string]string{"yum": "/usr/bin/yum"}, links: map[string]string{"/usr/bin/yum": "/usr/bin/dnf-3"},
			files: map[string]string{"/usr/bin/dnf-3": "#!/usr/bin/python3 -s" + dnf4Script},
			want:  true, script: "/usr/bin/yum", shebang: "#!/usr/bin/python3 -s"},
		{name: "an isolated interpreter puts no script directory on the path", argv0: "dnf",
			path:  map[string]string{"dnf": "/usr/bin/dnf"},
			files: map[string]string{"/usr/bin/dnf": "#!/usr/bin/python3 -I" + dnf4Script}},
		{name: "safe path: the same", argv0: "dnf",
			path:  map[string]string{"dnf": "/usr/bin/dnf"},
			files: map[string]string{"/usr/bin/dnf": "#!/usr/bin/python3 -sP" + dnf4Script}},
		{name: "DNF's script outside /usr/bin (a checkout run in place)", argv0: "dnf",
			path: map[string]string{"dnf": "/usr/local/bin/dnf"}, links: map[string]string{"/usr/local/bin/dnf": "/src/dnf/bin/dnf-3"},
			files: map[string]string{"/src/dnf/bin/dnf-3": "#!/usr/bin/python3" + dnf4Script}},
		{name: "DNF 5, a compiled program", argv0: "dnf",
			path:  map[string]string{"dnf": "/usr/bin/dnf"},
			files: map[string]string{"/usr/bin/dnf": "\x7fELF\x02\x01\x01\x00"}},
		{name: "a wrapper around DNF", argv0: "dnf",
			path:  map[string]string{"dnf": "/usr/bin/dnf"},
			files: map[string]string{"/usr/bin/dnf": "#!/bin/sh\nexec /usr/bin/dnf-3 \"$@\"\n"}},
		{name: "a test's scripted runner", argv0: "/bin/sh",
			path:  map[string]string{"/bin/sh": "/bin/sh"},
			files: map[string]string{"/bin/sh": "\x7fELF"}},
		{name: "no such command", argv0: "dnf"},
		{name: "a path that is no UTF-8", argv0: "dnf",
			path: map[string]string{"dnf": "/usr/bin/\xffdnf"}, links: map[string]string{"/usr/bin/\xffdnf": "/usr/bin/dnf-3"},
			files: map[string]string{"/usr/bin/dnf-3": "#!/usr/bin/python3" + dnf4Script}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			l, ok := launchFor(c.argv0, fakeScriptFiles(c.path, c.links, c.files))
			require.Equal(t, c.want, ok)
			assert.Equal(t, c.script, l.Script)
			assert.Equal(t, c.shebang, l.Shebang)
		})
	}
}

// The launcher is DNF's #! line, then the constants it runs with, then its body.
func TestLauncherSource(t *testing.T) {
	src := string(launcherSource(dnfLaunch{Script: `/usr/bin/d"nf`, Shebang: "#!/usr/bin/python3 -s"}))
	lines := strings.SplitN(src, "\n", 5)
	assert.Equal(t, []string{"#!/usr/bin/python3 -s", `SCRIPT = "/usr/bin/d\"nf"`, "GATE = 4", "CLOSED = 250"}, lines[:4])
	assert.Contains(t, lines[4], "runpy.run_path(SCRIPT")
}

// fakeDNF is DNF 4's script and a dnf.cli.main module that records how it ran, for the
// host's Python: imported says the launcher imported DNF's command line, ran holds DNF's
// sys.argv once it runs, and DNF prints to stdout and logs to log before it exits with 7.
type fakeDNF struct {
	launch                dnfLaunch
	imported, ran, logged string
}

func newFakeDNF(t *testing.T) *fakeDNF {
	t.Helper()
	python, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("the launcher's protocol is run by the host's python3, which is not installed")
	}
	base := t.TempDir()
	f := &fakeDNF{imported: filepath.Join(base, "imported"), ran: filepath.Join(base, "ran"), logged: filepath.Join(base, "dnf.log")}
	pkg := filepath.Join(base, "lib", "dnf", "cli")
	require.NoError(t, os.MkdirAll(pkg, 0o755))
	main := `import json, logging, os, sys
open(` + strconv.Quote(f.imported) + `, "w").close()
def user_main(args, exit_code=False):
    with open(` + strconv.Quote(f.ran) + `, "w") as out:
        json.dump(sys.argv, out)
    log = logging.getLogger("dnf")
    log.addHandler(logging.FileHandler(` + strconv.Quote(f.logged) + `))
    log.warning("DNF logged this")
    sys.stdout.write("DNF printed this\n")
    if exit_code:
        sys.exit(7)
    return 7
`
	for path, content := range map[string]string{
		filepath.Join(base, "lib", "dnf", "__init__.py"): "",
		filepath.Join(pkg, "__init__.py"):                "",
		filepath.Join(pkg, "main.py"):                    main,
	} {
		require.NoError(t, os.WriteFile(path, []byte(content), 0o644))
	}
	script := filepath.Join(base, "bin", "dnf")
	require.NoError(t, os.MkdirAll(filepath.Dir(script), 0o755))
	require.NoError(t, os.WriteFile(script, []byte("#!"+python+dnf4Script), 0o755))
	t.Setenv("PYTHONPATH", filepath.Join(base, "lib"))
	t.Setenv("PYTHONDONTWRITEBYTECODE", "1")
	f.launch = dnfLaunch{Script: script, Shebang: "#!" + python}
	return f
}

// ranArgv is DNF's sys.argv, or nil when it did not run.
func (f *fakeDNF) ranArgv(t *testing.T) []string {
	data, err := os.ReadFile(f.ran)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	require.NoError(t, err)
	var argv []string
	require.NoError(t, json.Unmarshal(data, &argv))
	return argv
}

// waitImported waits until the launcher has imported DNF's command line (an event, no
// deadline of its own: the test's timeout bounds it).
func (f *fakeDNF) waitImported(t *testing.T) {
	for {
		if _, err := os.Stat(f.imported); err == nil {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// The gate: DNF's command line is imported with the gate closed, and DNF's own script runs
// with DNF's argv only once it opens; closed unopened, the launcher leaves with its own
// code and DNF never runs. DNF's output and logs are whole although the launcher skips
// the interpreter's teardown.
func TestTheGate(t *testing.T) {
	for _, open := range []bool{true, false} {
		t.Run(map[bool]string{true: "opened", false: "closed unopened"}[open], func(t *testing.T) {
			f := newFakeDNF(t)
			dir := t.TempDir()
			held, err := os.OpenFile(filepath.Join(t.TempDir(), "transaction.lock"), os.O_RDWR|os.O_CREATE, 0o600)
			require.NoError(t, err)
			defer held.Close()
			argv := []string{"dnf", "-y", "install-nevra", "--", "demo-0:2.0-1.noarch"}
			path, err := writeLauncher(dir, argv[0], f.launch)
			require.NoError(t, err)
			assert.Equal(t, filepath.Join(dir, "bin", "dnf"), path, "named as the command: the process is DNF's to ps")
			p, err := startLogged(dir, held, argv, path)
			require.NoError(t, err)
			holder, err := os.ReadFile(held.Name())
			require.NoError(t, err)
			assert.Equal(t, strconv.Itoa(p.cmd.Process.Pid)+"\n", string(holder), "DNF's process holds the lock")

			f.waitImported(t)
			assert.Nil(t, f.ranArgv(t), "imported, held at the gate")
			if !open {
				require.NoError(t, p.closeGate(), "it left with the gate's own code")
				assert.Nil(t, f.ranArgv(t), "DNF never ran")
				assert.NoFileExists(t, f.logged)
				out, err := os.ReadFile(filepath.Join(dir, stdoutFile))
				require.NoError(t, err)
				assert.Empty(t, string(out))
				return
			}
			require.NoError(t, p.openGate())
			res, err := p.wait()
			require.NoError(t, err)
			assert.Equal(t, 7, res.ExitCode, "DNF's exit code")
			assert.Equal(t, argv, res.Argv, "the command as asked")
			assert.Equal(t, append([]string{f.launch.Script}, argv[1:]...), f.ranArgv(t), "DNF's argv as its script sees it run directly")
			out, err := os.ReadFile(filepath.Join(dir, stdoutFile))
			require.NoError(t, err)
			assert.Equal(t, "DNF printed this\n", string(out))
			logged, err := os.ReadFile(f.logged)
			require.NoError(t, err)
			assert.Equal(t, "DNF logged this\n", string(logged))
		})
	}
}

// allPackages is the listing the supervisor's snapshots run, written out.
var allPackages = []string{"rpm", "--eval", "@@rpmdb\t%{_dbpath}\t%{_db_backend}", "-qa", "--nodigest", "--nosignature", "--qf", "%{NAME}\t%{EPOCHNUM}:%{VERSION}-%{RELEASE}.%{ARCH}\n"}

// The supervisor starts DNF's interpreter before its snapshot and lets DNF run only after
// it; a snapshot that fails closes the gate: the outcome says the transaction was not
// started, DNF never ran, and the lock names the supervisor again.
func TestTheSupervisorOpensTheGateAfterItsSnapshot(t *testing.T) {
	for _, fails := range []bool{false, true} {
		t.Run(map[bool]string{false: "snapshot taken", true: "snapshot failed"}[fails], func(t *testing.T) {
			f := newFakeDNF(t)
			root := t.TempDir()
			sf := newSuperviseFixture(t, root, filepath.Join(root, "000000000001-x-1"))
			req, err := json.Marshal(request{Transaction: Transaction{Argv: []string{"dnf", "-y", "install-nevra", "--", "demo-0:2.0-1.noarch"}, Names: []string{"demo"}}})
			require.NoError(t, err)
			require.NoError(t, os.WriteFile(filepath.Join(sf.dir, requestFile), req, 0o600))
			listing := "@@rpmdb\t/var/lib/rpm\tsqlite\ndemo\t0:1.0-1.noarch\n"
			before := runnertest.Call{Argv: allPackages, Stdout: listing, Do: func() {
				f.waitImported(t)
				assert.Nil(t, f.ranArgv(t), "DNF waits at the gate while the snapshot is taken")
			}}
			calls := []runnertest.Call{before, {Argv: allPackages, Stdout: listing}}
			if fails {
				before.ExitCode, before.Stdout, before.Stderr = 1, "", "error: rpmdb open failed"
				calls = []runnertest.Call{before}
			}
			deps := supervisorDeps{Runner: runnertest.New(t, calls...), UnitDirs: []string{t.TempDir()},
				Launch: func(argv0 string) (dnfLaunch, bool) { return f.launch, argv0 == "dnf" }}
			assert.Equal(t, map[bool]int{false: 0, true: 1}[fails], supervise(sf.root, sf.dir, sf.held, deps))

			data, err := os.ReadFile(filepath.Join(sf.dir, outcomeFile))
			require.NoError(t, err)
			var rec outcomeRecord
			require.NoError(t, json.Unmarshal(data, &rec))
			if fails {
				assert.Contains(t, rec.StartErr, "list installed packages: rpm exited 1")
				assert.NotContains(t, rec.StartErr, "interpreter", "the launcher left with the gate's own code")
				assert.Nil(t, f.ranArgv(t), "DNF never ran")
				holder, err := os.ReadFile(sf.held.Name())
				require.NoError(t, err)
				assert.Equal(t, strconv.Itoa(os.Getpid())+"\n", string(holder), "the supervisor holds the lock again")
				return
			}
			assert.Empty(t, rec.StartErr)
			assert.Equal(t, 7, rec.ExitCode)
			assert.NotNil(t, f.ranArgv(t), "DNF ran once the gate opened")
		})
	}
}
