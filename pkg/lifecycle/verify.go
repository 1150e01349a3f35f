package lifecycle

import (
	"context"
	"errors"
	"fmt"
	"github.com/richt/services/pkg/systemd"
	"strings"
	"time"

	"github.com/richt/services/pkg/reaction"
	"github.com/richt/services/pkg/timeout"
)

// watcher follows one unit while Apply acts on it: it verifies an action's outcome, runs
// the health probe, and on a failure reads the unit's journal and last state for the
// message. Every observation it makes is the result's `after`.
type watcher struct {
	sd     systemd.Systemd
	unit   string
	clk    Clock
	poll   time.Duration
	prober Prober
	limit  time.Duration // the task's deadline, for messages
	res    *Result
}

func newWatcher(d Deps, unit string, limit time.Duration, res *Result) *watcher {
	return &watcher{sd: d.Systemd, unit: unit, clk: d.clk(), poll: d.poll(), prober: d.prober(), limit: limit, res: res}
}

// verify polls the unit until the action's goal has held for settle, within the task's
// deadline: active with one invocation for start, restart and reload; inactive or failed
// for stop.
func (v *watcher) verify(ctx context.Context, action reaction.Action, settle time.Duration) (systemd.Props, error) {
	var since time.Time
	var invocation string
	var last systemd.Props
	for {
		p, err := v.sd.Show(ctx, v.unit)
		if err != nil {
			return last, fmt.Errorf("verify %s: %w", action, err)
		}
		last = p
		v.res.After = stateOf(p)
		now := v.clk.Now()
		holds := false
		if action == reaction.Stop {
			holds = p.ActiveState == "inactive" || p.ActiveState == "failed"
		} else {
			switch p.ActiveState {
			case "active":
				holds = true
			case "failed", "inactive":
				return p, fmt.Errorf("%s did not stay up after %s: ActiveState=%s SubState=%s", v.unit, action, p.ActiveState, p.SubState)
			}
			if holds && invocation != "" && p.InvocationID != invocation {
				return p, fmt.Errorf("%s was started again while it settled after %s (invocation %s, then %s): it does not stay up", v.unit, action, invocation, p.InvocationID)
			}
		}
		if !holds {
			since, invocation = time.Time{}, ""
		} else {
			if since.IsZero() {
				since, invocation = now, p.InvocationID
			}
			if now.Sub(since) >= settle {
				return p, nil
			}
		}
		select {
		case <-ctx.Done():
			if holds {
				return p, fmt.Errorf("%s of %s not verified: it was active for %s of the settle time of %s when the deadline passed: %w", action, v.unit, now.Sub(since).Round(time.Millisecond), settle, ctx.Err())
			}
			return p, fmt.Errorf("%s of %s not verified: still ActiveState=%s SubState=%s: %w", action, v.unit, p.ActiveState, p.SubState, ctx.Err())
		case <-v.clk.After(v.poll):
		}
	}
}

func (v *watcher) failure(ctx context.Context, action reaction.Action, due reaction.Kind, jobErr, verifyErr error) error {
	// The deadline has usually passed: journal and last state get a short one of their own.
	ctx, cancel := timeout.Cleanup(ctx)
	defer cancel()
	v.res.Journal = v.sd.Journal(ctx, v.unit, 15)
	if p, err := v.sd.Show(ctx, v.unit); err == nil {
		v.res.After = stateOf(p)
	}
	err := verifyErr
	if jobErr != nil {
		err = jobErr
	}
	var b strings.Builder
	want := "active"
	if action == reaction.Stop {
		want = "inactive or failed"
	}
	fmt.Fprintf(&b, "%s %s failed: expected %s, observed %s/%s: %v", action, v.unit, want, v.res.After.active, v.res.After.sub, err)
	if timeout.Expired(err) {
		fmt.Fprintf(&b, "; the deadline of %s passed; systemd keeps any job it already accepted (it is not rolled back)", v.limit)
	}
	if due != reaction.None {
		fmt.Fprintf(&b, "; the %s stays due and the next run for %s carries it out", due, v.unit)
	}
	if len(v.res.Journal) > 0 {
		b.WriteString("; last journal lines:\n" + strings.Join(v.res.Journal, "\n"))
	}
	return errors.New(b.String())
}
