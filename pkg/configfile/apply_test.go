package configfile

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/richt/services/pkg/atomicfile"
	"github.com/richt/services/pkg/runner"
	"github.com/richt/services/pkg/stamp"
)

// site is a config over an existing file with content "old\n", validated by validate.
func site(validate string) Config {
	return Config{Name: "site", Path: confPath, Content: "listen 80\n", Mode: 0o644, Validate: validate}
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
// directory that does not exist (an untrusted directory: TestDirectoryTrust).
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

// A config's directories are trusted when owned by root or the config's owner, writable by
// group only for group root or, in a directory the config's non-root owner owns, the
// config's group, and never writable by others (sticky or not): the shapes Debian's and
// EL's /etc/redis have are written into, with the config's owner; any other is refused at
// Plan naming the directory, its owner and mode and what is accepted, with nothing
// written. The config here is daemon's (uid and gid 1), or root's with group 1 (nginx's
// root:nginx 0775 directory would let group nginx replace a config root's master reads).
func TestDirectoryTrust(t *testing.T) {
	needsRoot(t)
	for _, c := range []struct {
		name        string
		dir         string // below root: etc or etc/app
		uid, gid    int
		mode        os.FileMode
		untrustedBy string // "": written
		rootsConfig bool   // the config is root's, group 1
	}{
		{"root's, 0755", "etc/app", 0, 0, 0o755, "", false},
		{"the owner's, 0750 (EL's /etc/redis)", "etc/app", 1, 0, 0o750, "", false},
		{"the owner's, group-writable by its group, setgid (Debian's /etc/redis)", "etc/app", 1, 1, 0o770 | os.ModeSetgid, "", false},
		{"root's, group-writable by group root", "etc", 0, 0, 0o775, "", false},
		{"root's, group-writable by group root, root's config", "etc", 0, 0, 0o775, "", true},
		{"root's, group-writable by the config's group", "etc/app", 0, 1, 0o775, "/etc/app (owner uid 0, group gid 1, mode 0775) is writable by group gid 1, which only a directory the config's non-root owner owns may be", false},
		{"root's, group-writable by the config's group, root's config (root:nginx 0775)", "etc/app", 0, 1, 0o775, "/etc/app (owner uid 0, group gid 1, mode 0775) is writable by group gid 1, which only a directory the config's non-root owner owns may be", true},
		{"the owner's, group-writable by another group", "etc/app", 1, 2, 0o775, "/etc/app (owner uid 1, group gid 2, mode 0775) is writable by group gid 2", false},
		{"another user's", "etc/app", 2, 0, 0o755, "/etc/app (owner uid 2, group gid 0, mode 0755) is owned by uid 2", false},
		{"group-writable by another group", "etc/app", 0, 2, 0o775, "/etc/app (owner uid 0, group gid 2, mode 0775) is writable by group gid 2", false},
		{"the owner's, writable by others", "etc/app", 1, 1, 0o757, "/etc/app (owner uid 1, group gid 1, mode 0757) is writable by others", false},
		{"sticky, writable by others", "etc", 0, 0, 0o777 | os.ModeSticky, "/etc (owner uid 0, group gid 0, mode 1777) is writable by others (the sticky bit does not keep them from adding files)", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			root := layOut(t, nil)
			dir := filepath.Join(root, c.dir)
			require.NoError(t, os.Chown(dir, c.uid, c.gid))
			require.NoError(t, os.Chmod(dir, c.mode))
			cfg := site("")
			cfg.Owner, cfg.Group, cfg.Mode = "1", "1", 0o640
			uid := 1
			if c.rootsConfig {
				cfg.Owner, uid = "root", 0
			}
			d := Deps{Root: root}
			plan, err := d.Plan(context.Background(), cfg)
			full := filepath.Join(root, confPath)
			if c.untrustedBy != "" {
				require.Error(t, err)
				assert.ErrorContains(t, err, `config "site" (/etc/app/site.conf): `+c.untrustedBy)
				assert.ErrorContains(t, err, fmt.Sprintf("accepted when owned by root or by the config's owner (uid %d), writable by group only for group root or, when owned by the config's owner and that is not root, for the config's group (gid 1), and never writable by others", uid))
				assert.ErrorContains(t, err, "nothing was written")
				assert.Empty(t, plan.Steps)
				_, err = os.Lstat(full)
				assert.True(t, os.IsNotExist(err), "no file")
				return
			}
			require.NoError(t, err)
			require.Equal(t, []Step{StepWrite}, plan.Steps)
			_, err = d.Apply(context.Background(), plan)
			require.NoError(t, err)
			fi, err := os.Lstat(full)
			require.NoError(t, err)
			st := fi.Sys().(*syscall.Stat_t)
			assert.Equal(t, []any{os.FileMode(0o640), uid, 1}, []any{fi.Mode(), int(st.Uid), int(st.Gid)})
		})
	}
}

