package service

import (
	"os"
	"testing"

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
