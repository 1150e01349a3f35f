package rpm_exact_test

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/richt/services/modules"
	"github.com/richt/services/testenv"
	"github.com/richt/services/testenv/fixtures"
)

// kmod is kernel-like: DNF keeps several builds of it side by side (installonly).
func kmod(version string) testenv.Package {
	return testenv.Package{Name: "acc-kmod", Version: version, Provides: []string{"installonlypkg(kernel-module)"},
		Files: map[string]testenv.File{"/usr/lib/acc/kmod-" + version + ".txt": {Content: version}}}
}

func accRepo(t *testing.T) string {
	var pkgs []testenv.Package
	for _, v := range []string{"1.0", "2.0"} {
		pkgs = append(pkgs, fixtures.PinnedSet(v)...)
	}
	for _, v := range []string{"1.0", "2.0", "3.0", "4.0"} {
		pkgs = append(pkgs, kmod(v))
	}
	return testenv.Repo(t, pkgs...)
}

func newAccFixture(t *testing.T) *fixture {
	t.Helper()
	if testing.Short() {
		t.Skip("end-to-end: needs Docker")
	}
	dir := accRepo(t)
	f := &fixture{target: testenv.Start(t), module: testenv.BuildModule(t, modules.Command, testenv.Named("rpm_exact"))}
	require.NoError(t, f.target.AddRepo(context.Background(), "acc", dir))
	return f
}

// rpmAll is what rpm itself says about names, one "NAME-VERSION" line each, or "absent".
func (f *fixture) rpmAll(t *testing.T, names ...string) string {
	t.Helper()
	var out []string
	for _, n := range names {
		res, err := f.target.Exec(context.Background(), "rpm", "-q", "--qf", "%{NAME}-%{VERSION}\n", n)
		require.NoError(t, err)
		if res.ExitCode != 0 {
			out = append(out, n+" absent")
			continue
		}
		out = append(out, strings.Fields(res.Stdout)...)
	}
	return strings.Join(out, " ")
}

func set(version string, names ...string) map[string]any {
	var pkgs []any
	for _, n := range names {
		pkgs = append(pkgs, map[string]any{"name": n, "version": "0:" + version + "-1.noarch"})
	}
	return map[string]any{"packages": pkgs}
}

// moved returns the result's moves by name.
func moved(r testenv.Result) map[string]map[string]any {
	out := map[string]map[string]any{}
	list, _ := r["moved"].([]any)
	for _, m := range list {
		mm := m.(map[string]any)
		out[mm["name"].(string)] = mm
	}
	return out
}

