package configfile

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/richt/services/pkg/atomicfile"
	"github.com/richt/services/pkg/runner"
)

// site is a config over an existing file with content "old\n", validated by validate.
func site(validate string) Config {
	return Config{Name: "site", Path: confPath, Content: "listen 80\n", Mode: DefaultMode, Validate: validate}
}

// unchanged asserts that the config's file still holds "old\n" and nothing else is left.
func unchanged(t *testing.T, root string) {
	t.Helper()
	full := filepath.Join(root, confPath)
	got, err := os.ReadFile(full)
	require.NoError(t, err)
	assert.Equal(t, "old\n", string(got), "the old content stays")
	entries, err := os.ReadDir(filepath.Dir(full))
	require.NoError(t, err)
	assert.Len(t, entries, 1, "no temporary file left")
}

// The validator runs for real (runner.Exec, argv, no shell) on the new content before it
// replaces the old: exit 0 replaces, anything else changes nothing and fails naming the
// config and what the validator said (withheld for a sensitive config), also when the
// deadline ends it.
func TestValidate(t *testing.T) {
	needsRoot(t)
	ctx := context.Background()
	for _, c := range []struct {
		name      string
		cfg       Config
		timeout   time.Duration
		err       []string
		notInErr  string
		validated bool
	}{
		{"exit 0 replaces", site(`grep -q "^listen 80$" %s`), 0, nil, "", true},
		{"exit 3 refuses", site(`sh -c 'echo "unknown directive in $1" >&2; exit 3' check %s`), 0,
			[]string{`config "site" (/etc/app/site.conf)`, "validation failed", "exited 3", "unknown directive in /", "not replaced (unchanged)"}, "", false},
		{"no output", site(`grep -q nomatch %s`), 0, []string{"exited 1: no output"}, "", false},
		{"sensitive: output withheld", func() Config {
			c := site(`sh -c 'cat "$1"; exit 1' check %s`)
			c.Content, c.Sensitive = "password=s3cr3t\n", true
			return c
		}(), 0, []string{"exited 1: output hidden: sensitive"}, "s3cr3t", false},
		{"deadline", site(`sh -c 'sleep 60' check %s`), 300 * time.Millisecond, []string{"validation failed", "did not finish", "deadline"}, "", false},
		{"missing validator", site(`/nonexistent/validator %s`), 0, []string{"validation failed", "did not finish"}, "", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			root := layOut(t, &onDisk{content: "old\n", mode: 0o644})
			hooked := 0
			d := Deps{Runner: runner.Exec{}, Root: root, BeforeReplace: func() error { hooked++; return nil }}
			plan, err := d.Plan(ctx, c.cfg)
			require.NoError(t, err)
			require.Equal(t, []Step{StepWrite}, plan.Steps)
			actx := ctx
			if c.timeout > 0 {
				var cancel context.CancelFunc
				actx, cancel = context.WithTimeout(ctx, c.timeout)
				defer cancel()
			}
			start := time.Now()
			res, err := d.Apply(actx, plan)
			assert.Less(t, time.Since(start), 30*time.Second, "the validator ends with the deadline")
			if c.validated {
				require.NoError(t, err)
				assert.True(t, res.Changed)
				got, _ := os.ReadFile(filepath.Join(root, confPath))
				assert.Equal(t, "listen 80\n", string(got))
				assert.Equal(t, 1, hooked)
				return
			}
			require.Error(t, err)
			for _, s := range c.err {
				assert.ErrorContains(t, err, s)
			}
			if c.notInErr != "" {
				assert.NotContains(t, err.Error(), c.notInErr)
			}
			assert.True(t, errors.Is(err, ErrValidation), "errors.Is ErrValidation")
			assert.True(t, errors.Is(err, atomicfile.ErrNotReplaced), "errors.Is ErrNotReplaced")
			assert.False(t, res.Changed)
			assert.Zero(t, hooked, "nothing owed for a file that did not move")
			unchanged(t, root)
		})
	}
}

