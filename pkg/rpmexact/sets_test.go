package rpmexact

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/richt/services/pkg/nevra"
	"github.com/richt/services/pkg/runner"
	"github.com/richt/services/pkg/runner/runnertest"
)

func pin(name, evra string) Entry {
	e, err := nevra.ParseEVRA(evra)
	if err != nil {
		panic(err)
	}
	return Entry{Name: name, Version: &e}
}

func installed(nevras ...string) Installed { return Installed{NEVRAs: nevras} }

func TestDecideSets(t *testing.T) {
	have := map[string]Installed{
		"app": installed("app-0:1.0-1.noarch"),
		"lib": installed("lib-0:1.0-1.noarch"),
		"old": installed("old-0:1.0-1.noarch"),
	}
	cases := []struct {
		name            string
		entries         []Entry
		install, remove []string
		ops             []string
	}{
		{"converged set: no transaction", []Entry{pin("app", "0:1.0-1.noarch"), pin("lib", "0:1.0-1.noarch"), {Name: "gone", Absent: true}},
			nil, nil, []string{OpNone, OpNone, OpNone}},
		{"pins move together in one install-nevra", []Entry{pin("app", "0:2.0-1.noarch"), pin("lib", "0:2.0-1.noarch")},
			[]string{"dnf", "-y", "install-nevra", "--", "app-0:2.0-1.noarch", "lib-0:2.0-1.noarch"}, nil, []string{OpInstallNEVRA, OpInstallNEVRA}},
		{"only the entries that differ are named", []Entry{pin("app", "0:1.0-1.noarch"), pin("lib", "0:0.9-1.noarch")},
			[]string{"dnf", "-y", "install-nevra", "--", "lib-0:0.9-1.noarch"}, nil, []string{OpNone, OpInstallNEVRA}},
		{"unversioned installs only: install-n", []Entry{{Name: "new"}, {Name: "app"}},
			[]string{"dnf", "-y", "install-n", "--", "new"}, nil, []string{OpInstallN, OpNone}},
		{"pins and unversioned mixed: one install", []Entry{{Name: "new"}, pin("lib", "0:2.0-1.noarch")},
			[]string{"dnf", "-y", "install", "--", "lib-0:2.0-1.noarch", "new"}, nil, []string{OpInstallN, OpInstallNEVRA}},
		{"removals are a second transaction", []Entry{pin("lib", "0:2.0-1.noarch"), {Name: "old", Absent: true}},
			[]string{"dnf", "-y", "install-nevra", "--", "lib-0:2.0-1.noarch"}, []string{"dnf", "-y", "remove", "--", "old"}, []string{OpInstallNEVRA, OpRemove}},
		{"removal only", []Entry{{Name: "old", Absent: true}, {Name: "gone", Absent: true}},
			nil, []string{"dnf", "-y", "remove", "--", "old"}, []string{OpRemove, OpNone}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p, err := Decide(Want{Entries: c.entries, Manager: "dnf"}, have)
			require.NoError(t, err)
			assert.Equal(t, c.install, p.Install)
			assert.Equal(t, c.remove, p.Remove)
			var ops []string
			for _, e := range p.Entries {
				ops = append(ops, e.Operation)
			}
			assert.Equal(t, c.ops, ops)
			assert.Equal(t, c.install != nil || c.remove != nil, p.Changes())
		})
	}
}

func TestInstallonlyPinKeepsOtherBuilds(t *testing.T) {
	// A kernel-like package has several builds installed; a pin holds when its build is one
	// of them, and installing it leaves the others (DNF's installonly_limit decides those).
	have := map[string]Installed{"kmod": {NEVRAs: []string{"kmod-0:1.0-1.noarch", "kmod-0:2.0-1.noarch"}, InstallOnly: true}}
	p, err := Decide(Want{Entries: []Entry{pin("kmod", "0:1.0-1.noarch")}, Manager: "dnf"}, have)
	require.NoError(t, err)
	assert.False(t, p.Changes())
	assert.NoError(t, Holds(pin("kmod", "0:2.0-1.noarch"), have["kmod"].NEVRAs))
}

