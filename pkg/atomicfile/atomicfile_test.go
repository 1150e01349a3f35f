package atomicfile

import (
	"os"
	"path/filepath"
	"testing"

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
