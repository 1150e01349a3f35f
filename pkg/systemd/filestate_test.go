package systemd

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/richt/services/pkg/runner/runnertest"
)

// systemctl is-enabled as data: the state it prints whatever its exit code, a unit
// without a file as ErrNoUnitFile in both systemd's wordings, anything else an error.
func TestSystemctlUnitFileState(t *testing.T) {
	isEnabled := []string{"systemctl", "is-enabled", "--", "demo.service"}
	cases := []struct {
		name   string
		call   runnertest.Call
		state  string
		noFile bool
		err    string
	}{
		{name: "enabled", call: runnertest.Call{Stdout: "enabled\n"}, state: "enabled"},
		{name: "disabled exits 1", call: runnertest.Call{Stdout: "disabled\n", ExitCode: 1}, state: "disabled"},
		{name: "static", call: runnertest.Call{Stdout: "static\n"}, state: "static"},
		{name: "not-found (systemd 250+)", call: runnertest.Call{Stdout: "not-found\n", ExitCode: 4}, noFile: true},
		{name: "ENOENT (older systemd)", call: runnertest.Call{Stderr: "Failed to get unit file state for demo.service: No such file or directory\n", ExitCode: 1}, noFile: true},
		{name: "other failure", call: runnertest.Call{Stderr: "Failed to connect to bus\n", ExitCode: 1}, err: "Failed to connect to bus"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			call := c.call
			call.Argv = isEnabled
			st, err := Systemctl{Runner: runnertest.New(t, call)}.UnitFileState(context.Background(), "demo.service")
			switch {
			case c.noFile:
				require.ErrorIs(t, err, ErrNoUnitFile)
			case c.err != "":
				require.Error(t, err)
				assert.NotErrorIs(t, err, ErrNoUnitFile)
				assert.Contains(t, err.Error(), c.err)
			default:
				require.NoError(t, err)
				assert.Equal(t, c.state, st)
			}
		})
	}
}

// The user scope asks the user's manager.
func TestSystemctlUnitFileStateUser(t *testing.T) {
	s := runnertest.New(t, runnertest.Call{Argv: []string{"systemctl", "--user", "is-enabled", "--", "demo.service"}, Stdout: "enabled\n"})
	st, err := Systemctl{Runner: s, User: true}.UnitFileState(context.Background(), "demo.service")
	require.NoError(t, err)
	assert.Equal(t, "enabled", st)
}

var _ FileStater = (*Bus)(nil)
var _ FileStater = Systemctl{}