// Two builds of one architecture of a package that is not installonly are never
// converged, whatever is asked but its removal; builds of two architectures (multilib) are
// fine.
func TestDuplicateBuildsAreNeverConverged(t *testing.T) {
	dup := map[string]Installed{"demo": installed("demo-0:1.0-1.noarch", "demo-0:2.0-1.noarch")}
	for _, e := range []Entry{pin("demo", "0:2.0-1.noarch"), pin("demo", "0:1.0-1.noarch"), pin("demo", "0:3.0-1.noarch"), {Name: "demo"}} {
		_, err := Decide(Want{Entries: []Entry{e}, Manager: "dnf"}, dup)
		require.Error(t, err)
		assert.Contains(t, err.Error(), "demo has 2 builds of noarch installed (demo-0:1.0-1.noarch, demo-0:2.0-1.noarch)")
		assert.Contains(t, err.Error(), "dnf remove --duplicates demo")
	}
	p, err := Decide(Want{Entries: []Entry{{Name: "demo", Absent: true}}, Manager: "dnf"}, dup)
	require.NoError(t, err)
	assert.Equal(t, []string{"dnf", "-y", "remove", "--", "demo"}, p.Remove)

	multilib := map[string]Installed{"lib": installed("lib-0:1.0-1.i686", "lib-0:1.0-1.x86_64")}
	_, err = Decide(Want{Entries: []Entry{pin("lib", "0:1.0-1.x86_64")}, Manager: "dnf"}, multilib)
	assert.NoError(t, err)
}

func TestInstallOnlyByDNFsDefaults(t *testing.T) {
	assert.True(t, installOnly("kernel", nil))
	assert.True(t, installOnly("kernel-core", []string{"kernel-core", "installonlypkg(kernel)"}))
	assert.True(t, installOnly("kmod-x", []string{"installonlypkg(kernel-module)"}))
	assert.True(t, installOnly("k", []string{"multiversion(kernel)"}))
	assert.False(t, installOnly("demo", []string{"demo", "demo(x86-64)", "config(demo)"}))
}

func TestSetParameters(t *testing.T) {
	for _, c := range []struct {
		args map[string]any
		msg  string
	}{
		{map[string]any{}, "one of the following is required: name, packages"},
		{map[string]any{"packages": []any{}}, "packages: is empty"},
		{map[string]any{"packages": []any{"app"}}, "packages[0]: expected a mapping"},
		{map[string]any{"packages": []any{map[string]any{"version": "0:1.0-1.noarch"}}}, "packages[0].name: is required"},
		{map[string]any{"packages": []any{map[string]any{"name": "app", "vers": "1"}}}, `packages[0]: unsupported key "vers"`},
		{map[string]any{"packages": []any{map[string]any{"name": "app"}, map[string]any{"name": "app", "state": "absent"}}}, "packages[1].name: app is already packages[0]"},
		{map[string]any{"packages": []any{map[string]any{"name": "app", "version": "latest"}}}, "packages[0].version:"},
		{map[string]any{"packages": []any{map[string]any{"name": "-x"}}}, "packages[0].name:"},
		{map[string]any{"packages": []any{map[string]any{"name": "app", "state": "latest"}}}, "packages[0].state: value of state must be one of: present, absent, got: latest"},
		{map[string]any{"packages": []any{map[string]any{"name": "app", "version": "0:1.0-1.noarch", "state": "absent"}}}, "packages[0].version: cannot be combined with state=absent"},
		{map[string]any{"packages": []any{map[string]any{"name": "app"}}, "name": "app"}, "mutually exclusive: name|packages"},
		{map[string]any{"packages": []any{map[string]any{"name": "app"}}, "state": "absent"}, "mutually exclusive: state|packages"},
	} {
		s := runnertest.New(t) // nothing runs
		res := execute(t, s, &recorder{}, c.args)
		assert.Equal(t, true, res["failed"], c.args)
		assert.Contains(t, res["msg"], c.msg)
	}
}

