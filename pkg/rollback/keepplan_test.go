package rollback

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/richt/services/pkg/runner/runnertest"
	"github.com/richt/services/pkg/statedir"
)

// argB from repository r2, as a plan's fetch spells it.
const argBFromR2 = `{"arch":"x86_64","epoch":2,"file":"b-lib-2~3.1-4.el9.x86_64.rpm","name":"b-lib","nevra":"b-lib-2:3.1-4.el9.x86_64","release":"4.el9","repo":"r2","version":"3.1"}`

// PlanKeep reads only: the kept builds from Dir, the others from keep.py in check mode;
// it creates no directory and keeps nothing.
func TestPlanKeep(t *testing.T) {
	py := "/usr/bin/python3"
	for _, c := range []struct {
		name   string
		keptA  bool
		nevras []string
		calls  func(dir string) []runnertest.Call
		want   KeepPlan
	}{
		{
			name: "one kept, one to fetch with gpgcheck, one missing", keptA: true,
			nevras: []string{nevraC, nevraA, nevraB, nevraA},
			calls: func(dir string) []runnertest.Call {
				return []runnertest.Call{{
					Argv:   []string{py, "-I", "-c", keepPy(t), "check", dir, argC, argB},
					Stdout: "RICHT-KEEP-RESULT " + `{"found": {"` + nevraB + `": {"path": "", "repo": "r2", "gpgcheck": true}}, "missing": ["` + nevraC + `"]}`,
				}}
			},
			want: KeepPlan{Kept: []string{nevraA}, Fetch: []Fetch{{Build: nevraB, Repo: "r2", GPGCheck: true}}, Missing: []string{nevraC}},
		},
		{
			name: "everything kept: no command", keptA: true, nevras: []string{nevraA},
			calls: func(string) []runnertest.Call { return nil },
			want:  KeepPlan{Kept: []string{nevraA}},
		},
		{
			name: "nothing asked: no command", nevras: nil,
			calls: func(string) []runnertest.Call { return nil },
		},
		{
			name: "to fetch without gpgcheck", nevras: []string{nevraB},
			calls: func(dir string) []runnertest.Call {
				return []runnertest.Call{{
					Argv:   []string{py, "-I", "-c", keepPy(t), "check", dir, argB},
					Stdout: found1(nevraB, "r2", ""),
				}}
			},
			want: KeepPlan{Fetch: []Fetch{{Build: nevraB, Repo: "r2"}}},
		},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "rpms")
			k := Keeper{Runner: runnertest.New(t, c.calls(dir)...), Dir: dir, Python: py}
			if c.keptA {
				require.NoError(t, os.Mkdir(dir, 0o700))
				require.NoError(t, os.WriteFile(k.Path(nevraA), []byte("a"), 0o600))
			}
			before := listDir(t, dir)
			p, err := k.PlanKeep(context.Background(), c.nevras)
			require.NoError(t, err)
			assert.Equal(t, c.want, p)
			assert.Equal(t, before, listDir(t, dir), "planning writes nothing")
		})
	}
	t.Run("bad build: nothing run", func(t *testing.T) {
		k := Keeper{Runner: runnertest.New(t), Dir: t.TempDir(), Python: py}
		_, err := k.PlanKeep(context.Background(), []string{"a;b"})
		assert.ErrorContains(t, err, "keep builds")
	})
	t.Run("insecure directory: nothing run", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "rpms")
		require.NoError(t, os.Mkdir(dir, 0o700))
		require.NoError(t, os.Chmod(dir, 0o777))
		k := Keeper{Runner: runnertest.New(t), Dir: dir, Python: py}
		_, err := k.PlanKeep(context.Background(), []string{nevraB})
		assert.ErrorContains(t, err, "writable by group or others")
	})
}

