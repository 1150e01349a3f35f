package rpm_exact_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/richt/services/modules"
	"github.com/richt/services/pkg/rpmexact"
	"github.com/richt/services/testenv"
	"github.com/richt/services/testenv/fixtures"
)

// demoRepo is demo 1.0 and 2.0, built once per test binary.
func demoRepo(t *testing.T) string {
	return testenv.Repo(t, fixtures.DemoPackage("1.0"), fixtures.DemoPackage("2.0"))
}

type fixture struct {
	target *testenv.Target
	module string
}

func newFixture(t *testing.T, withRepo bool) *fixture {
	t.Helper()
	if testing.Short() {
		t.Skip("end-to-end: needs Docker")
	}
	dir := demoRepo(t)
	f := &fixture{target: testenv.Start(t), module: testenv.BuildModule(t, modules.Command, testenv.Named("rpm_exact"))}
	if withRepo {
		require.NoError(t, f.target.AddRepo(context.Background(), "fixtures", dir))
	}
	return f
}

func (f *fixture) run(t *testing.T, args map[string]any) testenv.Result {
	t.Helper()
	return f.target.RunModule(t, f.module, args)
}

// installed is what rpm itself says, independent of the module.
func (f *fixture) installed(t *testing.T) string {
	res, err := f.target.Exec(context.Background(), "rpm", "-q", "--qf", "%{NAME}-%{EPOCHNUM}:%{VERSION}-%{RELEASE}.%{ARCH}\n", "demo")
	require.NoError(t, err)
	if res.ExitCode != 0 {
		return "absent"
	}
	return strings.TrimSpace(res.Stdout)
}

const (
	v1 = "0:1.0-1.noarch"
	v2 = "0:2.0-1.noarch"
)