// The validator runs as root on a copy of the new content root's alone (0600 in a 0700
// directory of root's): a config's owner who could write or swap it could change what
// root validates (nginx's load_module, haproxy's lua-load). The validator here is a real
// command that fails unless it sees that; the file installed has its final owner and mode.
func TestValidatorSeesAUnitFileCopy(t *testing.T) {
	needsRoot(t)
	for _, c := range []struct {
		name             string
		dirUID, dirGID   int
		dirMode          os.FileMode
		owner, group     string
		mode             os.FileMode
		wantUID, wantGID int
	}{
		{"root's directory, the daemon's config", 0, 0, 0o755, "1", "1", 0o640, 1, 1},
		{"the owner's setgid directory (Debian's /etc/redis)", 1, 1, 0o770 | os.ModeSetgid, "1", "1", 0o640, 1, 1},
		{"root's config, world-readable", 0, 0, 0o755, "", "", 0o644, 0, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			root := layOut(t, &onDisk{content: "old\n", mode: 0o644})
			dir := filepath.Join(root, "etc/app")
			require.NoError(t, os.Chown(dir, c.dirUID, c.dirGID))
			require.NoError(t, os.Chmod(dir, c.dirMode))
			cfg := site(`sh -c 'm=$(stat -c %u:%a "$1" "${1%/*}"); [ "$m" = "$(printf "0:600\n0:700")" ] || { echo "validated as $m"; exit 1; }' check %s`)
			cfg.Owner, cfg.Group, cfg.Mode = c.owner, c.group, c.mode
			d := Deps{Runner: runner.Exec{}, Root: root}
			plan, err := d.Plan(context.Background(), cfg)
			require.NoError(t, err)
			require.Equal(t, []Step{StepWrite}, plan.Steps)
			_, err = d.Apply(context.Background(), plan)
			require.NoError(t, err)
			fi, err := os.Lstat(filepath.Join(root, confPath))
			require.NoError(t, err)
			st := fi.Sys().(*syscall.Stat_t)
			assert.Equal(t, []any{c.mode, c.wantUID, c.wantGID}, []any{fi.Mode(), int(st.Uid), int(st.Gid)}, "installed with its final mode and owner")
			tmps, _ := filepath.Glob(filepath.Join(dir, ".site.conf.richt-*"))
			assert.Empty(t, tmps)
		})
	}
}

// In a directory the config's owner can write, the temporary file can be swapped for
// another between its creation and the rename: the content validated must be the
// content installed. A swap seen right before the rename (here by BeforeReplace, or by
// the validator itself) fails the write naming the temporary file, replaces nothing and
// leaves the swapped-in file alone.
func TestSwappedTemporaryFileIsNotInstalled(t *testing.T) {
	needsRoot(t)
	swap := func(t *testing.T, root string) {
		t.Helper()
		tmps, err := filepath.Glob(filepath.Join(root, "etc/app/.site.conf.richt-*"))
		require.NoError(t, err)
		require.Len(t, tmps, 1)
		require.NoError(t, os.Remove(tmps[0]))
		require.NoError(t, os.WriteFile(tmps[0], []byte("listen 80\nrequirepass \"\"\n"), 0o644))
	}
	for _, by := range []string{"BeforeReplace", "validator"} {
		t.Run(by, func(t *testing.T) {
			root := layOut(t, &onDisk{content: "old\n", mode: 0o644})
			require.NoError(t, os.Chown(filepath.Join(root, "etc/app"), 1, 1))
			d := Deps{Root: root, Runner: runnerFunc(func([]string) int { return 0 })}
			if by == "BeforeReplace" {
				d.BeforeReplace = func() error { swap(t, root); return nil }
			} else {
				d.Runner = runnerFunc(func([]string) int { swap(t, root); return 0 })
			}
			cfg := site("check %s")
			cfg.Owner = "1"
			plan, err := d.Plan(context.Background(), cfg)
			require.NoError(t, err)
			res, err := d.Apply(context.Background(), plan)
			require.Error(t, err)
			assert.Regexp(t, `config "site" \(/etc/app/site.conf\): .*/etc/app/\.site\.conf\.richt-[0-9]+ was replaced while being written`, err.Error())
			assert.ErrorIs(t, err, atomicfile.ErrNotReplaced)
			assert.False(t, res.Changed)
			got, rerr := os.ReadFile(filepath.Join(root, confPath))
			require.NoError(t, rerr)
			assert.Equal(t, "old\n", string(got), "nothing installed")
			tmps, _ := filepath.Glob(filepath.Join(root, "etc/app/.site.conf.richt-*"))
			assert.Len(t, tmps, 1, "the swapped-in file is not ours to remove")
		})
	}
}