func TestSetTransaction(t *testing.T) {
	dnfV := runnertest.Call{Argv: []string{"dnf", "--version"}, Stdout: "4.23.0\n"}
	query := runnertest.Call{Argv: queryArgv("app", "lib", "old"), Stdout: dbOut + "@@app\t0:1.0-1.noarch\n@@lib\t0:1.0-1.noarch\n@@old\t0:1.0-1.noarch\n"}
	args := map[string]any{"packages": []any{
		map[string]any{"name": "app", "version": "0:2.0-1.noarch"},
		map[string]any{"name": "lib", "version": "0:2.0-1.noarch"},
		map[string]any{"name": "old", "state": "absent"},
	}}
	v1 := []string{"app\t0:1.0-1.noarch", "lib\t0:1.0-1.noarch", "old\t0:1.0-1.noarch", "dep\t0:1.0-1.noarch"}
	v2 := []string{"app\t0:2.0-1.noarch", "lib\t0:2.0-1.noarch", "old\t0:1.0-1.noarch", "dep\t0:1.0-1.noarch"}
	v3 := []string{"app\t0:2.0-1.noarch", "lib\t0:2.0-1.noarch"}
	install := runnertest.Call{Argv: []string{"dnf", "-y", "install-nevra", "--", "app-0:2.0-1.noarch", "lib-0:2.0-1.noarch"}}

	t.Run("install, then removals, every move reported", func(t *testing.T) {
		units := t.TempDir()
		install := install
		install.Do = func() {
			require.NoError(t, os.WriteFile(filepath.Join(units, "app.service"), []byte("[Service]\n"), 0o644))
		}
		calls := append([]runnertest.Call{query, owns([]string{"app", "lib", "old"}), dnfV}, txn(v1, v2, []string{"app-0:2.0-1.noarch", "lib-0:2.0-1.noarch"}, install)...)
		calls = append(calls, txn(v2, v3, nil, runnertest.Call{Argv: []string{"dnf", "-y", "remove", "--", "old"}})...)
		rec := &recorder{}
		withDiff := map[string]any{"_ansible_diff": true}
		for k, v := range args {
			withDiff[k] = v
		}
		res := executeIn(t, runnertest.New(t, calls...), rec, []string{units}, withDiff)
		require.Nil(t, res["failed"], res["msg"])
		assert.Equal(t, true, res["changed"])
		assert.Equal(t, true, res["unit_files_changed"])
		assert.Equal(t, "needed", res["daemon_reload"])
		assert.Len(t, rec.reasons, 1, "the unit file change is recorded for the manager")
		assert.Equal(t, []any{
			[]any{"dnf", "-y", "install-nevra", "--", "app-0:2.0-1.noarch", "lib-0:2.0-1.noarch"},
			[]any{"dnf", "-y", "remove", "--", "old"},
		}, res["commands"])
		assert.Equal(t, []any{
			map[string]any{"name": "app", "before": []any{"app-0:1.0-1.noarch"}, "after": []any{"app-0:2.0-1.noarch"}, "requested": true},
			map[string]any{"name": "dep", "before": []any{"dep-0:1.0-1.noarch"}, "after": []any{}, "requested": false},
			map[string]any{"name": "lib", "before": []any{"lib-0:1.0-1.noarch"}, "after": []any{"lib-0:2.0-1.noarch"}, "requested": true},
			map[string]any{"name": "old", "before": []any{"old-0:1.0-1.noarch"}, "after": []any{}, "requested": true},
		}, res["moved"])
		pkgs := res["packages"].([]any)
		require.Len(t, pkgs, 3)
		assert.Equal(t, map[string]any{"name": "old", "before": []any{"old-0:1.0-1.noarch"}, "after": []any{}, "operation": "remove"}, pkgs[2])
		diff := res["diff"].(map[string]any)
		assert.Contains(t, diff["before"], "dep-0:1.0-1.noarch", "the diff shows what DNF moved on its own")
		assert.NotContains(t, res, "name", "a set has no single name")
	})
	t.Run("a failed install runs no removal and names DNF's reason", func(t *testing.T) {
		failed := install
		failed.ExitCode, failed.Stderr = 1, "Error: Unable to find a match: lib-0:2.0-1.noarch\n"
		calls := append([]runnertest.Call{query, owns([]string{"app", "lib", "old"}), dnfV}, txn(v1, v1, nil, failed)...)
		res := execute(t, runnertest.New(t, calls...), &recorder{}, args)
		assert.Equal(t, true, res["failed"])
		assert.Equal(t, false, res["changed"], "nothing moved")
		assert.Contains(t, res["msg"], "Unable to find a match: lib-0:2.0-1.noarch")
		assert.Len(t, res["commands"], 1)
	})
	t.Run("converged set: one query, no transaction", func(t *testing.T) {
		q := runnertest.Call{Argv: queryArgv("app", "lib", "old"), ExitCode: 1, Stdout: dbOut + "@@app\t0:2.0-1.noarch\n@@lib\t0:2.0-1.noarch\npackage old is not installed\n"}
		res := execute(t, runnertest.New(t, q), &recorder{}, args)
		assert.Nil(t, res["failed"], res["msg"])
		assert.Equal(t, false, res["changed"])
		assert.Equal(t, []any{}, res["commands"])
		assert.Equal(t, []any{}, res["moved"])
	})
}

