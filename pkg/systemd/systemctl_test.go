package systemd

import (
	"context"
	"github.com/richt/services/pkg/invocation"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/richt/services/pkg/runner/runnertest"
)

// The systemctl backend as data: exact argv in, canned answers out, every call checked.
func TestSystemctlBackend(t *testing.T) {
	// The journal is read from this run's start on: an earlier run's lines are not this
	// failure's.
	started := invocation.Start
	t.Cleanup(func() { invocation.Start = started })
	invocation.Start = time.Unix(1700000000, 500_000_000)
	ctx := context.Background()
	props := "--property=" + strings.Join(Properties, ",")
	noPID := "--property=" + strings.Join(withoutMainPID, ",")
	timerShow := strings.Replace(goodShow, "Id=demo.service", "Id=tick.timer", 1)
	timerShow = strings.Replace(timerShow, "MainPID=42\n", "", 1)

	t.Run("system scope", func(t *testing.T) {
		s := runnertest.New(t,
			runnertest.Call{Argv: []string{"systemctl", "show", props, "--", "demo.service"}, Stdout: goodShow},
			runnertest.Call{Argv: []string{"systemctl", "show", noPID, "--", "tick.timer"}, Stdout: timerShow},
			runnertest.Call{Argv: []string{"systemctl", "daemon-reload"}},
			runnertest.Call{Argv: []string{"systemctl", "restart", "--", "demo.service"}},
			runnertest.Call{Argv: []string{"systemctl", "enable", "--", "demo.service"}},
			runnertest.Call{Argv: []string{"systemctl", "disable", "--", "demo.service"}},
			runnertest.Call{Argv: []string{"systemctl", "mask", "--", "demo.service"}},
			runnertest.Call{Argv: []string{"systemctl", "unmask", "--", "demo.service"}, ExitCode: 1, Stderr: "Failed to unmask\n"},
			runnertest.Call{Argv: []string{"systemctl", "reset-failed", "--", "demo.service"}},
			runnertest.Call{Argv: []string{"journalctl", "--no-pager", "--quiet", "-o", "short-iso", "-n", "3", "--since=@1700000000", "--unit=demo.service"}, Stdout: "a\nb\n"},
		)
		sc := Systemctl{Runner: s}
		p, err := sc.Show(ctx, "demo.service")
		require.NoError(t, err)
		assert.Equal(t, 42, p.MainPID)
		p, err = sc.Show(ctx, "tick.timer")
		require.NoError(t, err, "a timer has no MainPID; it is not asked for")
		assert.Equal(t, 0, p.MainPID)
		require.NoError(t, sc.DaemonReload(ctx))
		require.NoError(t, sc.Job(ctx, "restart", "demo.service"))
		require.NoError(t, sc.SetEnabled(ctx, "demo.service", true))
		require.NoError(t, sc.SetEnabled(ctx, "demo.service", false))
		require.NoError(t, sc.SetMasked(ctx, "demo.service", true))
		err = sc.SetMasked(ctx, "demo.service", false)
		require.ErrorContains(t, err, "systemctl unmask -- demo.service exited 1: Failed to unmask")
		require.NoError(t, sc.ResetFailed(ctx, "demo.service"))
		assert.Equal(t, []string{"a", "b"}, sc.Journal(ctx, "demo.service", 3))
	})

	t.Run("user scope", func(t *testing.T) {
		s := runnertest.New(t,
			runnertest.Call{Argv: []string{"systemctl", "--user", "show", props, "--", "hello.service"}, Stdout: strings.Replace(goodShow, "demo", "hello", 1)},
			runnertest.Call{Argv: []string{"systemctl", "--user", "start", "--", "hello.service"}},
			runnertest.Call{Argv: []string{"journalctl", "--no-pager", "--quiet", "-o", "short-iso", "-n", "5", "--since=@1700000000", "--user-unit=hello.service"}, ExitCode: 1, Stderr: "No journal files were found.\n"},
		)
		sc := Systemctl{Runner: s, User: true}
		_, err := sc.Show(ctx, "hello.service")
		require.NoError(t, err)
		require.NoError(t, sc.Job(ctx, "start", "hello.service"))
		j := sc.Journal(ctx, "hello.service", 5)
		require.Len(t, j, 1)
		assert.Contains(t, j[0], "not available")
	})

	t.Run("a failing show is an error, never a default", func(t *testing.T) {
		s := runnertest.New(t,
			runnertest.Call{Argv: []string{"systemctl", "show", props, "--", "demo.service"}, ExitCode: 1, Stderr: "Failed to connect to bus\n"},
			runnertest.Call{Argv: []string{"systemctl", "show", props, "--", "demo.service"}, Stdout: "Id=demo.service\n"},
		)
		sc := Systemctl{Runner: s}
		_, err := sc.Show(ctx, "demo.service")
		require.ErrorContains(t, err, "systemctl show exited 1")
		_, err = sc.Show(ctx, "demo.service")
		require.ErrorContains(t, err, "did not report property")
	})
}

func TestScopes(t *testing.T) {
	sys := SystemScope()
	assert.False(t, sys.User)
	assert.Equal(t, "/run/systemd/private", sys.Socket)
	assert.Nil(t, sys.Env())
	assert.Equal(t, "/var/lib/richt", sys.Store().Dir)
	u := Scope{User: true, RuntimeDir: "/run/user/1000"}
	assert.Equal(t, map[string]string{"XDG_RUNTIME_DIR": "/run/user/1000", "DBUS_SESSION_BUS_ADDRESS": "unix:path=/run/user/1000/bus"}, u.Env())
}
