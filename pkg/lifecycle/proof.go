package lifecycle

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/richt/services/pkg/health"
	"github.com/richt/services/pkg/systemd"
	"github.com/richt/services/pkg/timeout"
)

// The proof of a signalled reload (Decision.Quiet): systemd's reload job ends when
// ExecReload= returned, which for `nginx -s reload` or `kill -HUP $MAINPID` is when the
// signal was sent, before the daemon acted on it. A probe that passes then is answered by
// the old configuration. So the probe counts only once the reload is observable:
//
//  1. quiet: the processes the unit had before the reload have stopped exiting for
//     Decision.Quiet (the old workers of nginx go once the new ones run; a daemon that
//     rebinds in-process replaces nothing, and the window passes at once);
//  2. settle: for Decision.Settle after that, every probe attempt must pass, and the unit
//     must stay active with the same invocation;
//
// both within the task's deadline. A failure in either is the reload's failure.

// before lists the unit's processes ahead of a signalled reload; nil when the backend
// cannot list them or the listing failed: then the quiet wait has nothing to watch and
// the settle alone holds the probe.
func (v *watcher) before(ctx context.Context) map[int]bool {
	l, ok := v.sd.(systemd.ProcessLister)
	if !ok {
		return nil
	}
	pids, err := l.UnitProcesses(ctx, v.unit)
	if err != nil {
		return nil
	}
	old := make(map[int]bool, len(pids))
	for _, pid := range pids {
		old[pid] = true
	}
	return old
}

// quiet waits until none of the processes in old has exited for the window, polling the
// unit's processes; the window starts when the reload job ended.
func (v *watcher) quiet(ctx context.Context, old map[int]bool, window time.Duration) error {
	l, ok := v.sd.(systemd.ProcessLister)
	if !ok || len(old) == 0 {
		return nil
	}
	left, since := len(old), v.clk.Now()
	for {
		pids, err := l.UnitProcesses(ctx, v.unit)
		if err != nil {
			return fmt.Errorf("reload of %s not proven: %w", v.unit, err)
		}
		now := v.clk.Now()
		n := 0
		for _, pid := range pids {
			if old[pid] {
				n++
			}
		}
		if n < left {
			left, since = n, now
		}
		if now.Sub(since) >= window {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("reload of %s not proven: the processes it had before the reload were still exiting (%d of %d left) when the deadline passed: %w", v.unit, left, len(old), ctx.Err())
		case <-v.clk.After(v.poll):
		}
	}
}

// hold runs the probe every probeEvery for settle, from now: every attempt must pass and
// the unit must stay active with the invocation inv. It reports the probe's attempts.
func (v *watcher) hold(ctx context.Context, probe health.Probe, settle time.Duration, inv string) (int, error) {
	start := v.clk.Now()
	attempts := 0
	for {
		attempts++
		if err := v.prober.Check(ctx, probe); err != nil {
			return attempts, fmt.Errorf("its health probe %s failed %s after the reload's processes were quiet (attempt %d; every attempt during the settle of %s must pass): %w",
				probe, v.clk.Now().Sub(start).Round(time.Millisecond), attempts, settle, err)
		}
		p, err := v.sd.Show(ctx, v.unit)
		if err != nil {
			return attempts, err
		}
		v.res.After = stateOf(p)
		if p.ActiveState != "active" || p.InvocationID != inv {
			return attempts, fmt.Errorf("it did not stay up: ActiveState=%s SubState=%s, invocation %s (was %s)", p.ActiveState, p.SubState, p.InvocationID, inv)
		}
		if v.clk.Now().Sub(start) >= settle {
			return attempts, nil
		}
		select {
		case <-ctx.Done():
			return attempts, fmt.Errorf("the deadline passed %s into the settle of %s: %w", v.clk.Now().Sub(start).Round(time.Millisecond), settle, ctx.Err())
		case <-v.clk.After(probeEvery):
		}
	}
}

// prove proves a signalled reload (Decision.Quiet) whose job has ended and whose unit was
// verified active with invocation inv: the quiet wait, then the settle with the probe
// held. The result's health reports the held probe. A failure reads the journal and says
// the reload did not take effect as a working service.
func (v *watcher) prove(ctx context.Context, p Decision, old map[int]bool, inv string) error {
	err := v.quiet(ctx, old, p.Quiet)
	attempts := 0
	if err == nil {
		attempts, err = v.hold(ctx, *p.Probe, p.Settle, inv)
		v.res.Health = &HealthResult{Probe: p.Probe.String(), Attempts: attempts, Healthy: err == nil}
		if err != nil {
			err = fmt.Errorf("reload of %s not proven: systemd's reload job had ended, but %w", v.unit, err)
		}
	}
	if err == nil {
		return nil
	}
	jctx, cancel := timeout.Cleanup(ctx)
	defer cancel()
	v.res.Journal = v.sd.Journal(jctx, v.unit, 15)
	var b strings.Builder
	b.WriteString(err.Error())
	b.WriteString("; the reload was carried out (it is not due again): the service does not answer as it should on its new configuration")
	if len(v.res.Journal) > 0 {
		b.WriteString("; last journal lines:\n" + strings.Join(v.res.Journal, "\n"))
	}
	return errors.New(b.String())
}