func TestLifecycle(t *testing.T) {
	t.Parallel()
	f := newFixture(t, false)
	dir := demoRepo(t)

	t.Run("first install with a repository file created after the run began", func(t *testing.T) {
		// No repository existed when the target started; the module reads no metadata
		// before deciding, so a repository added just before the task is fine.
		require.NoError(t, f.target.AddRepo(context.Background(), "fixtures", dir))
		r := f.run(t, map[string]any{"name": "demo", "version": v1})
		require.False(t, r.Failed(), r.Msg())
		assert.True(t, r.Changed())
		assert.Equal(t, "install-nevra", r.String("operation"))
		assert.Equal(t, []string{"dnf", "-y", "install-nevra", "--", "demo-" + v1}, r.Strings("command"))
		assert.Empty(t, r.Strings("before"))
		assert.Equal(t, []string{"demo-" + v1}, r.Strings("after"))
		assert.Equal(t, true, r["unit_files_changed"], "the package ships demo.service")
		assert.Equal(t, "demo-"+v1, f.installed(t))
		f.target.MustExec(t, "test", "-f", "/var/lib/richt/manager-sync-due")
	})

	t.Run("exact version already installed is a no-op without any DNF call", func(t *testing.T) {
		// With dnf gone, any DNF call (even --version) would fail the task.
		f.target.MustExec(t, "mv", "/usr/bin/dnf", "/usr/bin/dnf.hidden")
		defer f.target.MustExec(t, "mv", "/usr/bin/dnf.hidden", "/usr/bin/dnf")
		r := f.run(t, map[string]any{"name": "demo", "version": v1})
		require.False(t, r.Failed(), r.Msg())
		assert.False(t, r.Changed())
		assert.Equal(t, "none", r.String("operation"))
		assert.Empty(t, r.Strings("command"))
		assert.Equal(t, []string{"demo-" + v1}, r.Strings("before"))
	})

	t.Run("unversioned request leaves an installed older version alone", func(t *testing.T) {
		r := f.run(t, map[string]any{"name": "demo"})
		require.False(t, r.Failed(), r.Msg())
		assert.False(t, r.Changed())
		assert.Equal(t, "demo-"+v1, f.installed(t), "2.0 is in the repository but must not be installed")
	})

	t.Run("check mode reports the upgrade and changes nothing", func(t *testing.T) {
		r := f.run(t, map[string]any{"name": "demo", "version": v2, "_ansible_check_mode": true, "_ansible_diff": true})
		require.False(t, r.Failed(), r.Msg())
		assert.True(t, r.Changed())
		assert.Equal(t, "install-nevra", r.String("operation"))
		assert.Equal(t, []string{"demo-" + v2}, r.Strings("after"))
		diff := r.Map("diff")
		assert.Equal(t, "demo-"+v1+"\n", diff["before"])
		assert.Equal(t, "demo-"+v2+"\n", diff["after"])
		assert.Equal(t, "demo-"+v1, f.installed(t))
	})

	t.Run("exact upgrade", func(t *testing.T) {
		f.target.MustExec(t, "rm", "-f", "/var/lib/richt/manager-sync-due")
		r := f.run(t, map[string]any{"name": "demo", "version": v2, "_ansible_diff": true})
		require.False(t, r.Failed(), r.Msg())
		assert.True(t, r.Changed())
		assert.Equal(t, []string{"demo-" + v1}, r.Strings("before"))
		assert.Equal(t, []string{"demo-" + v2}, r.Strings("after"))
		assert.Equal(t, true, r["unit_files_changed"])
		assert.Equal(t, "demo-"+v1+"\n", r.Map("diff")["before"])
		assert.Equal(t, "demo-"+v2+"\n", r.Map("diff")["after"])
		assert.Equal(t, "demo-"+v2, f.installed(t))
		f.target.MustExec(t, "test", "-f", "/var/lib/richt/manager-sync-due")
		f.launched(t, r, "Upgrading", v2)
	})

	t.Run("exact downgrade", func(t *testing.T) {
		// The upgrade's accepted manager check is remembered by the executable's identity;
		// touching the executable changes it, so this transaction checks again.
		real := strings.TrimSpace(f.target.MustExec(t, "sh", "-c", "readlink -f $(command -v dnf)"))
		record := f.target.MustExec(t, "cat", "/var/lib/richt/manager-check.json")
		assert.Contains(t, record, `"manager":"dnf","identity":"`+real+` size=`)
		f.target.MustExec(t, "touch", real)
		r := f.run(t, map[string]any{"name": "demo", "version": v1})
		assert.NotEqual(t, record, f.target.MustExec(t, "cat", "/var/lib/richt/manager-check.json"), "checked again and re-recorded")
		// Read from DNF's files (QuickManagerVersion): it must be what DNF itself says.
		version, _, _ := strings.Cut(f.target.MustExec(t, "dnf", "--version"), "\n")
		assert.Regexp(t, `^4\.`, version)
		assert.Equal(t, strings.TrimSpace(version), r.String("manager_version"))
		require.False(t, r.Failed(), r.Msg())
		assert.True(t, r.Changed())
		assert.Equal(t, "install-nevra", r.String("operation"))
		assert.Equal(t, []string{"demo-" + v1}, r.Strings("after"))
		assert.Equal(t, "demo-"+v1, f.installed(t))
		f.launched(t, r, "Downgrading", v1)
	})

	t.Run("flags give the same result as the args file", func(t *testing.T) {
		bin, err := f.target.InstallModule(context.Background(), f.module)
		require.NoError(t, err)
		byFlags := f.target.MustExec(t, bin, "--name", "demo", "--version", v2, "--check")
		byFile := f.run(t, map[string]any{"name": "demo", "version": v2, "_ansible_check_mode": true})
		var got testenv.Result
		require.NoError(t, json.Unmarshal([]byte(byFlags), &got))
		assert.Equal(t, map[string]any(byFile), map[string]any(got))
	})

	t.Run("removal", func(t *testing.T) {
		r := f.run(t, map[string]any{"name": "demo", "state": "absent", "_ansible_diff": true})
		require.False(t, r.Failed(), r.Msg())
		assert.True(t, r.Changed())
		assert.Equal(t, "remove", r.String("operation"))
		assert.Empty(t, r.Strings("after"))
		assert.Equal(t, true, r["unit_files_changed"])
		assert.Equal(t, "absent", f.installed(t))

		r = f.run(t, map[string]any{"name": "demo", "state": "absent"})
		require.False(t, r.Failed(), r.Msg())
		assert.False(t, r.Changed())
	})

	t.Run("unversioned install of an absent package", func(t *testing.T) {
		r := f.run(t, map[string]any{"name": "demo"})
		require.False(t, r.Failed(), r.Msg())
		assert.Equal(t, "install-n", r.String("operation"))
		assert.Equal(t, "demo-"+v2, f.installed(t), "DNF picks the newest")
	})
}

