package lifecycle

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
)

// probeRun is a health probe running in the background.
type probeRun struct {
	done     chan struct{}
	cancel   context.CancelFunc
	attempts int
	err      error
}

// startProbe starts the plan's health probe, which tries until it passes or ctx ends; nil
// when the plan has none.
func (r *run) startProbe(ctx context.Context, p Plan) *probeRun {
	if p.Probe == nil {
		return nil
	}
	pctx, cancel := context.WithCancel(ctx)
	pr := &probeRun{done: make(chan struct{}), cancel: cancel}
	go func() {
		defer close(pr.done)
		pr.attempts, pr.err = r.prober().Wait(pctx, *p.Probe)
	}()
	return pr
}

// abandon stops a probe whose action failed: its answer would not be reported.
func (pr *probeRun) abandon() {
	if pr != nil {
		pr.cancel()
		<-pr.done
	}
}

// probe runs the plan's health probe until it passes or the deadline ends.
func (r *run) probe(ctx context.Context, p Plan) error {
	return r.health(p, r.startProbe(ctx, p))
}

// health waits for a started probe and reports it; a failed probe fails the task.
func (r *run) health(p Plan, pr *probeRun) error {
	if pr == nil {
		return nil
	}
	<-pr.done
	pr.cancel()
	attempts, err := pr.attempts, pr.err
	r.res.Health = &HealthResult{Probe: p.Probe.String(), Attempts: attempts, Healthy: err == nil}
	if err == nil {
		return nil
	}
	jctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	r.res.Journal = r.Systemd.Journal(jctx, r.want.Unit, 15)
	var b strings.Builder
	fmt.Fprintf(&b, "%s is active but not healthy: probe %s failed after %d attempt(s) within the timeout of %s: %v; nothing was restarted",
		r.want.Unit, p.Probe, attempts, r.limit, err)
	if len(r.res.Journal) > 0 {
		b.WriteString("; last journal lines:\n" + strings.Join(r.res.Journal, "\n"))
	}
	return errors.New(b.String())
}
