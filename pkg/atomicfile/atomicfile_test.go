package atomicfile

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestWriteReplacesWithModeAndLeavesNoTemporaryFiles(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "unit.conf")
	require.NoError(t, os.WriteFile(p, []byte("old"), 0o644))
	for _, mode := range []os.FileMode{0o600, 0o640, 0o644} {
		require.NoError(t, Write(p, []byte("new"), Options{Mode: mode, UID: -1, GID: -1}))
		fi, err := os.Stat(p)
		require.NoError(t, err)
		require.Equal(t, mode, fi.Mode().Perm())
		got, _ := os.ReadFile(p)
		require.Equal(t, "new", string(got))
	}
	entries, _ := os.ReadDir(dir)
	require.Len(t, entries, 1, "temporary files left behind")
}

func TestWriteFailureLeavesOldFile(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "missing-dir", "x")
	require.Error(t, Write(p, []byte("x"), Options{Mode: 0o644, UID: -1, GID: -1}))
}

func TestRemoveAbsentIsFine(t *testing.T) {
	require.NoError(t, Remove(filepath.Join(t.TempDir(), "nope")))
}

func TestRemoveStaleTakesOnlyThisPathsTemporaryFiles(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "10.conf")
	require.NoError(t, os.WriteFile(p, []byte("current"), 0o644))
	// What a Write killed before its rename leaves: the same pattern, through CreateTemp.
	var stale []string
	for i := 0; i < 3; i++ {
		f, err := os.CreateTemp(dir, tempPrefix(p)+"*")
		require.NoError(t, err)
		require.NoError(t, f.Close())
		stale = append(stale, filepath.Base(f.Name()))
	}
	outside := filepath.Join(t.TempDir(), "victim")
	require.NoError(t, os.WriteFile(outside, []byte("keep"), 0o644))
	keep := map[string]func(string) error{
		".10.conf.richt-":        touch, // no random part
		".10.conf.richt-12x":     touch, // not Write's random part
		".10.conf.richt-1.bak":   touch,
		".110.conf.richt-1":      touch, // another path's temporary file
		".0.conf.richt-1":        touch,
		"10.conf.richt-1":        touch, // not hidden
		".10.conf.richt-77":      func(p string) error { return os.Symlink(outside, p) },
		".10.conf.richt-78":      func(p string) error { return os.Mkdir(p, 0o755) },
		"20.conf":                touch,
		".10.conf.richt-9.richt": touch,
	}
	for name, mk := range keep {
		require.NoError(t, mk(filepath.Join(dir, name)), name)
	}

	removed, err := RemoveStale(p)
	require.NoError(t, err)
	require.ElementsMatch(t, stale, removed)
	for name := range keep {
		_, err := os.Lstat(filepath.Join(dir, name))
		require.NoError(t, err, "%s must stay", name)
	}
	got, _ := os.ReadFile(p)
	require.Equal(t, "current", string(got))
	got, _ = os.ReadFile(outside)
	require.Equal(t, "keep", string(got), "a link is never followed")

	removed, err = RemoveStale(p)
	require.NoError(t, err)
	require.Empty(t, removed, "nothing left the second time")
}

func TestRemoveStaleMissingDirectoryIsFine(t *testing.T) {
	removed, err := RemoveStale(filepath.Join(t.TempDir(), "gone.d", "x.conf"))
	require.NoError(t, err)
	require.Empty(t, removed)
}

func TestWriteFailureNamesPathAndKeepsOldContent(t *testing.T) {
	dir := t.TempDir()
	// A non-empty directory in the way makes the rename fail after the temporary file
	// was created and written: the latest point at which the target is still unchanged.
	p := filepath.Join(dir, "unit.conf")
	require.NoError(t, os.Mkdir(p, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(p, "old"), []byte("old"), 0o644))
	err := Write(p, []byte("new"), Options{Mode: 0o644, UID: -1, GID: -1})
	require.Error(t, err)
	require.Contains(t, err.Error(), p+" not replaced (unchanged)")
	got, err := os.ReadFile(filepath.Join(p, "old"))
	require.NoError(t, err)
	require.Equal(t, "old", string(got))
	entries, _ := os.ReadDir(dir)
	require.Len(t, entries, 1, "temporary file removed after the failure")
}

func touch(p string) error { return os.WriteFile(p, nil, 0o644) }

func TestStaleNamesWithoutRemoving(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "demo.conf")
	stale := filepath.Join(dir, tempPrefix(path)+"123")
	require.NoError(t, os.WriteFile(stale, []byte("half"), 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "other.conf"), []byte("x"), 0o644))

	names, err := Stale(path)
	require.NoError(t, err)
	assert.Equal(t, []string{filepath.Base(stale)}, names)
	assert.FileExists(t, stale, "Stale only names")

	names, err = RemoveStale(path)
	require.NoError(t, err)
	assert.Equal(t, []string{filepath.Base(stale)}, names)
	assert.NoFileExists(t, stale)
	names, err = Stale(path)
	require.NoError(t, err)
	assert.Empty(t, names)
}

func TestWriteSaysWhetherItReplaced(t *testing.T) {
	dir := t.TempDir()
	// A directory that cannot hold the temporary file: nothing replaced.
	err := Write(filepath.Join(dir, "missing", "demo.conf"), []byte("x"), Options{Mode: 0o644, UID: -1, GID: -1})
	require.Error(t, err)
	assert.ErrorIs(t, err, ErrNotReplaced)
	assert.Contains(t, err.Error(), "demo.conf not replaced (unchanged): ")

	require.NoError(t, Write(filepath.Join(dir, "demo.conf"), []byte("x"), Options{Mode: 0o644, UID: -1, GID: -1}))
}

// Create leaves path as it was until Replace; Discard leaves nothing behind.
func TestCreateReplacesOnlyOnReplace(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "site.conf")
	require.NoError(t, os.WriteFile(p, []byte("old"), 0o644))
	tmp, err := Create(p, []byte("new"), Options{Mode: 0o600, UID: -1, GID: -1})
	require.NoError(t, err)
	got, _ := os.ReadFile(p)
	require.Equal(t, "old", string(got), "not replaced before Replace")
	got, _ = os.ReadFile(tmp.Name())
	require.Equal(t, "new", string(got))
	stale, err := Stale(p)
	require.NoError(t, err)
	require.Equal(t, []string{filepath.Base(tmp.Name())}, stale, "named as Write's temporary files are")
	require.NoError(t, tmp.Discard())
	entries, _ := os.ReadDir(dir)
	require.Len(t, entries, 1, "discarded")

	tmp, err = Create(p, []byte("new"), Options{Mode: 0o600, UID: -1, GID: -1})
	require.NoError(t, err)
	require.NoError(t, tmp.Replace())
	got, _ = os.ReadFile(p)
	require.Equal(t, "new", string(got))
	fi, err := os.Stat(p)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), fi.Mode().Perm())
	entries, _ = os.ReadDir(dir)
	require.Len(t, entries, 1)
}