// A failing BeforeReplace (the service could not record what the change owes) replaces
// nothing; it runs after the validator, right before the rename.
func TestBeforeReplaceFailsTheWrite(t *testing.T) {
	needsRoot(t)
	root := layOut(t, &onDisk{content: "old\n", mode: 0o644})
	var order []string
	d := Deps{Runner: runnerFunc(func(argv []string) int { order = append(order, "validate"); return 0 }), Root: root,
		BeforeReplace: func() error { order = append(order, "hook"); return errors.New("record owed reactions: disk full") }}
	plan, err := d.Plan(context.Background(), site("check %s"))
	require.NoError(t, err)
	res, err := d.Apply(context.Background(), plan)
	assert.ErrorContains(t, err, "record owed reactions: disk full")
	assert.ErrorIs(t, err, atomicfile.ErrNotReplaced)
	assert.False(t, res.Changed)
	assert.Equal(t, []string{"validate", "hook"}, order)
	unchanged(t, root)

	// The same for a removal: the file stays.
	d.BeforeReplace = func() error { return errors.New("no") }
	plan, err = d.Plan(context.Background(), Config{Name: "site", Path: confPath, Absent: true})
	require.NoError(t, err)
	res, err = d.Apply(context.Background(), plan)
	assert.ErrorIs(t, err, atomicfile.ErrNotReplaced)
	assert.False(t, res.Changed)
	unchanged(t, root)
}

type runnerFunc func(argv []string) int

func (f runnerFunc) Run(_ context.Context, argv ...string) (runner.Result, error) {
	return runner.Result{Argv: argv, ExitCode: f(argv)}, nil
}

// absent removes exactly the config's path: not the package manager's copies beside it,
// not another config, not the directory.
func TestAbsentRemovesExactlyThePath(t *testing.T) {
	needsRoot(t)
	root := layOut(t, &onDisk{content: "old\n", mode: 0o644})
	dir := filepath.Join(root, "etc/app")
	keep := []string{"site.conf.rpmsave", "site.conf.rpmnew", "site.conf.dpkg-old", "site.conf~", ".site.conf.swp", "site.conf.d", "other.conf"}
	for _, n := range keep {
		require.NoError(t, os.WriteFile(filepath.Join(dir, n), []byte("x"), 0o644))
	}
	d := Deps{Root: root}
	plan, err := d.Plan(context.Background(), Config{Name: "site", Path: confPath, Absent: true})
	require.NoError(t, err)
	require.Equal(t, []Step{StepRemove}, plan.Steps)
	res, err := d.Apply(context.Background(), plan)
	require.NoError(t, err)
	assert.True(t, res.Changed)
	_, err = os.Lstat(filepath.Join(root, confPath))
	assert.True(t, os.IsNotExist(err))
	for _, n := range keep {
		_, err := os.Lstat(filepath.Join(dir, n))
		assert.NoError(t, err, "%s stays", n)
	}
}

