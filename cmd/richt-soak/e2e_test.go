package main

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/richt/services/modules"
	"github.com/richt/services/testenv"
)

// A systemd_lifecycle run whose restart fails after its reaction was recorded as pending
// (here the unit's start is refused by an assertion, after the stop) owes that restart to
// the next run, which carries it out: the ledger must count that run's start as owed,
// where it once counted it as nothing owed (seed 20261210's step 184 at a26363a).
func TestAFailedLifecycleRunOwesTheRestartItLeftPending(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end: needs Docker")
	}
	ctx := context.Background()
	s, err := newSoak(1, testenv.BuildModule(t, modules.Command))
	require.NoError(t, err)
	t.Cleanup(s.removeTemp) // the target goes with testenv.Start's own clean-up
	s.t = testenv.Start(t)
	require.NoError(t, s.setUpDemo(ctx))
	s.snapshot(ctx)
	s.led.take()

	s.t.Shell(t, `mkdir -p /run/systemd/system/demo.service.d && printf '[Unit]\nAssertPathExists=/nonexistent\n' > /run/systemd/system/demo.service.d/soak-assert.conf && systemctl daemon-reload`)
	_, args := s.args(Step{Op: "lifecycle"})
	var res map[string]any
	s.accounted(ctx, "systemd_lifecycle", false, func() bool {
		r, err := s.run(ctx, "systemd_lifecycle", args)
		require.NoError(t, err)
		res = r
		return r["failed"] == true
	})
	require.Equal(t, true, res["failed"], "the restart with a failing assertion must fail: %v", res)
	s.t.MustExec(t, "test", "-e", pendingRecordPath)
	s.t.Shell(t, `rm -f /run/systemd/system/demo.service.d/soak-assert.conf && systemctl daemon-reload`)

	_, err = s.converge(ctx, "after the failed restart")
	require.NoError(t, err)
	lost, unowed, trail := s.led.take()
	assert.Empty(t, lost, "trail: %v", trail)
	assert.Empty(t, unowed, "trail: %v", trail)
	e, ok := s.led.last("start")
	assert.True(t, ok, "the converging run carried out the pending restart: trail %v", trail)
	assert.Equal(t, "1.0", e.version)
	s.t.MustExec(t, "test", "!", "-e", pendingRecordPath)
}
