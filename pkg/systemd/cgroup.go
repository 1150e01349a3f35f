package systemd

import (
	"context"
	"fmt"
	"strings"

	"github.com/godbus/dbus/v5"
)

// Group is what a scan of a unit's processes needs of it: its control group, and whether
// the manager refuses to stop it by hand (RefuseManualStop=yes: auditd, dbus-broker), which
// a restart is too.
type Group struct {
	// ControlGroup is the unit's cgroup path ("" when it has none: not running).
	ControlGroup     string
	RefuseManualStop bool
}

// GroupReader is implemented by backends that can read a unit's Group. It is asked only
// when a run looks for replaced files its processes map, so an observation stays one query
// otherwise.
type GroupReader interface {
	Group(ctx context.Context, unit string) (Group, error)
}

// Group implements GroupReader with one systemctl call.
func (s Systemctl) Group(ctx context.Context, unit string) (Group, error) {
	res, err := s.Runner.Run(ctx, s.systemctl("show", "--property=ControlGroup,RefuseManualStop", "--", unit)...)
	if err != nil {
		return Group{}, fmt.Errorf("control group of %s: %w", unit, err)
	}
	if res.ExitCode != 0 {
		return Group{}, fmt.Errorf("control group of %s: systemctl show exited %d: %s", unit, res.ExitCode, res.Output())
	}
	return parseGroup(unit, res.Stdout)
}

// parseGroup reads systemctl's ControlGroup= and RefuseManualStop= lines, strictly.
func parseGroup(unit, out string) (Group, error) {
	var g Group
	seen := map[string]bool{}
	for _, line := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
		k, v, ok := strings.Cut(line, "=")
		if !ok || seen[k] {
			return Group{}, fmt.Errorf("control group of %s: unexpected line %q", unit, line)
		}
		seen[k] = true
		switch k {
		case "ControlGroup":
			if v != "" && !strings.HasPrefix(v, "/") {
				return Group{}, fmt.Errorf("control group of %s: relative ControlGroup %q", unit, v)
			}
			g.ControlGroup = v
		case "RefuseManualStop":
			if v != "yes" && v != "no" {
				return Group{}, fmt.Errorf("control group of %s: RefuseManualStop=%q, expected yes or no", unit, v)
			}
			g.RefuseManualStop = v == "yes"
		default:
			return Group{}, fmt.Errorf("control group of %s: unrequested property %q", unit, k)
		}
	}
	if !seen["ControlGroup"] || !seen["RefuseManualStop"] {
		return Group{}, fmt.Errorf("control group of %s: systemd did not report ControlGroup and RefuseManualStop: %q", unit, out)
	}
	return g, nil
}

// Group implements GroupReader over D-Bus: RefuseManualStop is the Unit interface's,
// ControlGroup the Service interface's (a unit of another type has no processes of its own
// to restart; its group reads empty).
func (b *Bus) Group(ctx context.Context, unit string) (Group, error) {
	var refuse dbus.Variant
	if err := b.unitCall(ctx, unit, &refuse, "org.freedesktop.DBus.Properties.Get", "org.freedesktop.systemd1.Unit", "RefuseManualStop"); err != nil {
		return Group{}, fmt.Errorf("control group of %s: %w", unit, err)
	}
	r, ok := refuse.Value().(bool)
	if !ok {
		return Group{}, fmt.Errorf("control group of %s: RefuseManualStop of type %T", unit, refuse.Value())
	}
	g := Group{RefuseManualStop: r}
	if !strings.HasSuffix(unit, ".service") {
		return g, nil
	}
	var cg dbus.Variant
	if err := b.unitCall(ctx, unit, &cg, "org.freedesktop.DBus.Properties.Get", "org.freedesktop.systemd1.Service", "ControlGroup"); err != nil {
		return Group{}, fmt.Errorf("control group of %s: %w", unit, err)
	}
	if g.ControlGroup, ok = cg.Value().(string); !ok {
		return Group{}, fmt.Errorf("control group of %s: ControlGroup of type %T", unit, cg.Value())
	}
	return g, nil
}
