package timeout

import (
	"context"
	"time"
)

// CleanupGrace is how long cleanup work gets once a task's own deadline may have passed:
// withdrawing a record the task wrote ahead, or reading the journal and the unit's last
// state for the error message. Long enough for one local file operation or one D-Bus call
// and a short journalctl on a loaded host; short enough that a task past its deadline
// does not hang on its way out.
const CleanupGrace = 3 * time.Second

// Cleanup returns a context for work that must still happen after ctx is done (its
// deadline passed, or it was cancelled): it keeps ctx's values but not its end, and ends
// after CleanupGrace of its own. Work without a context of its own passes
// context.Background().
func Cleanup(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), CleanupGrace)
}
