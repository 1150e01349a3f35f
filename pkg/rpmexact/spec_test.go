package rpmexact

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The Spec parses the parameters once, into the Task the handler uses.
func TestSpecParsesIntoTheTask(t *testing.T) {
	cases := []struct {
		name  string
		args  map[string]any
		names []string
		set   bool
	}{
		{"one package", map[string]any{"name": "demo", "version": "0:1.0-1.noarch"}, []string{"demo"}, false},
		{"a set", map[string]any{"packages": []any{map[string]any{"name": "a"}, map[string]any{"name": "b", "state": "absent"}}, "timeout": "1m"},
			[]string{"a", "b"}, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, parsed, err := Spec().ValidateParse(c.args)
			require.NoError(t, err)
			task, ok := parsed.(Task)
			require.True(t, ok, "Spec parses into a Task, got %T", parsed)
			assert.Equal(t, c.names, task.Want.Names())
			assert.Equal(t, "dnf", task.Want.Manager)
			assert.Equal(t, c.set, task.Set)
			if c.set {
				assert.Equal(t, time.Minute, task.Want.Timeout)
				assert.True(t, task.Want.Entries[1].Absent)
			} else {
				assert.Equal(t, "0:1.0-1.noarch", task.Want.Entries[0].Version.String())
			}
		})
	}
}
