package lifecycle

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/richt/services/pkg/durable"
)

// resettingSystemd is fakeSystemd that can clear a unit's failed state.
type resettingSystemd struct {
	fakeSystemd
	fails error
}

func (f *resettingSystemd) ResetFailed(_ context.Context, unit string) error {
	f.calls = append(f.calls, "reset-failed "+unit)
	if f.fails != nil {
		return f.fails
	}
	if f.p.ActiveState == "failed" {
		f.p.ActiveState, f.p.SubState = "inactive", "dead"
	}
	return nil
}

// A request that asks for it (a rollback's start of the last good state) clears the
// unit's failed state under the unit's lock, before the plan observes it, on the run's
// own connection; one that does not ask leaves it; a clear that fails is a warning and
// the plan is made all the same.
func TestHoldResetsFailedFirstWhenAsked(t *testing.T) {
	for _, c := range []struct {
		name  string
		ask   bool
		fails error
		calls []string
		warn  string
	}{
		{name: "asked", ask: true, calls: []string{"lock unit-demo.service", "reset-failed demo.service", "show"}},
		{name: "not asked", calls: []string{"lock unit-demo.service", "show"}},
		{name: "asked, the clear fails", ask: true, fails: errors.New("access denied"),
			calls: []string{"lock unit-demo.service", "reset-failed demo.service", "show"}, warn: "reset-failed: access denied"},
	} {
		t.Run(c.name, func(t *testing.T) {
			sd := &resettingSystemd{fakeSystemd: fakeSystemd{p: props("failed", "enabled")}, fails: c.fails}
			d := testDeps(&sd.fakeSystemd, &memStore{pending: map[string]*durable.Pending{}})
			d.Systemd = sd
			d.Lock = func(_ context.Context, name string) (func(), error) {
				sd.calls = append(sd.calls, "lock "+name)
				return func() {}, nil
			}
			req := Request{Want: Want{Unit: "demo.service", Running: true}, ResetFailed: c.ask}
			h := d.Hold(context.Background(), req)
			require.NoError(t, h.Err())
			assert.Equal(t, c.calls, sd.calls[:len(c.calls)], "the clear comes under the lock, before the first observation")
			var warned []string
			_, err := h.Finish(context.Background(), true, func(f string, a ...any) { warned = append(warned, fmt.Sprintf(f, a...)) })
			require.NoError(t, err)
			if c.warn != "" {
				assert.Contains(t, warned, c.warn)
			} else {
				assert.NotContains(t, fmt.Sprint(warned), "reset-failed")
			}
		})
	}
}
