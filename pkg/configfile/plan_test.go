package configfile

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/richt/services/pkg/runner"
	"github.com/richt/services/pkg/safefile"
)

const confPath = "/etc/app/site.conf"

// onDisk is the config's path as a row lays it out before the run.
type onDisk struct {
	content  string
	mode     os.FileMode
	uid, gid int
	stale    bool
}

// planCases are every way a config can stand against a request, with the plan each gets.
var planCases = []struct {
	name  string
	disk  *onDisk // nil: no file
	cfg   Config
	steps []Step
}{
	{"missing file: write", nil, Config{Content: "new\n"}, []Step{StepWrite}},
	{"missing file, validated: write", nil, Config{Content: "new\n", Validate: "check --file=%s"}, []Step{StepWrite}},
	{"other content: write", &onDisk{content: "old\n", mode: 0o644}, Config{Content: "new\n"}, []Step{StepWrite}},
	{"other content, validated, other mode and owner: write", &onDisk{content: "old\n", mode: 0o600, uid: 1, gid: 1}, Config{Content: "new\n", Validate: "check %s -q"}, []Step{StepWrite}},
	{"same content, other mode: chmod", &onDisk{content: "same\n", mode: 0o644}, Config{Content: "same\n", Mode: 0o640}, []Step{StepChmod}},
	{"same content, other owner: chown", &onDisk{content: "same\n", mode: 0o644}, Config{Content: "same\n", Owner: "1"}, []Step{StepChown}},
	{"same content, other group and mode: chown, chmod", &onDisk{content: "same\n", mode: 0o644}, Config{Content: "same\n", Group: "1", Mode: 0o640}, []Step{StepChown, StepChmod}},
	{"owned by another user, wanted root's: chown", &onDisk{content: "same\n", mode: 0o644, uid: 1, gid: 1}, Config{Content: "same\n"}, []Step{StepChown}},
	{"converged: nothing", &onDisk{content: "same\n", mode: 0o644}, Config{Content: "same\n", Validate: "check %s"}, nil},
	{"converged with a killed run's leftovers", &onDisk{content: "same\n", mode: 0o644, stale: true}, Config{Content: "same\n"}, []Step{StepRemoveStale}},
	{"absent, file there: remove", &onDisk{content: "old\n", mode: 0o644}, Config{Absent: true}, []Step{StepRemove}},
	{"absent, with leftovers: remove both", &onDisk{content: "old\n", mode: 0o600, stale: true}, Config{Absent: true}, []Step{StepRemoveStale, StepRemove}},
	{"absent, no file: nothing", nil, Config{Absent: true}, nil},
}

// rowConfig completes a row's config: its place, name and default mode.
func rowConfig(c Config) Config {
	c.Name, c.Path = "site", confPath
	if c.Mode == 0 && !c.Absent {
		c.Mode = 0o644
	}
	return c
}

// layOut makes root/etc/app (root's, 0755) and the row's file in it.
func layOut(t *testing.T, disk *onDisk) string {
	t.Helper()
	root := t.TempDir()
	full := filepath.Join(root, confPath)
	require.NoError(t, os.MkdirAll(filepath.Dir(full), 0o755))
	require.NoError(t, os.Chmod(filepath.Join(root, "etc"), 0o755))
	require.NoError(t, os.Chmod(filepath.Dir(full), 0o755))
	if disk == nil {
		return root
	}
	require.NoError(t, os.WriteFile(full, []byte(disk.content), disk.mode))
	require.NoError(t, os.Chmod(full, disk.mode))
	if disk.uid != os.Geteuid() || disk.gid != os.Getegid() {
		require.NoError(t, os.Chown(full, disk.uid, disk.gid))
	}
	if disk.stale {
		require.NoError(t, os.WriteFile(filepath.Join(filepath.Dir(full), ".site.conf.richt-4711"), []byte("ol"), 0o600))
	}
	return root
}

