package override

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/richt/services/pkg/ansible"
)

// The Spec parses the parameters once, into the Task the handler uses: the normalised unit
// and the path it manages come out of validation, not out of a second parse.
func TestSpecParsesIntoTheTask(t *testing.T) {
	cases := []struct {
		name string
		args map[string]any
		want Task
	}{
		{"drop-in of a unit without suffix", map[string]any{"unit": "demo", "name": "10.conf", "content": "[Service]\n"},
			Task{Unit: "demo.service", Path: "/etc/systemd/system/demo.service.d/10.conf"}},
		{"full unit file, removed", map[string]any{"unit": "demo.socket", "state": "absent"},
			Task{Unit: "demo.socket", Path: "/etc/systemd/system/demo.socket"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, parsed, err := Spec().ValidateParse(c.args)
			require.NoError(t, err)
			task, ok := parsed.(Task)
			require.True(t, ok, "Spec parses into a Task, got %T", parsed)
			assert.Equal(t, c.want.Unit, task.Unit)
			assert.Equal(t, c.want.Path, task.Path)
			assert.Equal(t, c.args["unit"], task.Params.Unit, "the parameters as given")
		})
	}
	// A refusal is still a validation error naming the parameter.
	_, _, err := Spec().ValidateParse(map[string]any{"unit": "demo", "name": "x", "content": "[Service]\n"})
	var verr *ansible.ValidationError
	require.ErrorAs(t, err, &verr)
	assert.Contains(t, err.Error(), `name: "x" must be a file name ending in .conf`)
}
