package rpmexact

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// When a transaction's unit files were all in place is told only when every changed entry
// is still there to examine and none went away.
func TestUnitsPlaced(t *testing.T) {
	dir := t.TempDir()
	kept := filepath.Join(dir, "kept.service")
	added := filepath.Join(dir, "added.service")
	require.NoError(t, os.WriteFile(kept, []byte("[Service]\n"), 0o644))
	before := fingerprintUnits([]string{dir})
	require.NoError(t, os.WriteFile(added, []byte("[Service]\n"), 0o644))
	after := fingerprintUnits([]string{dir})

	got := unitsPlaced(before, after, os.Lstat)
	assert.False(t, got.IsZero(), "an added unit file: placed when it was written")

	assert.True(t, unitsPlaced(after, before, os.Lstat).IsZero(), "a removed unit file: cannot be told")
	assert.True(t, unitsPlaced(before, before, os.Lstat).IsZero(), "nothing changed: nothing to tell")
	gone := func(string) (os.FileInfo, error) { return nil, os.ErrNotExist }
	assert.True(t, unitsPlaced(before, after, gone).IsZero(), "a changed entry gone since")
	unreadable := map[string]string{dir: "unreadable: permission denied"}
	assert.True(t, unitsPlaced(unreadable, after, os.Lstat).IsZero(), "an unreadable directory")
}