func TestPinThatDragsADependent(t *testing.T) {
	// DNF upgrades app, which requires lib = its own version, to satisfy the pin of lib:
	// the result says so, and the task counts as a change of app's unit files too.
	units := t.TempDir()
	calls := []runnertest.Call{
		{Argv: rpmQ("lib"), Stdout: dbOut + "@@lib\t0:1.0-1.noarch\n"},
		owns([]string{"lib"}),
		{Argv: []string{"dnf", "--version"}, Stdout: "4.23.0\n"},
		qa("app\t0:1.0-1.noarch", "lib\t0:1.0-1.noarch"),
		{Argv: []string{"dnf", "-y", "install-nevra", "--", "lib-0:2.0-1.noarch"}, Do: func() {
			require.NoError(t, os.WriteFile(filepath.Join(units, "app.service"), []byte("[Service]\n"), 0o644))
		}},
		qa("app\t0:2.0-1.noarch", "lib\t0:2.0-1.noarch"),
		files("app-0:2.0-1.noarch", "lib-0:2.0-1.noarch"),
	}
	res := executeIn(t, runnertest.New(t, calls...), &recorder{}, []string{units}, map[string]any{"name": "lib", "version": "0:2.0-1.noarch", "_ansible_diff": true})
	require.Nil(t, res["failed"], res["msg"])
	assert.Equal(t, []any{"lib-0:2.0-1.noarch"}, res["after"])
	assert.Equal(t, true, res["unit_files_changed"])
	moved := res["moved"].([]any)
	require.Len(t, moved, 2)
	assert.Equal(t, map[string]any{"name": "app", "before": []any{"app-0:1.0-1.noarch"}, "after": []any{"app-0:2.0-1.noarch"}, "requested": false}, moved[0])
	assert.Contains(t, res["diff"].(map[string]any)["after"], "app-0:2.0-1.noarch")
}

func TestFilesPlacedIsTheNewestFile(t *testing.T) {
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a"), filepath.Join(dir, "b")
	placed := time.Unix(1700000000, 0)
	for _, p := range []string{a, b} {
		require.NoError(t, os.WriteFile(p, nil, 0o644))
		require.NoError(t, os.Chtimes(p, placed, placed))
	}
	listing := fmt.Sprintf("0\t1700000000\t%s\n0\t1700000000\t%s\n0\t1700000000\t%s\n64\t1700000000\t/nonexistent/ghost\n", a, dir, b)
	s := runnertest.New(t, runnertest.Call{Argv: []string{"rpm", "-q", "--qf", "[%{FILEFLAGS}\t%{FILEMTIMES}\t%{FILENAMES}\n]", "--", "x-0:1-1.noarch"},
		Stdout: listing})
	st, err := filesPlaced(t.Context(), s, []string{"x-0:1-1.noarch"})
	require.NoError(t, err)
	assert.False(t, st.IsZero())
	none, err := filesPlaced(t.Context(), runnertest.New(t), nil)
	require.NoError(t, err)
	assert.True(t, none.IsZero(), "nothing installed, nothing placed")
}