// launched checks that r's transaction ran through DNF's launcher (pkg/rpmexact/launcher.go)
// as DNF itself: the launcher in its record, DNF's whole output kept although the launcher
// leaves without the interpreter's teardown (what ends its output: "Complete!"), and DNF's
// history with the command line DNF's own start records.
func (f *fixture) launched(t *testing.T, r testenv.Result, verb, version string) {
	t.Helper()
	log := r.String("transaction_log")
	f.target.MustExec(t, "test", "-x", log+"/bin/dnf")
	out := f.target.MustExec(t, "cat", log+"/stdout")
	assert.Contains(t, out, verb)
	assert.True(t, strings.HasSuffix(strings.TrimSpace(out), "Complete!"), out)
	assert.Regexp(t, `Command Line\s*:\s*-y install-nevra -- demo-`+version, f.target.MustExec(t, "dnf", "-q", "history", "info", "last"))
}

func TestYumManager(t *testing.T) {
	t.Parallel()
	f := newFixture(t, true)
	r := f.run(t, map[string]any{"name": "demo", "version": v2, "manager": "yum"})
	require.False(t, r.Failed(), r.Msg())
	assert.Equal(t, []string{"yum", "-y", "install-nevra", "--", "demo-" + v2}, r.Strings("command"))
	assert.Equal(t, "demo-"+v2, f.installed(t))

	// A yum that is not DNF 4 is refused before any transaction, in check mode too.
	f.target.Shell(t, `rm /usr/bin/yum && printf '#!/bin/sh\necho 3.4.3\n' > /usr/bin/yum && chmod +x /usr/bin/yum`)
	for _, check := range []bool{true, false} {
		r = f.run(t, map[string]any{"name": "demo", "version": v1, "manager": "yum", "_ansible_check_mode": check})
		require.True(t, r.Failed())
		assert.Contains(t, r.Msg(), "YUM 3 (3.4.3)")
		assert.Contains(t, r.Msg(), "DNF 4 only")
		assert.False(t, r.Changed())
	}

	// DNF 5's dnf is a compiled program of megabytes: the quick check reads no file that
	// large (here a script padded past the bound) and asks --version, which refuses.
	f.target.Shell(t, `{ printf '#!/bin/sh\necho "dnf5 version 5.2.8.1"; exit 0\n'; head -c 200000 /dev/zero | tr '\0' '#'; } > /usr/bin/yum`)
	r = f.run(t, map[string]any{"name": "demo", "version": v1, "manager": "yum"})
	require.True(t, r.Failed())
	assert.Contains(t, r.Msg(), "DNF 5 (dnf5 version 5.2.8.1)")
	assert.False(t, r.Changed())
	assert.Equal(t, "demo-"+v2, f.installed(t))
}