// needsRoot: every row lays out root-owned directories (a directory of another owner is
// refused), and some set owners.
func needsRoot(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("directories not root's are refused, and rows set owners: run as root")
	}
}

// strictRunner is a runner.Runner that fails the test on a command its plan does not
// name: only the validator of a plan that writes, with a copy of the new content in a
// directory of root's own below ValidateDir (never the temporary file beside the path,
// whose directory the config's owner may write), named as the config, root's alone (0600
// in a 0700 directory, owned by this process, root).
type strictRunner struct {
	t     *testing.T
	plan  Plan
	calls int
	rc    int
}

func (r *strictRunner) Run(_ context.Context, argv ...string) (runner.Result, error) {
	r.t.Helper()
	r.calls++
	w := r.plan.Want
	if !slices.Contains(r.plan.Steps, StepWrite) || len(w.Validate) == 0 {
		r.t.Errorf("command %q run, but the plan %v validates nothing", argv, r.plan.Steps)
		return runner.Result{Argv: argv, ExitCode: 127}, nil
	}
	require.Len(r.t, argv, len(w.Validate))
	var tmp string
	for i, a := range w.Validate {
		re := regexp.MustCompile("^" + strings.ReplaceAll(regexp.QuoteMeta(a), Placeholder, `(/\S*/run/richt/validate/run-[0-9]+/site\.conf)`) + "$")
		m := re.FindStringSubmatch(argv[i])
		require.NotNil(r.t, m, "argv[%d] %q: %q with the validator's copy for %s", i, argv[i], a, Placeholder)
		if len(m) > 1 {
			tmp = m[1]
		}
	}
	data, err := os.ReadFile(tmp)
	require.NoError(r.t, err)
	assert.Equal(r.t, string(w.Content), string(data), "the validator reads the new content")
	fi, err := os.Stat(tmp)
	require.NoError(r.t, err)
	assert.Equal(r.t, os.FileMode(0o600), safefile.Perm(fi), "mode 0600 while validated")
	st := fi.Sys().(*syscall.Stat_t)
	assert.Equal(r.t, os.Geteuid(), int(st.Uid), "owned by root while validated")
	for _, dir := range []string{filepath.Dir(tmp), filepath.Dir(filepath.Dir(tmp))} {
		fi, err := os.Lstat(dir)
		require.NoError(r.t, err)
		assert.Equal(r.t, os.ModeDir|0o700, fi.Mode(), "%s is root's alone", dir)
		assert.Equal(r.t, os.Geteuid(), int(fi.Sys().(*syscall.Stat_t).Uid), "%s is root's", dir)
	}
	return runner.Result{Argv: argv, ExitCode: r.rc}, nil
}

