package durable

import (
	"testing"

	"github.com/stretchr/testify/assert"
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

func TestPending(t *testing.T) {
	s := &Store{Dir: t.TempDir()}
	p, err := s.GetPending("demo.service")
	require.NoError(t, err)
	require.Nil(t, p)
	require.NoError(t, s.SetPending("demo.service", Pending{Reaction: "restart", Triggers: []string{"restart_on[0]"}}))
	p, err = s.GetPending("demo.service")
	require.NoError(t, err)
	require.Equal(t, "restart", p.Reaction)
	require.NoError(t, s.ClearPending("demo.service"))
	p, _ = s.GetPending("demo.service")
	require.Nil(t, p)
	// A directory under /var/lib/richt that cannot be created fails clearly.
	bad := &Store{Dir: "/proc/richt-cannot-exist"}
	require.ErrorContains(t, bad.SetPending("x.service", Pending{Reaction: "reload"}), "create")
}

func TestManagerCheckRecord(t *testing.T) {
	s := &Store{Dir: t.TempDir()}
	_, ok := s.ManagerChecked("dnf", "id1")
	assert.False(t, ok)
	require.NoError(t, s.RecordManagerCheck("dnf", "id1", "4.23.0"))
	require.NoError(t, s.RecordManagerCheck("yum", "id2", "4.23.0"))
	v, ok := s.ManagerChecked("dnf", "id1")
	assert.True(t, ok)
	assert.Equal(t, "4.23.0", v)
	_, ok = s.ManagerChecked("dnf", "id2")
	assert.False(t, ok, "another executable")
	_, ok = s.ManagerChecked("dnf", "")
	assert.False(t, ok, "an unknown identity never matches")
	require.NoError(t, s.RecordManagerCheck("dnf", "id3", "4.24.0"))
	_, ok = s.ManagerChecked("dnf", "id1")
	assert.False(t, ok, "one record per manager")
	_, ok = s.ManagerChecked("yum", "id2")
	assert.True(t, ok)
}
