package safefile

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestLstatAndStat(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "conf.d")
	require.NoError(t, os.Mkdir(dir, 0o755))
	require.NoError(t, os.Chmod(dir, 0o775))
	link := filepath.Join(root, "link")
	require.NoError(t, os.Symlink(dir, link))
	file := filepath.Join(root, "file")
	require.NoError(t, os.WriteFile(file, nil, 0o644))

	d, err := Lstat(filepath.Join(root, "missing"), "/missing")
	require.NoError(t, err)
	assert.Equal(t, Dir{Path: "/missing"}, d)

	d, err = Lstat(dir, "/conf.d")
	require.NoError(t, err)
	assert.True(t, d.Exists)
	assert.False(t, d.Link)
	assert.Equal(t, os.FileMode(0o775), d.Mode)
	assert.Equal(t, os.Geteuid(), d.UID)
	assert.Contains(t, d.Insecure(), "writable by group or others (mode 0775)")

	d, err = Lstat(link, "/link")
	require.NoError(t, err)
	assert.Equal(t, Dir{Path: "/link", Link: true}, d, "a link is not read through")
	d, err = Stat(link, "/link")
	require.NoError(t, err)
	assert.True(t, d.Link && d.Exists)
	assert.Equal(t, os.FileMode(0o775), d.Mode, "what the link leads to")

	_, err = Lstat(file, "/file")
	assert.ErrorContains(t, err, "/file exists and is not a directory")
}

func TestInsecure(t *testing.T) {
	assert.Empty(t, Dir{Mode: 0o755}.Insecure())
	assert.Empty(t, Dir{Mode: 0o1755}.Insecure())
	assert.Equal(t, "owned by uid 1000", Dir{Mode: 0o755, UID: 1000}.Insecure())
	assert.Equal(t, "owned by uid 7 and writable by group or others (mode 0757)", Dir{Mode: 0o757, UID: 7}.Insecure())
	assert.Equal(t, "writable by group or others (mode 1777)", Dir{Mode: 0o777 | os.ModeSticky}.Insecure())
}

func TestReadFileRefusesALink(t *testing.T) {
	root := t.TempDir()
	target := filepath.Join(root, "target")
	require.NoError(t, os.WriteFile(target, []byte("x"), 0o600))
	link := filepath.Join(root, "link")
	require.NoError(t, os.Symlink(target, link))
	_, err := ReadFile(link)
	assert.ErrorContains(t, err, "is not a regular file")
	f, err := ReadFile(target)
	require.NoError(t, err)
	assert.Equal(t, File{Exists: true, Content: []byte("x"), Mode: 0o600, UID: os.Geteuid(), GID: os.Getegid()}, f)
	f, err = ReadFile(filepath.Join(root, "none"))
	require.NoError(t, err)
	assert.False(t, f.Exists)
}

func TestDiffHidesSensitiveContent(t *testing.T) {
	d := Diff("/p", File{Exists: true, Content: []byte("old-secret")}, File{Exists: true, Content: []byte("new-secret"), Mode: 0o600}, true)
	assert.NotContains(t, d.Before+d.After, "secret")
	assert.Contains(t, d.After, "# mode 0600, owner 0, group 0\n# content hidden: sensitive\n# (content changed)\n")
	d = Diff("/p", File{}, File{Exists: true, Content: []byte("a\n"), Mode: 0o644}, false)
	assert.Equal(t, "", d.Before)
	assert.Equal(t, "# mode 0644, owner 0, group 0\na\n", d.After)
}

// An owner or group no source knows is its own error, which a caller can tell from any
// other failure (the service defers a config whose owner a package creates).
func TestAnUnknownIDIsItsOwnError(t *testing.T) {
	ctx := context.Background()
	_, err := UID(ctx, nil, "owner", "richt-no-such-user")
	assert.ErrorIs(t, err, ErrUnknownID)
	assert.ErrorContains(t, err, `owner: "richt-no-such-user" is not a known name`)
	_, err = GID(ctx, nil, "group", "richt-no-such-group")
	assert.ErrorIs(t, err, ErrUnknownID)
	uid, err := UID(ctx, nil, "owner", "root")
	assert.NoError(t, err)
	assert.Equal(t, 0, uid)
}

// A config's directory is trusted when only root and the config's owner can change what
// it holds: owned by root or the owner, writable by group only for group root or, in a
// directory the config's non-root owner owns, the config's group (a group that could
// replace a root-owned config would be a root escalation, as CheckMode says of the file),
// never writable by others (the sticky bit does not keep them from adding files). The
// config is owned by uid 101, group 102 (Debian's redis), or by root, group 102.
func TestUntrusted(t *testing.T) {
	const refusedGroup = "writable by group gid 102, which only a directory the config's non-root owner owns may be"
	for _, c := range []struct {
		name string
		dir  Dir
		uid  int
		why  string
	}{
		{"root's, 0755", Dir{Mode: 0o755}, 101, ""},
		{"the owner's, 0750 (EL's /etc/redis)", Dir{Mode: 0o750, UID: 101}, 101, ""},
		{"the owner's, group-writable by its group, setgid (Debian's /etc/redis)", Dir{Mode: 0o2770 | os.ModeSetgid, UID: 101, GID: 102}, 101, ""},
		{"root's, group-writable by group root", Dir{Mode: 0o775}, 101, ""},
		{"root's, group-writable by group root, root's config", Dir{Mode: 0o775}, 0, ""},
		{"root's, group-writable by the config's group, root's config", Dir{Mode: 0o775, GID: 102}, 0, refusedGroup},
		{"root's, group-writable by the config's group", Dir{Mode: 0o775, GID: 102}, 101, refusedGroup},
		{"the owner's, group-writable by another group", Dir{Mode: 0o775, UID: 101, GID: 7}, 101, "writable by group gid 7"},
		{"another user's", Dir{Mode: 0o755, UID: 7}, 101, "owned by uid 7"},
		{"group-writable by another group", Dir{Mode: 0o775, GID: 7}, 101, "writable by group gid 7"},
		{"writable by others", Dir{Mode: 0o757, UID: 101, GID: 102}, 101, "writable by others"},
		{"sticky, writable by others", Dir{Mode: 0o777 | os.ModeSticky}, 101, "writable by others (the sticky bit does not keep them from adding files)"},
		{"everything wrong", Dir{Mode: 0o777, UID: 7, GID: 7}, 101, "owned by uid 7 and writable by group gid 7 and writable by others"},
	} {
		t.Run(c.name, func(t *testing.T) {
			assert.Equal(t, c.why, c.dir.Untrusted(c.uid, 102))
		})
	}
}