// Keep fetches exactly the plan's builds, each from the repository the plan named, and
// keeps nothing when what it fetched is not what the plan said.
func TestKeepCarriesOutThePlan(t *testing.T) {
	py := "/usr/bin/python3"
	plan := KeepPlan{Kept: []string{nevraA}, Fetch: []Fetch{{Build: nevraB, Repo: "r2", GPGCheck: true}}}
	for _, c := range []struct {
		name   string
		plan   KeepPlan
		answer func(tmp string) string
		calls  bool
		noTemp bool // keep.py makes no temporary file
		err    string
		files  []string // Dir afterwards (nil: no Dir)
		marked bool
	}{
		{
			name: "as planned: kept and marked", plan: plan, calls: true,
			answer: func(tmp string) string {
				return "RICHT-KEEP-RESULT " + `{"found": {"` + nevraB + `": {"path": "` + tmp + `", "repo": "r2", "gpgcheck": true}}, "missing": []}`
			},
			files:  []string{"b-lib-2~3.1-4.el9.x86_64.rpm -rw-------", "b-lib-2~3.1-4.el9.x86_64.rpm.gpgcheck -rw-------"},
			marked: true,
		},
		{
			name: "the repository no longer offers it: nothing kept", plan: plan, calls: true, noTemp: true,
			answer: func(string) string {
				return "RICHT-KEEP-RESULT " + `{"found": {}, "missing": ["` + nevraB + `"]}`
			},
			err:   "the plan fetches " + nevraB + " from repository r2, which no longer offers it; nothing was kept",
			files: []string{},
		},
		{
			name: "gpgcheck turned off since the plan: nothing kept", plan: plan, calls: true,
			answer: func(tmp string) string {
				return "RICHT-KEEP-RESULT " + `{"found": {"` + nevraB + `": {"path": "` + tmp + `", "repo": "r2", "gpgcheck": false}}, "missing": []}`
			},
			err:   "with gpgcheck on, but the repository now has it off",
			files: []string{},
		},
		{
			name: "nothing to fetch: nothing run, no directory", plan: KeepPlan{Kept: []string{nevraA}},
		},
		{
			name: "a plan with a missing build is refused: nothing run", plan: KeepPlan{Missing: []string{nevraC}},
			err: "the plan has builds no repository offers (" + nevraC + ")",
		},
		{
			name: "a fetch without a repository is refused", plan: KeepPlan{Fetch: []Fetch{{Build: nevraB}}},
			err: "fetches " + nevraB + " from no repository",
		},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "rpms")
			var calls []runnertest.Call
			if c.calls {
				tmp, mk := tempOf(dir, nevraB, "42", "build b")
				if c.noTemp {
					mk = nil
				}
				calls = append(calls, runnertest.Call{Argv: []string{py, "-I", "-c", keepPy(t), "fetch", dir, argBFromR2}, Do: mk, Stdout: c.answer(tmp)})
			}
			k := Keeper{Runner: runnertest.New(t, calls...), Dir: dir, Python: py}
			err := k.Keep(context.Background(), c.plan)
			if c.err != "" {
				assert.ErrorContains(t, err, c.err)
			} else {
				require.NoError(t, err)
			}
			assert.Equal(t, c.files, listDir(t, dir))
			assert.Equal(t, c.marked, k.GPGCheck(nevraB))
		})
	}
}

func TestCompareFetched(t *testing.T) {
	plan := []Fetch{{Build: nevraA, Repo: "r1"}, {Build: nevraB, Repo: "r2", GPGCheck: true}}
	ok := answer{Found: map[string]found{nevraA: {Repo: "r1"}, nevraB: {Repo: "r2", GPGCheck: true}}}
	require.NoError(t, compareFetched(plan, ok))
	for _, c := range []struct {
		name string
		ans  answer
		err  string
	}{
		{"missing", answer{Found: map[string]found{nevraA: {Repo: "r1"}}, Missing: []string{nevraB}}, nevraB + " from repository r2, which no longer offers it"},
		{"another repository", answer{Found: map[string]found{nevraA: {Repo: "r9"}, nevraB: {Repo: "r2", GPGCheck: true}}}, "from repository r1, but it came from r9"},
		{"gpgcheck on now", answer{Found: map[string]found{nevraA: {Repo: "r1", GPGCheck: true}, nevraB: {Repo: "r2", GPGCheck: true}}}, "with gpgcheck off, but the repository now has it on"},
	} {
		t.Run(c.name, func(t *testing.T) {
			assert.ErrorContains(t, compareFetched(plan, c.ans), c.err)
		})
	}
}

// A keep directory below a directory another user owns is refused before anything is
// read from it: that user could put a directory of their own in its place after the
// check, and its builds would count as kept. The same holds when the directory is made.
func TestTheKeepDirectorysAncestorsAreRoots(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to give a directory to another user")
	}
	owned := filepath.Join(t.TempDir(), "daemon")
	require.NoError(t, os.Mkdir(owned, 0o755))
	require.NoError(t, os.Chown(owned, 4242, 4242))
	dir := filepath.Join(owned, "rpms")
	require.NoError(t, os.Mkdir(dir, 0o700))
	k := Keeper{Runner: runnertest.New(t), Dir: dir, Python: "/usr/bin/python3"}
	_, err := k.PlanKeep(context.Background(), []string{nevraA})
	assert.ErrorIs(t, err, statedir.ErrInsecure)
	assert.ErrorIs(t, k.ensureDir(), statedir.ErrInsecure)
}
