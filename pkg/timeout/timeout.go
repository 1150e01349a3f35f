// Package timeout parses the `timeout` parameter shared by every module and turns it into
// the one deadline that covers a task's command and the wait that verifies it.
package timeout

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// ErrNotPositive is returned for zero or negative durations: a task without time to act
// cannot succeed, so such a value is a mistake in the playbook, not "no limit".
var ErrNotPositive = errors.New("must be a positive duration")

// Parse reads a Go duration string such as "5s" or "1m30s" and requires it to be positive.
func Parse(s string) (time.Duration, error) {
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("%q is not a duration like 5s, 1m30s or 10m", s)
	}
	if d <= 0 {
		return 0, fmt.Errorf("%q %w", s, ErrNotPositive)
	}
	return d, nil
}

// ParseNonNegative reads a duration that may be zero, such as a settle time ("0s": the
// result of the job is all the proof wanted).
func ParseNonNegative(s string) (time.Duration, error) {
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("%q is not a duration like 0s, 300ms or 2s", s)
	}
	if d < 0 {
		return 0, fmt.Errorf("%q must not be negative", s)
	}
	return d, nil
}

// Deadline returns a context that ends after d. Every external command and every wait of
// one task runs under the same context, so the task as a whole respects d.
func Deadline(parent context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	return context.WithTimeout(parent, d)
}

// Expired reports whether err is, or wraps, the task deadline running out.
func Expired(err error) bool {
	return errors.Is(err, context.DeadlineExceeded)
}
