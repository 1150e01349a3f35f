package timeout

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

type key struct{}

// Cleanup work outlives the task's context, whether that ran out or was cancelled, keeps
// its values, and has a deadline of its own no later than CleanupGrace from now.
func TestCleanupOutlivesTheTask(t *testing.T) {
	for _, tc := range []struct {
		name string
		end  func(context.Context) (context.Context, context.CancelFunc)
	}{
		{"deadline passed", func(p context.Context) (context.Context, context.CancelFunc) {
			return context.WithDeadline(p, time.Now().Add(-time.Second))
		}},
		{"cancelled", func(p context.Context) (context.Context, context.CancelFunc) {
			ctx, cancel := context.WithCancel(p)
			cancel()
			return ctx, cancel
		}},
		{"still running", func(p context.Context) (context.Context, context.CancelFunc) {
			return context.WithCancel(p)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			task, cancelTask := tc.end(context.WithValue(context.Background(), key{}, "v"))
			defer cancelTask()
			before := time.Now()
			ctx, cancel := Cleanup(task)
			defer cancel()
			require.NoError(t, ctx.Err())
			assert.Equal(t, "v", ctx.Value(key{}))
			deadline, ok := ctx.Deadline()
			require.True(t, ok, "cleanup work has a deadline of its own")
			assert.False(t, deadline.Before(before), "the deadline is not in the past")
			assert.False(t, deadline.After(time.Now().Add(CleanupGrace)), "the deadline is at most CleanupGrace away")
			cancel()
			assert.ErrorIs(t, ctx.Err(), context.Canceled)
		})
	}
}