// openDir, the directory Apply changes the file through, refuses what Decide refuses, on
// the directories it opened: a link (not followed), a missing directory, an untrusted one.
func TestOpenDirRefusesWhatDecideRefuses(t *testing.T) {
	needsRoot(t)
	w := Want{Name: "site", Path: confPath, Present: true, UID: 1, GID: 1}
	for _, c := range []struct {
		name    string
		arrange func(t *testing.T, root string)
		err     string
	}{
		{"link", func(t *testing.T, root string) {
			require.NoError(t, os.RemoveAll(filepath.Join(root, "etc/app")))
			require.NoError(t, os.Symlink(t.TempDir(), filepath.Join(root, "etc/app")))
		}, "/etc/app is a symbolic link"},
		{"missing", func(t *testing.T, root string) {
			require.NoError(t, os.RemoveAll(filepath.Join(root, "etc/app")))
		}, "the directory /etc/app does not exist"},
		{"a file", func(t *testing.T, root string) {
			require.NoError(t, os.RemoveAll(filepath.Join(root, "etc/app")))
			require.NoError(t, os.WriteFile(filepath.Join(root, "etc/app"), nil, 0o644))
		}, "/etc/app exists and is not a directory"},
		{"untrusted", func(t *testing.T, root string) {
			require.NoError(t, os.Chown(filepath.Join(root, "etc"), 2, 0))
		}, "/etc (owner uid 2, group gid 0, mode 0755) is owned by uid 2"},
		{"trusted", func(t *testing.T, root string) {
			require.NoError(t, os.Chown(filepath.Join(root, "etc/app"), 1, 1))
			require.NoError(t, os.Chmod(filepath.Join(root, "etc/app"), 0o770|os.ModeSetgid))
		}, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			root := layOut(t, nil)
			c.arrange(t, root)
			d, err := openDir(root, w, File{})
			if c.err == "" {
				require.NoError(t, err)
				assert.Equal(t, "/etc/app", d.path)
				d.close()
				return
			}
			assert.ErrorContains(t, err, `config "site" (/etc/app/site.conf): `+c.err)
		})
	}
}

// A write and a removal report when the content was in place (files_placed: a process
// reloaded or started after it runs with it), read after the move; a mode change moves no
// content and reports none.
func TestFilesPlacedIsReadAfterTheMove(t *testing.T) {
	needsRoot(t)
	at := stamp.Stamp{BootID: "b", Mono: 42}
	for _, tc := range []struct {
		name   string
		cfg    Config
		placed bool
	}{
		{"a write", Config{Name: "site", Path: confPath, Content: "new\n", Mode: 0o644}, true},
		{"a removal", Config{Name: "site", Path: confPath, Absent: true}, true},
		{"a mode change", Config{Name: "site", Path: confPath, Content: "old\n", Mode: 0o600}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := layOut(t, &onDisk{content: "old\n", mode: 0o644})
			moved := false
			d := Deps{Root: root, BeforeReplace: func() error { moved = true; return nil }}
			d.Now = func() (stamp.Stamp, error) {
				assert.Equal(t, tc.placed, moved, "read after the content moved")
				return at, nil
			}
			plan, err := d.Plan(context.Background(), tc.cfg)
			require.NoError(t, err)
			res, err := d.Apply(context.Background(), plan)
			require.NoError(t, err)
			require.True(t, res.Changed)
			if tc.placed {
				assert.Equal(t, &at, res.FilesPlaced)
			} else {
				assert.Nil(t, res.FilesPlaced)
			}
		})
	}
}
