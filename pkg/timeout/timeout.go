// Package timeout parses the `timeout` parameter shared by every module and turns it into
// the one deadline that covers a task's command and the wait that verifies it.
package timeout

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"time"
)

// ErrNotPositive is returned for zero or negative durations: a task without time to act
// cannot succeed, so such a value is a mistake in the playbook, not "no limit".
var ErrNotPositive = errors.New("must be a positive duration")

// Parse reads a duration as users write it, a Go duration string such as "5s" or "1m30s"
// or a number of seconds ("20", "1.5": what `timeout: 20` becomes), and requires it to be
// positive.
func Parse(s string) (time.Duration, error) {
	d, err := parse(s)
	if err != nil {
		return 0, fmt.Errorf("%q is not a duration: write a number of seconds (20) or a duration with its unit (5s, 1m30s, 10m)", s)
	}
	if d <= 0 {
		return 0, fmt.Errorf("%q %w", s, ErrNotPositive)
	}
	return d, nil
}

// ParseNonNegative reads a duration that may be zero, such as a settle time ("0s": the
// result of the job is all the proof wanted).
func ParseNonNegative(s string) (time.Duration, error) {
	d, err := parse(s)
	if err != nil {
		return 0, fmt.Errorf("%q is not a duration: write a number of seconds (2) or a duration with its unit (0s, 300ms, 2s)", s)
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

// seconds is a plain number of seconds: digits, an optional fraction. Not what
// strconv.ParseFloat takes alone, which reads "NaN", "Inf", "1e3" and hex floats too.
var seconds = regexp.MustCompile(`^[0-9]+(\.[0-9]+)?$`)

// maxSeconds is the largest number of seconds a time.Duration holds.
const maxSeconds = float64(1<<63-1) / float64(time.Second)

// parse reads a number of seconds or a Go duration string.
func parse(s string) (time.Duration, error) {
	if !seconds.MatchString(s) {
		return time.ParseDuration(s)
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || f >= maxSeconds {
		return 0, fmt.Errorf("%q seconds is out of range", s)
	}
	return time.Duration(f * float64(time.Second)), nil
}
