package runner

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestExecCollectsBothStreamsAndTheExitCode(t *testing.T) {
	cases := []struct {
		name           string
		script         string
		stdout, stderr string
		code           int
	}{
		{"both streams", `echo out; echo err >&2`, "out\n", "err\n", 0},
		{"nothing written", `true`, "", "", 0},
		{"an exit code is a result", `echo partial; exit 3`, "partial\n", "", 3},
		// More than a pipe holds (64 KiB): the whole stream, not what fit.
		{"large output", `head -c 300000 /dev/zero | tr '\0' x`, strings.Repeat("x", 300000), "", 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res, err := Exec{}.Run(context.Background(), "sh", "-c", c.script)
			require.NoError(t, err)
			assert.Equal(t, c.stdout, res.Stdout)
			assert.Equal(t, c.stderr, res.Stderr)
			assert.Equal(t, c.code, res.ExitCode)
		})
	}
}

func TestExecDeadline(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := Exec{}.Run(ctx, "sleep", "5")
	assert.True(t, errors.Is(err, ErrDeadline), "%v", err)
	assert.Less(t, time.Since(start), 4*time.Second)
}

func TestExecDoesNotWaitForAChildsBackgroundProcess(t *testing.T) {
	// A daemon started by the command keeps its output open; the command's end is the
	// end of the run.
	start := time.Now()
	res, err := Exec{}.Run(context.Background(), "sh", "-c", `sleep 3 & echo started`)
	require.NoError(t, err)
	assert.Equal(t, "started\n", res.Stdout)
	assert.Less(t, time.Since(start), 1500*time.Millisecond, "the pipes of old waited WaitDelay (2 s) here")
}

func TestExecMissingCommand(t *testing.T) {
	_, err := Exec{}.Run(context.Background(), "/nonexistent/richt-command")
	assert.ErrorContains(t, err, "run /nonexistent/richt-command")
	_, err = Exec{}.Run(context.Background())
	assert.ErrorContains(t, err, "empty command")
}
