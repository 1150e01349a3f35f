package systemd

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/godbus/dbus/v5"
)

// ErrNoUnitFile: no file of the unit is on disk in the manager's search path.
var ErrNoUnitFile = errors.New("no unit file on disk")

// FileStater is implemented by backends that read a unit's file state from the unit files
// on disk at the time of the call: the Manager's GetUnitFileState (what systemctl
// is-enabled asks). The unit's UnitFileState property that Show reads is the same
// computation, but cached in the loaded unit until the next manager reload, so it can be
// older than the files; and a unit the manager has not loaded has none.
type FileStater interface {
	// UnitFileState returns the file state of the unit named (enabled, disabled, static,
	// masked, ...), or an error wrapping ErrNoUnitFile when no file of it is on disk.
	UnitFileState(ctx context.Context, unit string) (string, error)
}

// UnitFileState implements FileStater with one call of the Manager's GetUnitFileState.
func (b *Bus) UnitFileState(ctx context.Context, unit string) (string, error) {
	body, err := b.obs.call(ctx, "/org/freedesktop/systemd1", "org.freedesktop.systemd1.Manager.GetUnitFileState", unit)
	var e dbus.Error
	if errors.As(err, &e) && (e.Name == "org.freedesktop.DBus.Error.FileNotFound" || e.Name == "org.freedesktop.systemd1.NoSuchUnit") {
		return "", fmt.Errorf("unit file state of %s: %w (%v)", unit, ErrNoUnitFile, err)
	}
	if err != nil {
		return "", fmt.Errorf("unit file state of %s: %w", unit, err)
	}
	var state string
	if err := dbus.Store(body, &state); err != nil {
		return "", fmt.Errorf("unit file state of %s: %w", unit, err)
	}
	return state, nil
}

// UnitFileState implements FileStater with systemctl is-enabled, which asks the manager's
// GetUnitFileState. It prints the state also when it exits non-zero (disabled, masked);
// a unit without a file on disk prints "not-found" (systemd 250 and later) or only an
// error naming ENOENT.
func (s Systemctl) UnitFileState(ctx context.Context, unit string) (string, error) {
	res, err := s.Runner.Run(ctx, s.systemctl("is-enabled", "--", unit)...)
	if err != nil {
		return "", fmt.Errorf("unit file state of %s: %w", unit, err)
	}
	state := strings.TrimSpace(res.Stdout)
	switch {
	case state == "not-found" || state == "" && strings.Contains(res.Stderr, "No such file or directory"):
		return "", fmt.Errorf("unit file state of %s: %w", unit, ErrNoUnitFile)
	case state == "" || strings.ContainsAny(state, " \n"):
		return "", fmt.Errorf("unit file state of %s: systemctl is-enabled exited %d: %s", unit, res.ExitCode, res.Output())
	}
	return state, nil
}