func TestFailures(t *testing.T) {
	t.Parallel()
	f := newFixture(t, true)

	t.Run("a package no repository has fails with DNF's message", func(t *testing.T) {
		r := f.run(t, map[string]any{"name": "no-such-package"})
		require.True(t, r.Failed())
		assert.Contains(t, r.Msg(), "Unable to find a match")
		assert.Contains(t, r.Msg(), "dnf -y install-n -- no-such-package failed")
		assert.NotEmpty(t, r.String("stderr")+r.String("stdout"))

		r = f.run(t, map[string]any{"name": "demo", "version": "0:9.9-1.noarch"})
		require.True(t, r.Failed())
		assert.Contains(t, r.Msg(), "Unable to find a match")
		assert.Equal(t, "absent", f.installed(t))
	})

	t.Run("bad parameters fail before any command runs", func(t *testing.T) {
		// With rpm and dnf gone, any command would fail differently.
		f.target.Shell(t, "mv /usr/bin/rpm /usr/bin/rpm.hidden && mv /usr/bin/dnf /usr/bin/dnf.hidden")
		defer f.target.Shell(t, "mv /usr/bin/rpm.hidden /usr/bin/rpm && mv /usr/bin/dnf.hidden /usr/bin/dnf")
		cases := []struct {
			args map[string]any
			msg  string
		}{
			{map[string]any{"name": "demo", "version": "1.0-1"}, "version: invalid"},
			{map[string]any{"name": "-demo"}, `starts with "-"`},
			{map[string]any{"name": "demo;rm"}, `';'`},
			{map[string]any{"name": "de mo"}, "whitespace"},
			{map[string]any{"name": "a/b"}, `'/'`},
			{map[string]any{"name": "demo*"}, `'*'`},
			{map[string]any{"name": "demo", "state": "gone"}, "value of state must be one of: present, absent, got: gone"},
			{map[string]any{"name": "demo", "manager": "zypper"}, "value of manager must be one of"},
			{map[string]any{"name": "demo", "frobnicate": true}, "Unsupported parameters for (rpm_exact) module: frobnicate"},
			{map[string]any{}, "one of the following is required: name, packages"},
			{map[string]any{"packages": []any{map[string]any{"name": "demo"}, map[string]any{"name": "demo"}}}, "packages[1].name: demo is already packages[0]"},
			{map[string]any{"packages": []any{map[string]any{"name": "demo", "version": "2"}}}, "packages[0].version:"},
			{map[string]any{"name": []any{"a"}}, "argument 'name' is of type list"},
			{map[string]any{"name": "demo", "timeout": "0s"}, "timeout"},
			{map[string]any{"name": "demo", "version": v1, "state": "absent"}, "cannot be combined with state=absent"},
		}
		for _, c := range cases {
			r := f.run(t, c.args)
			assert.True(t, r.Failed(), "%v", c.args)
			assert.Contains(t, r.Msg(), c.msg, "%v", c.args)
			assert.False(t, r.Changed())
		}
	})
}

