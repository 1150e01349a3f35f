package testenv

import (
	"bytes"
	"context"
	"fmt"
	"time"

	"github.com/testcontainers/testcontainers-go"
	"github.com/testcontainers/testcontainers-go/wait"
)

// bootWait is a boot's readiness wait: `systemctl is-system-running --wait` until it says
// running or degraded, within timeout. It starts the target's agent first, as soon as the
// container runs, so the polls go through it rather than through Docker: a boot polls
// several times, and each poll through Docker costs its daemons more CPU than the boot's
// other steps.
type bootWait struct {
	timeout time.Duration
	logger  Logger
	agent   *agent // the agent started, for the Target; nil when commands go through Docker
}

// pollEvery is the pause between readiness polls through the agent and through Docker.
func (w *bootWait) pollEvery() time.Duration {
	if w.agent != nil {
		return 100 * time.Millisecond
	}
	return 200 * time.Millisecond
}

// WaitUntilReady implements wait.Strategy.
func (w *bootWait) WaitUntilReady(ctx context.Context, target wait.StrategyTarget) error {
	ctx, cancel := context.WithTimeout(ctx, w.timeout)
	defer cancel()
	argv := systemUpCommand
	var t *Target
	if dc, ok := target.(*testcontainers.DockerContainer); ok {
		t = &Target{container: dc, installed: map[string]bool{}}
		if use, _ := agentUsed(); use {
			t.startAgentOrSay(ctx, w.logger)
			w.agent = t.currentAgent()
		}
	}
	for {
		var out string
		var err error
		if t != nil {
			var res ExecResult
			res, err = t.Exec(ctx, argv...)
			out = res.Stdout + res.Stderr
		} else {
			var b bytes.Buffer
			_, r, xerr := target.Exec(ctx, argv)
			if err = xerr; r != nil {
				_, _ = b.ReadFrom(r)
			}
			out = b.String()
		}
		if err == nil && systemUp(out) {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%q did not say running or degraded: %w", argv, ctx.Err())
		case <-time.After(w.pollEvery()):
		}
	}
}
