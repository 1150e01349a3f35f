package configfile

import (
	"context"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/richt/services/pkg/atomicfile"
)

// daemonsDir lays out the config over "old\n" in a directory its owner (uid and gid 1)
// can write, as Debian's /etc/redis (redis:redis 2770), and returns the root.
func daemonsDir(t *testing.T) string {
	t.Helper()
	root := layOut(t, &onDisk{content: "old\n", mode: 0o640, uid: 1, gid: 1})
	dir := filepath.Join(root, "etc/app")
	require.NoError(t, os.Chown(dir, 1, 1))
	require.NoError(t, os.Chmod(dir, 0o770|os.ModeSetgid))
	return root
}

// daemonsConfig is the config of daemonsDir: the daemon's own (1:1, 0640), validated.
func daemonsConfig(validate string) Config {
	c := site(validate)
	c.Owner, c.Group, c.Mode = "1", "1", 0o640
	return c
}

// tempOf is the one temporary file beside the config.
func tempOf(t *testing.T, root string) string {
	t.Helper()
	tmps, err := filepath.Glob(filepath.Join(root, "etc/app/.site.conf.richt-*"))
	require.NoError(t, err)
	require.Len(t, tmps, 1)
	return tmps[0]
}

// owner is the owner, group and mode of p, not following a link.
func owner(t *testing.T, p string) []any {
	t.Helper()
	fi, err := os.Lstat(p)
	require.NoError(t, err)
	st := fi.Sys().(*syscall.Stat_t)
	return []any{int(st.Uid), int(st.Gid), fi.Mode()}
}

// The validator runs as root; the directory the temporary file is in is the daemon's
// user's to write. Whoever writes it can exchange the temporary file's name with a file of
// its own, or with a link to a file only root may read (renameat2 RENAME_EXCHANGE, no
// moment without a file at the name), while the validator reads: the validator must only
// ever see the content the task gives, and that content is what is installed.
func TestTheValidatorNeverReadsWhatTheDirectorysWriterCanSwap(t *testing.T) {
	needsRoot(t)
	root := daemonsDir(t)
	dir := filepath.Join(root, "etc/app")
	secret := filepath.Join(t.TempDir(), "shadow")
	require.NoError(t, os.WriteFile(secret, []byte("root:$6$secret\n"), 0o600))
	evil := filepath.Join(dir, "evil")
	require.NoError(t, os.WriteFile(evil, []byte("load_module /home/daemon/evil.so;\n"), 0o644))
	link := filepath.Join(dir, "link")
	require.NoError(t, os.Symlink(secret, link))
	exchange := func(a, b string) {
		require.NoError(t, unix.Renameat2(unix.AT_FDCWD, a, unix.AT_FDCWD, b, unix.RENAME_EXCHANGE))
	}
	var seen []string
	validator := runnerFunc(func(argv []string) int {
		tmp := tempOf(t, root)
		for _, other := range []string{evil, link} {
			exchange(tmp, other)
			data, err := os.ReadFile(argv[1])
			require.NoError(t, err)
			seen = append(seen, string(data))
			exchange(tmp, other)
		}
		return 0
	})
	d := Deps{Runner: validator, Root: root}
	plan, err := d.Plan(context.Background(), daemonsConfig("check %s"))
	require.NoError(t, err)
	_, err = d.Apply(context.Background(), plan)
	require.NoError(t, err)
	assert.Equal(t, []string{"listen 80\n", "listen 80\n"}, seen, "the validator read only the task's content")
	got, err := os.ReadFile(filepath.Join(root, confPath))
	require.NoError(t, err)
	assert.Equal(t, "listen 80\n", string(got))
	entries, err := os.ReadDir(filepath.Join(root, ValidateDir))
	require.NoError(t, err)
	assert.Empty(t, entries, "the validator's copy is removed")
}

// The temporary file is root's alone (0600) until it is at the config's path: its owner,
// who may write it afterwards, cannot rewrite the validated bytes before they are
// installed. It gets its final owner and mode only then, through the descriptor held.
func TestTheOwnerGetsTheFileOnlyOnceItIsInPlace(t *testing.T) {
	needsRoot(t)
	root := daemonsDir(t)
	var before []any
	d := Deps{Runner: runnerFunc(func([]string) int { return 0 }), Root: root,
		BeforeReplace: func() error { before = owner(t, tempOf(t, root)); return nil }}
	plan, err := d.Plan(context.Background(), daemonsConfig("check %s"))
	require.NoError(t, err)
	_, err = d.Apply(context.Background(), plan)
	require.NoError(t, err)
	// The group is the setgid directory's (1): with mode 0600 it grants nothing.
	assert.Equal(t, []any{0, 1, os.FileMode(0o600)}, before, "root's alone right before the rename")
	assert.Equal(t, []any{1, 1, os.FileMode(0o640)}, owner(t, filepath.Join(root, confPath)), "the owner's once in place")
}

