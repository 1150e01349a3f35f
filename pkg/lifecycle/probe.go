package lifecycle

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/richt/services/pkg/timeout"
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
func (v *watcher) startProbe(ctx context.Context, p Decision) *probeRun {
	if p.Probe == nil {
		return nil
	}
	pctx, cancel := context.WithCancel(ctx)
	pr := &probeRun{done: make(chan struct{}), cancel: cancel}
	go func() {
		defer close(pr.done)
		pr.attempts, pr.err = v.prober.Wait(pctx, *p.Probe)
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
func (v *watcher) probe(ctx context.Context, p Decision) error {
	return v.health(ctx, p, v.startProbe(ctx, p))
}

// health waits for a started probe and reports it; a failed probe fails the task.
func (v *watcher) health(ctx context.Context, p Decision, pr *probeRun) error {
	if pr == nil {
		return nil
	}
	<-pr.done
	pr.cancel()
	attempts, err := pr.attempts, pr.err
	v.res.Health = &HealthResult{Probe: p.Probe.String(), Attempts: attempts, Healthy: err == nil}
	if err == nil {
		return nil
	}
	// The deadline has usually passed: the journal gets the cleanup grace of its own.
	jctx, cancel := timeout.Cleanup(ctx)
	defer cancel()
	v.res.Journal = v.sd.Journal(jctx, v.unit, 15)
	var b strings.Builder
	// Said of this run: "nothing was restarted" next to the restart it did is not true.
	done := "nothing was restarted"
	for i, s := range p.Steps {
		if runStepAt(p.Steps, i) {
			done = fmt.Sprintf("this run's %s was carried out; a failing probe does not restart anything", s)
		}
	}
	fmt.Fprintf(&b, "%s is active but not healthy: probe %s failed after %d attempt(s) within the timeout of %s: %v; %s",
		v.unit, p.Probe, attempts, v.limit, err, done)
	if len(v.res.Journal) > 0 {
		b.WriteString("; last journal lines:\n" + strings.Join(v.res.Journal, "\n"))
	}
	return errors.New(b.String())
}