// TestQueryMemo: a converged run answers from the remembered query while the RPM database
// and rpm's configuration are the same files, and asks rpm again as soon as anything
// (here dnf run by hand) writes the database.
func TestQueryMemo(t *testing.T) {
	t.Parallel()
	f := newFixture(t, true)
	const record = "/var/cache/richt/rpm-query/demo.json"
	converged := map[string]any{"name": "demo", "version": v1}
	settle := func() { time.Sleep(rpmexact.Settle + 200*time.Millisecond) }

	r := f.run(t, converged)
	require.False(t, r.Failed(), r.Msg())
	require.True(t, r.Changed())
	settle()

	f.target.MustExec(t, "test", "!", "-e", record) // a run that acts remembers nothing
	r = f.run(t, map[string]any{"name": "demo", "version": v1, "_ansible_check_mode": true})
	assert.Equal(t, "rpm-query", r.String("observed"))
	f.target.MustExec(t, "test", "!", "-e", record)

	r = f.run(t, converged)
	require.False(t, r.Failed(), r.Msg())
	assert.Equal(t, "rpm-query", r.String("observed"))
	f.target.MustExec(t, "test", "-f", record)

	// Readers of the database (rpm as root re-owns the write-ahead log on every open) do
	// not invalidate the record. Every rpm process that opens the database writes its
	// shared-memory index (-shm), so an unchanged -shm shows that no rpm ran.
	shm := func() string {
		return f.target.MustExec(t, "stat", "-c", "%y", "/var/lib/rpm/rpmdb.sqlite-shm")
	}
	before := shm()
	time.Sleep(20 * time.Millisecond)
	f.target.MustExec(t, "rpm", "-q", "demo")
	require.NotEqual(t, before, shm(), "rpm -q writes the -shm index (else this test proves nothing)")
	before = shm()
	time.Sleep(20 * time.Millisecond)
	r = f.run(t, converged)
	require.False(t, r.Failed(), r.Msg())
	assert.False(t, r.Changed())
	assert.Equal(t, "memo", r.String("observed"))
	assert.Equal(t, []string{"demo-" + v1}, r.Strings("before"))
	assert.Equal(t, before, shm(), "a remembered answer runs no rpm")

	// Someone upgrades by hand: the next run must see 2.0 and downgrade, whatever the record says.
	f.target.MustExec(t, "dnf", "-y", "-q", "install-nevra", "demo-"+v2)
	r = f.run(t, converged)
	require.False(t, r.Failed(), r.Msg())
	assert.Equal(t, "rpm-query", r.String("observed"))
	assert.True(t, r.Changed())
	assert.Equal(t, []string{"demo-" + v2}, r.Strings("before"))
	assert.Equal(t, "demo-"+v1, f.installed(t))

	// And removes by hand with rpm itself.
	settle()
	r = f.run(t, converged)
	assert.Equal(t, "rpm-query", r.String("observed"))
	f.target.MustExec(t, "rpm", "-e", "--nodeps", "demo")
	r = f.run(t, converged)
	require.False(t, r.Failed(), r.Msg())
	assert.Equal(t, "rpm-query", r.String("observed"))
	assert.True(t, r.Changed())
	assert.Empty(t, r.Strings("before"))
	assert.Equal(t, "demo-"+v1, f.installed(t))
}

// TestListingMemo: a transaction lists every installed package before and after DNF; the
// listing after is remembered and stands for the next transaction's listing before, but
// only while nobody else wrote the database (here dnf run by hand in between).
func TestListingMemo(t *testing.T) {
	t.Parallel()
	f := newFixture(t, true)
	beforeListed := func(r testenv.Result) string {
		t.Helper()
		out := f.target.MustExec(t, "cat", r.String("transaction_log")+"/outcome.json")
		var rec struct {
			BeforeListed string `json:"before_listed"`
		}
		require.NoError(t, json.Unmarshal([]byte(out), &rec), out)
		return rec.BeforeListed
	}
	moved := func(r testenv.Result) []any {
		t.Helper()
		m, _ := r["moved"].([]any)
		return m
	}

	r := f.run(t, map[string]any{"name": "demo", "version": v1})
	require.False(t, r.Failed(), r.Msg())
	assert.Equal(t, rpmexact.ListedRPM, beforeListed(r), "the first transaction lists")
	f.target.MustExec(t, "test", "-f", rpmexact.DefaultListingDir+"/listing.json")

	r = f.run(t, map[string]any{"name": "demo", "version": v2})
	require.False(t, r.Failed(), r.Msg())
	assert.Equal(t, rpmexact.ListedMemo, beforeListed(r), "the next one uses the listing the first read after DNF")
	require.Len(t, moved(r), 1)
	assert.Equal(t, []any{"demo-" + v1}, moved(r)[0].(map[string]any)["before"])

	// A downgrade by hand: a remembered listing would still say 2.0, and the upgrade
	// below would then look like no move at all.
	f.target.MustExec(t, "dnf", "-y", "-q", "install-nevra", "demo-"+v1)
	r = f.run(t, map[string]any{"name": "demo", "version": v2})
	require.False(t, r.Failed(), r.Msg())
	assert.Equal(t, rpmexact.ListedRPM, beforeListed(r), "the database changed: listed again")
	require.Len(t, moved(r), 1)
	assert.Equal(t, []any{"demo-" + v1}, moved(r)[0].(map[string]any)["before"])
	assert.Equal(t, []any{"demo-" + v2}, moved(r)[0].(map[string]any)["after"])
	assert.Equal(t, true, r["package_changed"])
}
