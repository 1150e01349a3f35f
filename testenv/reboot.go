package testenv

import (
	"context"
	"fmt"
	"time"

	"github.com/moby/moby/client"
	"github.com/testcontainers/testcontainers-go"
)

// Reboot restarts the target the way a host restarts: every process in it ends, /run and
// the other tmpfs mounts come back empty, the disk is kept, and systemd boots again from
// /sbin/init. With hard, nothing gets to stop cleanly (a power loss: the container is
// killed at once); otherwise systemd is asked to halt (the image's stop signal) and gets
// grace seconds to stop its units before the rest is killed. It returns when systemd is
// running or degraded again, or ctx ends.
//
// Commands go through Docker's API during the reboot, and through a new agent after it.
//
// A container shares the host's kernel, so the boot ID and CLOCK_MONOTONIC go on across
// the reboot; what a module must survive here is the loss of every process and of /run.
func (t *Target) Reboot(ctx context.Context, hard bool, grace time.Duration) error {
	// The agent ends with every other process; until it runs again, commands go through
	// Docker's API.
	t.mu.Lock()
	t.agent = nil
	t.mu.Unlock()
	if hard {
		// SIGKILL to the container's init: the kernel ends every process in its PID
		// namespace at once, and systemd gets no signal it could act on (a stop with no
		// grace still sends the halt signal first, and the units' stop begins).
		cli, err := testcontainers.NewDockerClientWithOpts(ctx)
		if err != nil {
			return fmt.Errorf("reboot %s: %w", t.ID(), err)
		}
		defer cli.Close()
		if _, err := cli.ContainerKill(ctx, t.ID(), client.ContainerKillOptions{Signal: "KILL"}); err != nil {
			return fmt.Errorf("reboot %s: kill: %w", t.ID(), err)
		}
		// Docker reports the container stopped shortly after the kill; Start refuses a
		// running one.
		for {
			st, err := t.container.State(ctx)
			if err == nil && !st.Running {
				break
			}
			select {
			case <-ctx.Done():
				return fmt.Errorf("reboot %s: still running after the kill: %w", t.ID(), ctx.Err())
			case <-time.After(50 * time.Millisecond):
			}
		}
	} else if err := t.container.Stop(ctx, &grace); err != nil {
		return fmt.Errorf("reboot %s: stop: %w", t.ID(), err)
	}
	if err := t.container.Start(ctx); err != nil {
		return fmt.Errorf("reboot %s: start: %w", t.ID(), err)
	}
	for {
		res, err := t.Exec(ctx, systemUpCommand...)
		if err == nil && systemUp(res.Stdout) {
			t.startAgentOrSay(ctx, defaultLogger())
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("reboot %s: systemd did not come up: %w%s", t.ID(), ctx.Err(), t.stuck(context.Background()))
		case <-time.After(200 * time.Millisecond):
		}
	}
}
