package contract_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/richt/services/pkg/contract"
)

// decoded is v as a later task gets it: JSON, decoded into map[string]any.
func decoded(t *testing.T, v any) map[string]any {
	t.Helper()
	data, err := json.Marshal(v)
	require.NoError(t, err)
	var m map[string]any
	require.NoError(t, json.Unmarshal(data, &m))
	return m
}

func stamped(c contract.Change, t time.Time) contract.Change {
	c.Stamp(t)
	return c
}

func TestRoundTrip(t *testing.T) {
	at := time.Date(2025, 3, 4, 5, 6, 7, 890, time.FixedZone("CET", 3600))
	cases := []struct {
		name string
		c    contract.Change
		keys []string
	}{
		{"zero: daemon_reload written as none, no changed_at", contract.Change{},
			[]string{"package_changed", "unit_files_changed", "daemon_reload"}},
		{"package and unit files, reload needed", stamped(contract.Change{PackageChanged: true, UnitFilesChanged: true, DaemonReload: contract.ReloadNeeded}, at),
			[]string{"package_changed", "unit_files_changed", "daemon_reload", "changed_at"}},
		{"drop-in, reload performed", stamped(contract.Change{UnitFilesChanged: true, DaemonReload: contract.ReloadPerformed}, at),
			[]string{"package_changed", "unit_files_changed", "daemon_reload", "changed_at"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m := decoded(t, c.c)
			keys := make([]string, 0, len(m))
			for k := range m {
				keys = append(keys, k)
			}
			assert.ElementsMatch(t, c.keys, keys)
			want := c.c
			if want.DaemonReload == "" {
				want.DaemonReload = contract.ReloadNone
			}
			assert.Equal(t, want, contract.Read(m))
		})
	}
}

func TestStamp(t *testing.T) {
	at := time.Date(2025, 3, 4, 5, 6, 7, 8, time.FixedZone("CET", 3600))
	var c contract.Change
	_, ok := c.When()
	assert.False(t, ok, "no stamp")
	c.Stamp(at)
	assert.Equal(t, "2025-03-04T04:06:07.000000008Z", c.ChangedAt, "RFC 3339, nanoseconds, UTC")
	got, ok := c.When()
	require.True(t, ok)
	assert.True(t, got.Equal(at))
	assert.Equal(t, time.UTC, got.Location())
}

func TestReadStrict(t *testing.T) {
	cases := []struct {
		name   string
		result map[string]any
		want   contract.Change
	}{
		{"nil result", nil, contract.Change{}},
		{"no keys of the contract", map[string]any{"changed": true, "operation": "update", "path": "/etc/systemd/system/x.service"}, contract.Change{}},
		{"strings are not booleans", map[string]any{"package_changed": "true", "unit_files_changed": "yes"}, contract.Change{}},
		{"numbers are not booleans", map[string]any{"package_changed": 1.0, "unit_files_changed": 1.0}, contract.Change{}},
		{"daemon_reload of the wrong type", map[string]any{"daemon_reload": true}, contract.Change{}},
		{"daemon_reload not a value of the contract", map[string]any{"daemon_reload": "yes"}, contract.Change{}},
		{"daemon_reload as a list", map[string]any{"daemon_reload": []any{"needed"}}, contract.Change{}},
		{"changed_at not a time", map[string]any{"changed_at": "yesterday"}, contract.Change{}},
		{"changed_at of the wrong type", map[string]any{"changed_at": 1741064767.0}, contract.Change{}},
		{"changed_at in another zone is read as UTC",
			map[string]any{"changed_at": "2025-03-04T05:06:07.5+01:00"},
			contract.Change{ChangedAt: "2025-03-04T04:06:07.500000000Z"}},
		{"each key on its own", map[string]any{"package_changed": true, "daemon_reload": "needed", "unit_files_changed": nil},
			contract.Change{PackageChanged: true, DaemonReload: contract.ReloadNeeded}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			assert.NotPanics(t, func() { assert.Equal(t, c.want, contract.Read(c.result)) })
		})
	}
}

func TestNeedsManagerSync(t *testing.T) {
	cases := []struct {
		name string
		c    contract.Change
		want bool
	}{
		{"nothing reported", contract.Change{}, false},
		{"package only", contract.Change{PackageChanged: true, DaemonReload: contract.ReloadNone}, false},
		{"rpm_exact: unit files changed, reload needed", contract.Change{PackageChanged: true, UnitFilesChanged: true, DaemonReload: contract.ReloadNeeded}, true},
		{"unit files changed, reload not reported", contract.Change{UnitFilesChanged: true}, true},
		{"unit files changed, reload none", contract.Change{UnitFilesChanged: true, DaemonReload: contract.ReloadNone}, true},
		{"unit_override: drop-in changed, reload performed", contract.Change{UnitFilesChanged: true, DaemonReload: contract.ReloadPerformed}, false},
		{"unit_override with daemon_reload false: needed", contract.Change{UnitFilesChanged: true, DaemonReload: contract.ReloadNeeded}, true},
		{"needed without unit files", contract.Change{DaemonReload: contract.ReloadNeeded}, true},
		{"systemd_lifecycle: reload performed", contract.Change{DaemonReload: contract.ReloadPerformed}, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { assert.Equal(t, c.want, c.c.NeedsManagerSync()) })
	}
}