func TestPackageSets(t *testing.T) {
	t.Parallel()
	f := newAccFixture(t)
	all := []string{"acc-lib", "acc-app", "acc-tool"}

	t.Run("install a set in one transaction", func(t *testing.T) {
		r := f.run(t, set("1.0", all...))
		require.False(t, r.Failed(), r.Msg())
		assert.True(t, r.Changed())
		assert.Len(t, r["commands"], 1, "one DNF transaction")
		assert.Equal(t, "acc-lib-1.0 acc-app-1.0 acc-tool-1.0", f.rpmAll(t, all...))
		assert.Equal(t, true, r["unit_files_changed"])
		assert.Len(t, r["packages"], 3)
	})

	t.Run("a pin that drags its dependents reports them", func(t *testing.T) {
		// acc-app and acc-tool require acc-lib at their own version: DNF upgrades them to
		// satisfy a pin of acc-lib alone.
		r := f.run(t, map[string]any{"name": "acc-lib", "version": "0:2.0-1.noarch", "_ansible_diff": true})
		require.False(t, r.Failed(), r.Msg())
		assert.Equal(t, "acc-lib-2.0 acc-app-2.0 acc-tool-2.0", f.rpmAll(t, all...))
		m := moved(r)
		require.Contains(t, m, "acc-app")
		assert.Equal(t, []any{"acc-app-0:1.0-1.noarch"}, m["acc-app"]["before"])
		assert.Equal(t, []any{"acc-app-0:2.0-1.noarch"}, m["acc-app"]["after"])
		assert.Equal(t, false, m["acc-app"]["requested"])
		assert.Equal(t, true, m["acc-lib"]["requested"])
		assert.Equal(t, true, r["unit_files_changed"], "acc-app's unit file changed, though only acc-lib was pinned")
		assert.Contains(t, r.Map("diff")["after"], "acc-app-0:2.0-1.noarch")
	})

	t.Run("downgrade a set of interdependent pins in one task", func(t *testing.T) {
		r := f.run(t, set("1.0", all...))
		require.False(t, r.Failed(), r.Msg())
		assert.Len(t, r["commands"], 1)
		assert.Equal(t, "acc-lib-1.0 acc-app-1.0 acc-tool-1.0", f.rpmAll(t, all...))
	})

	t.Run("upgrade the set", func(t *testing.T) {
		r := f.run(t, set("2.0", all...))
		require.False(t, r.Failed(), r.Msg())
		assert.Equal(t, "acc-lib-2.0 acc-app-2.0 acc-tool-2.0", f.rpmAll(t, all...))
		assert.Len(t, moved(r), 3)
	})

	t.Run("converged set runs no DNF", func(t *testing.T) {
		f.target.MustExec(t, "mv", "/usr/bin/dnf", "/usr/bin/dnf.hidden")
		defer f.target.MustExec(t, "mv", "/usr/bin/dnf.hidden", "/usr/bin/dnf")
		r := f.run(t, set("2.0", all...))
		require.False(t, r.Failed(), r.Msg())
		assert.False(t, r.Changed())
		assert.Empty(t, r["commands"])
	})

	t.Run("check mode changes nothing", func(t *testing.T) {
		r := f.run(t, map[string]any{"packages": set("1.0", all...)["packages"], "_ansible_check_mode": true, "_ansible_diff": true})
		require.False(t, r.Failed(), r.Msg())
		assert.True(t, r.Changed())
		assert.Equal(t, "acc-lib-2.0 acc-app-2.0 acc-tool-2.0", f.rpmAll(t, all...))
		assert.Contains(t, r.Map("diff")["after"], "acc-app-0:1.0-1.noarch")
		assert.Len(t, r["would_move"], 3, "DNF's summary: the three downgrades")
	})

	t.Run("check mode says what a pin would drag along", func(t *testing.T) {
		r := f.run(t, map[string]any{"name": "acc-lib", "version": "0:1.0-1.noarch", "_ansible_check_mode": true})
		require.False(t, r.Failed(), r.Msg())
		would := map[string]map[string]any{}
		for _, m := range r["would_move"].([]any) {
			mm := m.(map[string]any)
			would[mm["name"].(string)] = mm
		}
		require.Contains(t, would, "acc-app", "DNF would downgrade acc-app to satisfy the pin: %v", r["would_move"])
		assert.Equal(t, "downgrade", would["acc-app"]["action"])
		assert.Equal(t, "1.0-1.noarch", would["acc-app"]["version"])
		assert.Equal(t, false, would["acc-app"]["requested"])
		assert.Equal(t, true, would["acc-lib"]["requested"])
		assert.Contains(t, r.String("check_mode_note"), "--assumeno")
		assert.Equal(t, "acc-lib-2.0 acc-app-2.0 acc-tool-2.0", f.rpmAll(t, all...))
	})

	t.Run("an unavailable entry changes nothing and is named", func(t *testing.T) {
		args := set("1.0", "acc-lib", "acc-app")
		args["packages"] = append(args["packages"].([]any), map[string]any{"name": "acc-tool", "version": "0:9.0-1.noarch"})
		r := f.run(t, args)
		require.True(t, r.Failed())
		assert.False(t, r.Changed())
		assert.Contains(t, r.Msg(), "acc-tool-0:9.0-1.noarch")
		assert.Equal(t, "acc-lib-2.0 acc-app-2.0 acc-tool-2.0", f.rpmAll(t, all...), "all or nothing")
	})

	t.Run("removal runs after the install succeeded", func(t *testing.T) {
		r := f.run(t, map[string]any{"packages": []any{
			map[string]any{"name": "acc-lib", "version": "0:2.0-1.noarch"},
			map[string]any{"name": "acc-tool", "state": "absent"},
		}})
		require.False(t, r.Failed(), r.Msg())
		assert.Len(t, r["commands"], 1, "acc-lib is already at 2.0: only the removal")
		assert.Equal(t, "acc-lib-2.0 acc-app-2.0 acc-tool absent", f.rpmAll(t, all...))
	})
}

func TestInstallonlyPin(t *testing.T) {
	t.Parallel()
	f := newAccFixture(t)
	r := f.run(t, map[string]any{"name": "acc-kmod", "version": "0:1.0-1.noarch"})
	require.False(t, r.Failed(), r.Msg())

	// A pin of an installonly package installs that build beside the others.
	r = f.run(t, map[string]any{"name": "acc-kmod", "version": "0:2.0-1.noarch"})
	require.False(t, r.Failed(), r.Msg())
	assert.Equal(t, []string{"acc-kmod-0:1.0-1.noarch", "acc-kmod-0:2.0-1.noarch"}, r.Strings("after"))
	assert.Equal(t, "acc-kmod-1.0 acc-kmod-2.0", f.rpmAll(t, "acc-kmod"))

	// The older build is still installed: a pin to it holds without a transaction.
	r = f.run(t, map[string]any{"name": "acc-kmod", "version": "0:1.0-1.noarch"})
	require.False(t, r.Failed(), r.Msg())
	assert.False(t, r.Changed())

	// installonly_limit=3 (EL's default): the fourth build makes DNF remove the oldest,
	// and the result says so.
	require.False(t, f.run(t, map[string]any{"name": "acc-kmod", "version": "0:3.0-1.noarch"}).Failed())
	r = f.run(t, map[string]any{"name": "acc-kmod", "version": "0:4.0-1.noarch"})
	require.False(t, r.Failed(), r.Msg())
	assert.Equal(t, "acc-kmod-2.0 acc-kmod-3.0 acc-kmod-4.0", f.rpmAll(t, "acc-kmod"))
	assert.Equal(t, []string{"acc-kmod-0:2.0-1.noarch", "acc-kmod-0:3.0-1.noarch", "acc-kmod-0:4.0-1.noarch"}, r.Strings("after"))
	assert.NotContains(t, r.Strings("after"), "acc-kmod-0:1.0-1.noarch")

	// state: absent removes every build.
	r = f.run(t, map[string]any{"name": "acc-kmod", "state": "absent"})
	require.False(t, r.Failed(), r.Msg())
	assert.Equal(t, "acc-kmod absent", f.rpmAll(t, "acc-kmod"))
}
