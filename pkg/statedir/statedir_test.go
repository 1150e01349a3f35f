package statedir

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestReadRecord(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("chowns files")
	}
	dir := t.TempDir()
	require.NoError(t, os.Chmod(dir, 0o755))
	write := func(name string, mode os.FileMode, uid int) {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, []byte("{}"), mode))
		require.NoError(t, os.Chmod(p, mode))
		require.NoError(t, os.Chown(p, uid, 0))
	}
	write("good", 0o644, 0)
	write("loose", 0o666, 0)
	write("foreign", 0o644, 65534)
	require.NoError(t, os.Symlink(filepath.Join(dir, "good"), filepath.Join(dir, "link")))

	data, err := ReadRecord(dir, "good")
	require.NoError(t, err)
	assert.Equal(t, "{}", string(data))
	for name, want := range map[string]string{"loose": "writable by group or others", "foreign": "owned by uid 65534", "link": "symbolic link"} {
		_, err := ReadRecord(dir, name)
		assert.ErrorIs(t, err, ErrInsecure, name)
		assert.ErrorContains(t, err, want, name)
	}
	_, err = ReadRecord(dir, "missing")
	assert.True(t, errors.Is(err, os.ErrNotExist))

	require.NoError(t, os.Chmod(dir, 0o777))
	_, err = ReadRecord(dir, "good")
	assert.ErrorIs(t, err, ErrInsecure, "a directory others can write is no place for records")
}

func TestCheckAncestors(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("chowns directories")
	}
	base := t.TempDir()
	require.NoError(t, os.Chmod(base, 0o755))
	open := filepath.Join(base, "open")
	require.NoError(t, os.Mkdir(open, 0o777))
	require.NoError(t, os.Chmod(open, 0o777))
	require.NoError(t, os.MkdirAll(filepath.Join(open, "richt-1000", "lock"), 0o700))

	err := CheckAncestors(filepath.Join(open, "richt-1000", "lock"))
	assert.ErrorContains(t, err, "group or others can replace what lies below it")

	require.NoError(t, os.Chmod(open, 0o777|os.ModeSticky)) // as /tmp
	assert.NoError(t, CheckAncestors(filepath.Join(open, "richt-1000", "lock")))

	require.NoError(t, os.Chown(filepath.Join(open, "richt-1000"), 65534, 65534))
	err = CheckAncestors(filepath.Join(open, "richt-1000", "lock"))
	assert.ErrorContains(t, err, "owned by uid 65534")
}
