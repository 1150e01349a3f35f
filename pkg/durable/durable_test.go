package durable

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestManagerSyncRecord(t *testing.T) {
	s := &Store{Dir: t.TempDir() + "/richt"}
	due, _, err := s.ManagerSyncDue()
	require.NoError(t, err)
	require.False(t, due)
	require.NoError(t, s.MarkManagerSyncDue("rpm_exact demo: unit\nfiles changed"))
	due, why, err := s.ManagerSyncDue()
	require.NoError(t, err)
	require.True(t, due)
	require.Contains(t, why, "rpm_exact demo: unit files changed")
	require.NoError(t, s.ClearManagerSync())
	require.NoError(t, s.ClearManagerSync(), "clearing twice is fine")
	due, _, _ = s.ManagerSyncDue()
	require.False(t, due)
}
