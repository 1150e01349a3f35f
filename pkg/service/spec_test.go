package service

import (
	"os"
	"testing"
	"time"

	"github.com/richt/services/pkg/ansible"
	"github.com/richt/services/pkg/lifecycle"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestConfigModeDefault: a config without a mode gets the Spec's default, 0644 (declared
// in the Spec and documented from it), and a given mode is kept.
func TestConfigModeDefault(t *testing.T) {
	for _, c := range []struct {
		mode any // nil: not given
		want os.FileMode
	}{
		{nil, 0o644},
		{"0640", 0o640},
		{256.0, 0o400},
	} {
		cfg := map[string]any{"name": "main", "path": "/etc/demo.conf", "content": "x\n"}
		if c.mode != nil {
			cfg["mode"] = c.mode
		}
		_, parsed, err := Spec().ValidateParse(map[string]any{"name": "demo", "configs": []any{cfg}})
		require.NoError(t, err, "mode %v", c.mode)
		task, ok := parsed.(Task)
		require.True(t, ok, "%T", parsed)
		require.Len(t, task.Configs, 1)
		assert.Equal(t, c.want, task.Configs[0].Mode, "mode %v", c.mode)
	}
}

// TestProcessParsedOnce: a process's arguments are validated and parsed into
// systemd_lifecycle's typed request when the service parses its own, and at its turn only
// the triggers are added (triggered): what the parse made stays.
func TestProcessParsedOnce(t *testing.T) {
	proc := map[string]any{"unit": "demo", "settle": "2s", "health": map[string]any{"tcp": "127.0.0.1:80"}, "timeout": "7s"}
	_, parsed, err := Spec().ValidateParse(map[string]any{"name": "demo", "processes": []any{proc}})
	require.NoError(t, err)
	task := parsed.(Task)
	require.Len(t, task.Order, 1)
	req, err := ansible.ParsedArgs[lifecycle.Task](task.Order[0].call)
	require.NoError(t, err)
	assert.Equal(t, "demo.service", req.Want.Unit)
	assert.Equal(t, 7*time.Second, req.Limit)
	require.NotNil(t, req.Want.Settle)
	assert.Equal(t, 2*time.Second, *req.Want.Settle)
	require.NotNil(t, req.Want.Health)
	assert.False(t, req.Want.ReloadOn)

	call, err := triggered(task.Order[0].call, []any{true}, []any{false}, nil)
	require.NoError(t, err)
	got, err := ansible.ParsedArgs[lifecycle.Task](call)
	require.NoError(t, err)
	assert.Equal(t, req.Want.Health, got.Want.Health, "kept as parsed")
	assert.True(t, got.Want.ReloadOn, "a reload_on given asks for a reload-capable unit")
	assert.Len(t, got.Triggers.Restart, 1)
	assert.Len(t, got.Triggers.Reload, 1)

	// Absent: the removal's arguments (stopped, disabled, a missing unit fine).
	_, parsed, err = Spec().ValidateParse(map[string]any{"name": "demo", "state": "absent", "processes": []any{proc}})
	require.NoError(t, err)
	req, err = ansible.ParsedArgs[lifecycle.Task](parsed.(Task).Order[0].call)
	require.NoError(t, err)
	assert.False(t, req.Want.Running)
	assert.True(t, req.Want.AllowMissing)
	require.NotNil(t, req.Want.Enabled)
	assert.False(t, *req.Want.Enabled)
}