// Check mode reports the plan a real run then carries out, step for step; the run calls
// the validator and the hook only when its plan writes (or removes, for the hook), and
// the file ends as the config says.
func TestCheckModePlanIsTheAppliedPlan(t *testing.T) {
	needsRoot(t)
	for _, tt := range planCases {
		t.Run(tt.name, func(t *testing.T) {
			root := layOut(t, tt.disk)
			cfg := rowConfig(tt.cfg)
			ctx := context.Background()

			check, err := Deps{Runner: &strictRunner{t: t}, Root: root}.Plan(ctx, cfg)
			require.NoError(t, err)
			checkRes := check.Result()
			assert.Equal(t, tt.steps, checkRes.Plan, "the row's plan")
			assert.Equal(t, len(tt.steps) > 0 && !slices.Equal(tt.steps, []Step{StepRemoveStale}), checkRes.Changed)
			assert.Equal(t, checkRes.Changed, checkRes.Diff != nil, "a diff exactly when the file changes")

			r := &strictRunner{t: t}
			hooked := 0
			d := Deps{Runner: r, Root: root, BeforeReplace: func() error {
				hooked++
				return nil
			}}
			plan, err := d.Plan(ctx, cfg)
			require.NoError(t, err)
			r.plan = plan
			res, err := d.Apply(ctx, plan)
			require.NoError(t, err)
			assert.Equal(t, checkRes.Plan, res.Plan, "the plan carried out is the one check mode reported")
			assert.Equal(t, checkRes.Changed, res.Changed)
			assert.Equal(t, slices.Contains(plan.Steps, StepWrite) && len(plan.Want.Validate) > 0, r.calls == 1, "the validator ran once (%d)", r.calls)
			assert.LessOrEqual(t, r.calls, 1)
			assert.Equal(t, slices.Contains(plan.Steps, StepWrite) || slices.Contains(plan.Steps, StepRemove), hooked == 1, "BeforeReplace ran once (%d)", hooked)
			assert.LessOrEqual(t, hooked, 1)

			after, err := Observe(root, confPath)
			require.NoError(t, err)
			assert.Empty(t, after.Stale, "no leftovers")
			assert.Equal(t, !cfg.Absent, after.Exists)
			if !cfg.Absent {
				assert.Equal(t, cfg.Content, string(after.Content))
				assert.Equal(t, plan.Want.Mode, after.Mode)
				assert.Equal(t, []int{plan.Want.UID, plan.Want.GID}, []int{after.UID, after.GID})
			}
			again, err := Deps{Runner: &strictRunner{t: t}, Root: root}.Plan(ctx, cfg)
			require.NoError(t, err)
			assert.Empty(t, again.Steps, "converged after the plan's steps")
		})
	}
}

// Decide is pure: the same answer twice, and a sensitive config's diff has no bytes of it.
func TestDecideIsPureAndHidesSensitiveContent(t *testing.T) {
	dirs := []safefile.Dir{{Path: "/", Exists: true, Mode: 0o755}, {Path: "/etc", Exists: true, Mode: 0o755}, {Path: "/etc/app", Exists: true, Mode: 0o755}}
	w := Want{Name: "site", Path: confPath, Present: true, Content: []byte("password=new-s3cr3t\n"), Mode: 0o600, Sensitive: true}
	f := File{File: safefile.File{Exists: true, Content: []byte("password=old-s3cr3t\n"), Mode: 0o600}, Dirs: dirs}
	p, err := Decide(w, f)
	require.NoError(t, err)
	again, err := Decide(w, f)
	require.NoError(t, err)
	assert.Equal(t, p, again)
	assert.Equal(t, []Step{StepWrite}, p.Steps)
	assert.NotContains(t, p.Diff.Before+p.Diff.After, "s3cr3t")
	assert.Contains(t, p.Diff.After, "content changed")
	w.Sensitive = false
	p, err = Decide(w, f)
	require.NoError(t, err)
	assert.Contains(t, p.Diff.After, "password=new-s3cr3t")
}

// An owner or group no source knows fails a present config's plan with
// safefile.ErrUnknownID (a package may create it: the caller can tell). A removal needs
// no owner: it looks none up, and removes the file whoever owns it.
func TestOwnersAreLookedUpOnlyForAPresentConfig(t *testing.T) {
	needsRoot(t)
	cases := []struct {
		name    string
		cfg     Config
		unknown bool
		steps   []Step
	}{
		{"present, unknown owner", Config{Content: "x\n", Owner: "richt-no-such-user"}, true, nil},
		{"present, unknown group", Config{Content: "x\n", Group: "richt-no-such-group"}, true, nil},
		{"absent, unknown owner and group: removed", Config{Absent: true, Owner: "richt-no-such-user", Group: "richt-no-such-group"}, false, []Step{StepRemove}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			root := layOut(t, &onDisk{content: "old\n", mode: 0o644, uid: os.Geteuid(), gid: os.Getegid()})
			p, err := Deps{Root: root}.Plan(context.Background(), rowConfig(c.cfg))
			if c.unknown {
				assert.ErrorIs(t, err, safefile.ErrUnknownID)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, c.steps, p.Steps)
		})
	}
}