// What is renamed into place is read back through the descriptor right before the
// rename: content that is no longer the content validated is not installed.
func TestTheContentIsReadBackRightBeforeTheRename(t *testing.T) {
	needsRoot(t)
	root := daemonsDir(t)
	d := Deps{Runner: runnerFunc(func([]string) int { return 0 }), Root: root,
		BeforeReplace: func() error {
			return os.WriteFile(tempOf(t, root), []byte("listen 80\nrequirepass \"\"\n"), 0o600)
		}}
	plan, err := d.Plan(context.Background(), daemonsConfig("check %s"))
	require.NoError(t, err)
	res, err := d.Apply(context.Background(), plan)
	require.Error(t, err)
	assert.Regexp(t, `/etc/app/\.site\.conf\.richt-[0-9]+ no longer holds the content validated`, err.Error())
	assert.ErrorIs(t, err, atomicfile.ErrNotReplaced)
	assert.False(t, res.Changed)
	unchanged(t, root)
}

// A file the directory's writer puts at the config's path right as the temporary file is
// renamed there (it swapped names between the last check and the rename, or just after)
// fails the write loudly, and the file written is not handed to the owner: root's
// alone, it gives the owner nothing.
func TestAFileSwappedInAtTheRenameFailsLoudly(t *testing.T) {
	needsRoot(t)
	root := daemonsDir(t)
	dir := filepath.Join(root, "etc/app")
	planted := filepath.Join(dir, "planted")
	require.NoError(t, os.WriteFile(planted, []byte("daemon's own\n"), 0o644))
	require.NoError(t, os.Chown(planted, 1, 1))
	var ours string
	d := Deps{Runner: runnerFunc(func([]string) int { return 0 }), Root: root,
		renamed: func() {
			ours = filepath.Join(dir, "ours")
			require.NoError(t, os.Rename(filepath.Join(root, confPath), ours))
			require.NoError(t, os.Rename(planted, filepath.Join(root, confPath)))
		}}
	plan, err := d.Plan(context.Background(), daemonsConfig("check %s"))
	require.NoError(t, err)
	res, err := d.Apply(context.Background(), plan)
	require.Error(t, err)
	assert.ErrorContains(t, err, `config "site" (/etc/app/site.conf): /etc/app/site.conf was replaced by another file right as it was renamed into place (whoever can write /etc/app can do that)`)
	assert.ErrorContains(t, err, "was not handed to its owner")
	assert.NotErrorIs(t, err, atomicfile.ErrNotReplaced, "the path changed")
	assert.True(t, res.Changed)
	assert.Equal(t, []any{0, 1, os.FileMode(0o600)}, owner(t, ours), "the file written stays root's (the setgid directory's group, 0600)")
}

// The directory the validator's copy is made in is root's alone: one another user owns,
// or a link there, fails the validation before the validator runs, replacing nothing.
func TestTheValidatorsDirectoryIsRootsAlone(t *testing.T) {
	needsRoot(t)
	for _, c := range []struct {
		name    string
		arrange func(t *testing.T, dir string)
		err     string
	}{
		{"another user's", func(t *testing.T, dir string) {
			require.NoError(t, os.MkdirAll(dir, 0o700))
			require.NoError(t, os.Chown(dir, 1, 1))
		}, "is owned by uid 1"},
		{"writable by others", func(t *testing.T, dir string) {
			require.NoError(t, os.MkdirAll(dir, 0o700))
			require.NoError(t, os.Chmod(dir, 0o777))
		}, "writable by group or others"},
		{"a link", func(t *testing.T, dir string) {
			require.NoError(t, os.MkdirAll(filepath.Dir(dir), 0o755))
			require.NoError(t, os.Symlink(t.TempDir(), dir))
		}, "is not a directory (L---------)"},
		{"a directory above it another user's", func(t *testing.T, dir string) {
			require.NoError(t, os.MkdirAll(dir, 0o700))
			require.NoError(t, os.Chown(filepath.Dir(dir), 1, 1))
		}, "is owned by uid 1, not by root"},
	} {
		t.Run(c.name, func(t *testing.T) {
			root := layOut(t, &onDisk{content: "old\n", mode: 0o644})
			c.arrange(t, filepath.Join(root, ValidateDir))
			ran := false
			d := Deps{Runner: runnerFunc(func([]string) int { ran = true; return 0 }), Root: root}
			plan, err := d.Plan(context.Background(), site("check %s"))
			require.NoError(t, err)
			res, err := d.Apply(context.Background(), plan)
			require.Error(t, err)
			assert.ErrorContains(t, err, "prepare the validator's copy")
			assert.ErrorContains(t, err, c.err)
			assert.ErrorIs(t, err, ErrValidation)
			assert.False(t, ran, "no validator run")
			assert.False(t, res.Changed)
			unchanged(t, root)
		})
	}
}
