package systemd

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/godbus/dbus/v5"
)

// UnitsLoadedProperty is the manager property that says when the manager last loaded
// its units (at boot and at every daemon-reload), in CLOCK_MONOTONIC microseconds; systemd
// 252 and 257 report it.
const UnitsLoadedProperty = "UnitsLoadTimestampMonotonic"

// LoadReader tells when the manager last loaded its units (UnitsLoadedProperty), so a
// manager reload that already happened after a change's files were placed (a package
// scriptlet's `systemctl daemon-reload`) is not repeated. 0: the manager does not say.
type LoadReader interface {
	UnitsLoaded(ctx context.Context) (uint64, error)
}

// UnitsLoaded implements LoadReader with one property read of the Manager.
func (b *Bus) UnitsLoaded(ctx context.Context) (uint64, error) {
	body, err := b.obs.call(ctx, "/org/freedesktop/systemd1", "org.freedesktop.DBus.Properties.Get", "org.freedesktop.systemd1.Manager", UnitsLoadedProperty)
	if err != nil {
		return 0, fmt.Errorf("read the manager's %s: %w", UnitsLoadedProperty, err)
	}
	var v dbus.Variant
	if err := dbus.Store(body, &v); err != nil {
		return 0, fmt.Errorf("read the manager's %s: %w", UnitsLoadedProperty, err)
	}
	mono, ok := v.Value().(uint64)
	if !ok {
		return 0, fmt.Errorf("read the manager's %s: unexpected type %T", UnitsLoadedProperty, v.Value())
	}
	return mono, nil
}

// UnitsLoaded implements LoadReader with one `systemctl show` of the manager.
func (s Systemctl) UnitsLoaded(ctx context.Context) (uint64, error) {
	res, err := s.Runner.Run(ctx, s.systemctl("show", "--property="+UnitsLoadedProperty)...)
	if err != nil {
		return 0, fmt.Errorf("read the manager's %s: %w", UnitsLoadedProperty, err)
	}
	if res.ExitCode != 0 {
		return 0, fmt.Errorf("read the manager's %s: systemctl show exited %d: %s", UnitsLoadedProperty, res.ExitCode, res.Output())
	}
	return ParseUnitsLoaded(res.Stdout)
}

// ParseUnitsLoaded reads `systemctl show --property=UnitsLoadTimestampMonotonic`'s answer
// strictly: that one property, a decimal number.
func ParseUnitsLoaded(out string) (uint64, error) {
	v, ok := strings.CutPrefix(strings.TrimSuffix(out, "\n"), UnitsLoadedProperty+"=")
	if !ok || strings.Contains(v, "\n") {
		return 0, fmt.Errorf("systemctl show: expected %s=N, got %q", UnitsLoadedProperty, out)
	}
	mono, err := strconv.ParseUint(v, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("systemctl show: %s: %w", UnitsLoadedProperty, err)
	}
	return mono, nil
}