// The places a config is never written: through a link at the path or above it, into a
// directory someone other than root can write, into a directory that does not exist.
// Each is refused at Plan naming the place, with nothing written.
func TestRefusedPlaces(t *testing.T) {
	needsRoot(t)
	elsewhere := t.TempDir()
	cases := []struct {
		name    string
		arrange func(t *testing.T, root string)
		absent  bool
		err     string // "" : no refusal and no step
	}{
		{"link at the path", func(t *testing.T, root string) {
			require.NoError(t, os.Symlink(filepath.Join(elsewhere, "target"), filepath.Join(root, confPath)))
		}, false, "/etc/app/site.conf is a symbolic link"},
		{"link at the path, absent", func(t *testing.T, root string) {
			require.NoError(t, os.Symlink(filepath.Join(elsewhere, "target"), filepath.Join(root, confPath)))
		}, true, "/etc/app/site.conf is a symbolic link"},
		{"link above the path", func(t *testing.T, root string) {
			require.NoError(t, os.RemoveAll(filepath.Join(root, "etc/app")))
			require.NoError(t, os.Symlink(elsewhere, filepath.Join(root, "etc/app")))
		}, false, "/etc/app is a symbolic link"},
		{"directory writable by others", func(t *testing.T, root string) {
			require.NoError(t, os.Chmod(filepath.Join(root, "etc/app"), 0o777))
		}, false, "/etc/app is writable by group or others (mode 0777)"},
		{"sticky directory writable by all", func(t *testing.T, root string) {
			require.NoError(t, os.Chmod(filepath.Join(root, "etc"), 0o777|os.ModeSticky))
		}, false, "/etc is writable by group or others (mode 1777)"},
		{"directory of another user", func(t *testing.T, root string) {
			require.NoError(t, os.Chown(filepath.Join(root, "etc/app"), 1, 1))
		}, false, "/etc/app is owned by uid 1"},
		{"missing directory", func(t *testing.T, root string) {
			require.NoError(t, os.RemoveAll(filepath.Join(root, "etc/app")))
		}, false, "the directory /etc/app does not exist; directories are not created"},
		{"missing directory, absent: nothing to do", func(t *testing.T, root string) {
			require.NoError(t, os.RemoveAll(filepath.Join(root, "etc")))
		}, true, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			root := layOut(t, nil)
			c.arrange(t, root)
			cfg := site("")
			cfg.Absent = c.absent
			plan, err := Deps{Root: root}.Plan(context.Background(), cfg)
			if c.err == "" {
				require.NoError(t, err)
				assert.Empty(t, plan.Steps)
				return
			}
			require.Error(t, err)
			assert.ErrorContains(t, err, `config "site" (/etc/app/site.conf): `+c.err)
			assert.ErrorContains(t, err, "nothing was written")
			assert.Empty(t, plan.Steps)
			entries, _ := os.ReadDir(elsewhere)
			assert.Empty(t, entries, "nothing written where a link leads")
			_, err = os.Stat(filepath.Join(root, "etc/app/site.conf"))
			assert.True(t, os.IsNotExist(err), "no file")
		})
	}
}

// A plan held while another run changed the path is decided again from the path as it is
// when applied, as unit_override's Apply does: the other run's identical file is no
// write (and owes nothing), a directory linked away since the plan is refused.
func TestApplyDecidesAgainWhenThePathMovedSinceThePlan(t *testing.T) {
	needsRoot(t)
	ctx := context.Background()
	root := layOut(t, nil)
	locked := 0
	hooked := 0
	d := Deps{Root: root, BeforeReplace: func() error { hooked++; return nil },
		Lock: func(_ context.Context, name string) (func(), error) {
			assert.Equal(t, LockName(confPath), name)
			locked++
			return func() { locked-- }, nil
		}}
	plan, err := d.Plan(ctx, site(""))
	require.NoError(t, err)
	require.Equal(t, []Step{StepWrite}, plan.Steps)
	require.NoError(t, os.WriteFile(filepath.Join(root, confPath), []byte("listen 80\n"), 0o644))
	res, err := d.Apply(ctx, plan)
	require.NoError(t, err)
	assert.Empty(t, res.Plan, "decided again: the file is already as wanted")
	assert.False(t, res.Changed)
	assert.Zero(t, hooked)
	assert.Zero(t, locked, "the lock is given back")

	root = layOut(t, nil)
	d.Root = root
	plan, err = d.Plan(ctx, site(""))
	require.NoError(t, err)
	require.NoError(t, os.RemoveAll(filepath.Join(root, "etc/app")))
	elsewhere := t.TempDir()
	require.NoError(t, os.Symlink(elsewhere, filepath.Join(root, "etc/app")))
	_, err = d.Apply(ctx, plan)
	assert.ErrorContains(t, err, "/etc/app is a symbolic link")
	entries, _ := os.ReadDir(elsewhere)
	assert.Empty(t, entries, "nothing written through the link")
}