// Only what rpm wrote and nobody wrote since says when the files were in place: a file
// the restarted service writes (a %ghost log, a state file it owns) must not move the
// moment past the service's own start, or the restart a scriptlet did would be repeated.
func TestNewestPlacedCountsOnlyWhatRPMWrote(t *testing.T) {
	dir := t.TempDir()
	placed := time.Unix(1700000000, 0)
	file := func(name string) string {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, nil, 0o644))
		require.NoError(t, os.Chtimes(p, placed, placed))
		time.Sleep(30 * time.Millisecond) // more than a tick of the coarse clock: ctimes differ
		return p
	}
	first, second, third := file("first"), file("second"), file("third")
	ctime := func(p string) time.Time {
		var st syscall.Stat_t
		require.NoError(t, syscall.Lstat(p, &st))
		return time.Unix(st.Ctim.Unix())
	}
	require.True(t, ctime(third).After(ctime(second)) && ctime(second).After(ctime(first)))
	line := func(flags int, mtime int64, p string) string { return fmt.Sprintf("%d\t%d\t%s\n", flags, mtime, p) }
	const at = 1700000000
	for _, tc := range []struct {
		name    string
		listing string
		want    time.Time
	}{
		{"every file as rpm wrote it", line(0, at, first) + line(0, at, third) + line(0, at, second), ctime(third)},
		{"%ghost file left out", line(0, at, first) + line(rpmfileGhost, at, third) + line(0, at, second), ctime(second)},
		{"%config and other flags count", line(1, at, first) + line(16, at, third), ctime(third)},
		{"written after rpm placed it", line(0, at, first) + line(0, at+5, third) + line(0, at, second), ctime(second)},
		{"directory left out", line(0, at, first) + line(0, at, dir), ctime(first)},
		{"gone since", line(0, at, first) + line(0, at, filepath.Join(dir, "gone")), ctime(first)},
		{"nothing rpm wrote", line(rpmfileGhost, at, first), time.Time{}},
		{"empty listing", "", time.Time{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := newestPlaced(tc.listing, os.Lstat)
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
	t.Run("nanoseconds rpm never sets", func(t *testing.T) {
		require.NoError(t, os.Chtimes(third, placed, placed.Add(time.Millisecond)))
		got, err := newestPlaced(line(0, at, first)+line(0, at, third), os.Lstat)
		require.NoError(t, err)
		assert.Equal(t, ctime(first), got)
	})
	for _, bad := range []string{"no tabs here\n", "x\t1\t/a\n", "0\tx\t/a\n", "0\t1\trelative\n"} {
		_, err := newestPlaced(bad, os.Lstat)
		assert.Error(t, err, "%q", bad)
	}
}

func TestParseQueryManyNames(t *testing.T) {
	all, err := parseQuery([]string{"a", "b", "c"}, runner.Result{ExitCode: 1,
		Stdout: "@@a\t0:1-1.noarch\npackage b is not installed\n@@c\t0:2-1.noarch\n@@c\t0:3-1.noarch\n"})
	require.NoError(t, err)
	assert.Equal(t, []string{"a-0:1-1.noarch"}, all["a"].NEVRAs)
	assert.Empty(t, all["b"].NEVRAs)
	assert.Equal(t, []string{"c-0:2-1.noarch", "c-0:3-1.noarch"}, all["c"].NEVRAs)
	_, err = parseQuery([]string{"a", "b"}, runner.Result{ExitCode: 2, Stdout: "package a is not installed\n"})
	assert.ErrorContains(t, err, "rpm exited 2", "an exit code the answer does not explain is an error")
}

func TestParseAll(t *testing.T) {
	pkgs, err := parseAll("k\t0:2-1.noarch\nk\t0:1-1.noarch\nz\t1:1-1.x86_64\n")
	require.NoError(t, err)
	assert.Equal(t, map[string][]string{"k": {"k-0:1-1.noarch", "k-0:2-1.noarch"}, "z": {"z-1:1-1.x86_64"}}, pkgs)
	_, err = parseAll("broken\n")
	assert.ErrorContains(t, err, "malformed")
}

func FuzzParseAll(f *testing.F) {
	f.Add("k\t0:2-1.noarch\nk\t0:1-1.noarch\n")
	f.Add("\t\n")
	f.Add("a\tb\tc\n")
	f.Fuzz(func(t *testing.T, out string) {
		pkgs, err := parseAll(out)
		if err != nil {
			return
		}
		for name, l := range pkgs {
			for _, n := range l {
				if name == "" || !strings.HasPrefix(n, name+"-") || len(n) == len(name)+1 {
					t.Fatalf("bad entry %q -> %q from %q", name, n, out)
				}
			}
		}
	})
}

func TestCheckModeAsksDNFWhatItWouldMove(t *testing.T) {
	dnfV := runnertest.Call{Argv: []string{"dnf", "--version"}, Stdout: "4.23.0\n"}
	args := map[string]any{"name": "demo", "version": "0:2.0-1.noarch", "_ansible_check_mode": true}
	t.Run("DNF's summary, dependents included", func(t *testing.T) {
		res := execute(t, runnertest.New(t, runnertest.Call{Argv: rpmQ("demo"), Stdout: v1Out}, ownsDemo, dnfV, assumeno), &recorder{}, args)
		require.Nil(t, res["failed"], res["msg"])
		assert.Equal(t, []any{
			map[string]any{"name": "demo", "action": "upgrade", "version": "2.0-1.noarch", "repo": "fixtures", "requested": true},
			map[string]any{"name": "demo-extra", "action": "upgrade", "version": "2.0-1.noarch", "repo": "fixtures", "requested": false},
		}, res["would_move"])
		assert.Contains(t, res["check_mode_note"], "--assumeno")
	})
	t.Run("a transaction DNF cannot run fails the check", func(t *testing.T) {
		no := assumeno
		no.Stdout, no.Stderr = "No match for argument: demo-0:2.0-1.noarch\n", "Error: Unable to find a match: demo-0:2.0-1.noarch\n"
		res := execute(t, runnertest.New(t, runnertest.Call{Argv: rpmQ("demo"), Stdout: v1Out}, ownsDemo, dnfV, no), &recorder{}, args)
		assert.Equal(t, true, res["failed"])
		assert.Contains(t, res["msg"], "Unable to find a match")
	})
	t.Run("an unreadable summary leaves the prediction to the RPM database", func(t *testing.T) {
		odd := assumeno
		odd.Stdout = "Dependencies resolved.\n=====\n Package\n=====\nUpgrading:\n a b\n"
		res := execute(t, runnertest.New(t, runnertest.Call{Argv: rpmQ("demo"), Stdout: v1Out}, ownsDemo, dnfV, odd), &recorder{}, args)
		require.Nil(t, res["failed"], res["msg"])
		assert.Equal(t, true, res["changed"])
		assert.Nil(t, res["would_move"])
		assert.Contains(t, res["check_mode_note"], "RPM database only")
	})
}

// rpm's listing of files is outside input: any text gives a time or an error, never a
// panic, and a file that cannot be looked up is never counted.
func FuzzNewestPlaced(f *testing.F) {
	f.Add("0\t1700000000\t/usr/lib/systemd/system/app.service\n64\t1700000000\t/var/log/app.log\n")
	f.Add("no tabs\n")
	f.Add("0\t-1\t/a\n\n")
	f.Fuzz(func(t *testing.T, listing string) {
		missing := func(string) (os.FileInfo, error) { return nil, os.ErrNotExist }
		got, err := newestPlaced(listing, missing)
		if err == nil && !got.IsZero() {
			t.Fatalf("%q: counted a file that does not exist: %v", listing, got)
		}
	})
}
