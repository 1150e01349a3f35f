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

// verify polls the unit until the action's goal has held for settle, within the task's
// deadline: active with one invocation for start, restart and reload; inactive or failed
// for stop.
func (r *run) verify(ctx context.Context, action reaction.Action, settle time.Duration) (systemd.Props, error) {
	clk := r.clk()
	var since time.Time
	var invocation string
	var last systemd.Props
	for {
		p, err := r.Systemd.Show(ctx, r.want.Unit)
		if err != nil {
			return last, fmt.Errorf("verify %s: %w", action, err)
		}
		last = p
		r.res.After = stateOf(p)
		now := clk.Now()
		holds := false
		if action == reaction.Stop {
			holds = p.ActiveState == "inactive" || p.ActiveState == "failed"
		} else {
			switch p.ActiveState {
			case "active":
				holds = true
			case "failed", "inactive":
				return p, fmt.Errorf("%s did not stay up after %s: ActiveState=%s SubState=%s", r.want.Unit, action, p.ActiveState, p.SubState)
			}
			if holds && invocation != "" && p.InvocationID != invocation {
				return p, fmt.Errorf("%s was started again while it settled after %s (invocation %s, then %s): it does not stay up", r.want.Unit, action, invocation, p.InvocationID)
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
				return p, fmt.Errorf("%s of %s not verified: it was active for %s of the settle time of %s when the deadline passed: %w", action, r.want.Unit, now.Sub(since).Round(time.Millisecond), settle, ctx.Err())
			}
			return p, fmt.Errorf("%s of %s not verified: still ActiveState=%s SubState=%s: %w", action, r.want.Unit, p.ActiveState, p.SubState, ctx.Err())
		case <-clk.After(r.poll()):
		}
	}
}

func (r *run) failure(action reaction.Action, due reaction.Kind, jobErr, verifyErr error) error {
	// The deadline has usually passed: journal and last state get a short one of their own.
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	r.res.Journal = r.Systemd.Journal(ctx, r.want.Unit, 15)
	if p, err := r.Systemd.Show(ctx, r.want.Unit); err == nil {
		r.res.After = stateOf(p)
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
	fmt.Fprintf(&b, "%s %s failed: expected %s, observed %s/%s: %v", action, r.want.Unit, want, r.res.After.active, r.res.After.sub, err)
	if timeout.Expired(err) {
		fmt.Fprintf(&b, "; the deadline of %s passed; systemd keeps any job it already accepted (it is not rolled back)", r.limit)
	}
	if due != reaction.None {
		fmt.Fprintf(&b, "; the %s stays due and the next run for %s carries it out", due, r.want.Unit)
	}
	if len(r.res.Journal) > 0 {
		b.WriteString("; last journal lines:\n" + strings.Join(r.res.Journal, "\n"))
	}
	return errors.New(b.String())
}
