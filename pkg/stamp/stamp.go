// Package stamp marks moments on a target in the clock systemd uses for its own
// timestamps (CLOCK_MONOTONIC, microseconds) together with the boot they belong to, so a
// later run can tell whether a unit became active after something happened. The wall
// clock would do the same until somebody sets it; the monotonic clock never jumps.
package stamp

import (
	"fmt"
	"os"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// Stamp is one moment on one boot of a host.
type Stamp struct {
	BootID string `json:"boot_id"`
	// Mono is CLOCK_MONOTONIC in microseconds, as systemd's *TimestampMonotonic properties.
	Mono uint64 `json:"monotonic_us"`
}

// IsZero reports whether the stamp is unset.
func (s Stamp) IsZero() bool { return s.BootID == "" }

const bootIDFile = "/proc/sys/kernel/random/boot_id"

// Now is the current moment.
func Now() (Stamp, error) {
	id, err := os.ReadFile(bootIDFile)
	if err != nil {
		return Stamp{}, fmt.Errorf("read boot id: %w", err)
	}
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
		return Stamp{}, fmt.Errorf("read monotonic clock: %w", err)
	}
	return Stamp{BootID: strings.TrimSpace(string(id)), Mono: uint64(ts.Sec)*1e6 + uint64(ts.Nsec)/1e3}, nil
}

// At is the moment t of the wall clock (a file's ctime, say) in this boot's monotonic
// clock: now minus how long ago t was. A t before this boot gives monotonic 0.
func At(t time.Time) (Stamp, error) {
	now, err := Now()
	if err != nil {
		return Stamp{}, err
	}
	ago := time.Since(t).Microseconds()
	switch {
	case ago <= 0:
	case uint64(ago) >= now.Mono:
		now.Mono = 0
	default:
		now.Mono -= uint64(ago)
	}
	return now, nil
}

// ActiveSince reports whether a unit that is active now, and entered that state at
// activeEnterMono (systemd's ActiveEnterTimestampMonotonic) in the boot now, became active
// after s: on another boot than s, everything active now started after s.
func (s Stamp) ActiveSince(now Stamp, activeEnterMono uint64) bool {
	if s.IsZero() || now.IsZero() || activeEnterMono == 0 {
		return false
	}
	if s.BootID != now.BootID {
		return true
	}
	return activeEnterMono > s.Mono
}
