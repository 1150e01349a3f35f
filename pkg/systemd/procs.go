package systemd

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/godbus/dbus/v5"
)

// ProcessLister is implemented by backends that can list the processes in a unit's
// control group. A reload that signals the daemon and returns is proven by watching its
// processes: the ones that were there before it stop exiting once the daemon has acted on
// it (package lifecycle).
type ProcessLister interface {
	// UnitProcesses returns the PIDs in the unit's control group and its children,
	// sorted; none for a unit that runs nothing.
	UnitProcesses(ctx context.Context, unit string) ([]int, error)
}

// UnitProcesses implements ProcessLister with the Manager's GetUnitProcesses (systemd
// 238 and later), which walks the unit's cgroup subtree the way systemctl status does.
func (b *Bus) UnitProcesses(ctx context.Context, unit string) ([]int, error) {
	body, err := b.obs.call(ctx, "/org/freedesktop/systemd1", "org.freedesktop.systemd1.Manager.GetUnitProcesses", unit)
	if err != nil {
		return nil, fmt.Errorf("processes of %s over D-Bus: %w", unit, err)
	}
	var procs []struct {
		Cgroup string
		PID    uint32
		Cmd    string
	}
	if err := dbus.Store(body, &procs); err != nil {
		return nil, fmt.Errorf("processes of %s: %w", unit, err)
	}
	out := make([]int, 0, len(procs))
	for _, p := range procs {
		out = append(out, int(p.PID))
	}
	slices.Sort(out)
	return slices.Compact(out), nil
}

// cgroupRoots are where the unit's cgroup path (ControlGroup) is found: the unified
// hierarchy mounted at /sys/fs/cgroup, or on a hybrid host beside the v1 controllers.
var cgroupRoots = []string{"/sys/fs/cgroup", "/sys/fs/cgroup/unified", "/sys/fs/cgroup/systemd"}

// UnitProcesses implements ProcessLister: the unit's ControlGroup from systemctl, then the
// cgroup.procs files of that cgroup and every cgroup below it.
func (s Systemctl) UnitProcesses(ctx context.Context, unit string) ([]int, error) {
	res, err := s.Runner.Run(ctx, s.systemctl("show", "--property=ControlGroup", "--value", "--", unit)...)
	if err != nil {
		return nil, fmt.Errorf("processes of %s: %w", unit, err)
	}
	if res.ExitCode != 0 {
		return nil, fmt.Errorf("processes of %s: systemctl show exited %d: %s", unit, res.ExitCode, res.Output())
	}
	cg := strings.TrimSpace(res.Stdout)
	if cg == "" {
		return nil, nil // no cgroup: nothing runs
	}
	for _, root := range cgroupRoots {
		dir := filepath.Join(root, filepath.Clean("/"+cg))
		if _, err := os.Stat(filepath.Join(dir, "cgroup.procs")); err != nil {
			continue
		}
		pids, err := cgroupProcs(dir)
		if err != nil {
			return nil, fmt.Errorf("processes of %s: %w", unit, err)
		}
		return pids, nil
	}
	return nil, nil // the cgroup is gone: nothing runs
}

// cgroupProcs reads the PIDs of the cgroup at dir and of every cgroup below it. A cgroup
// removed while it is read has no processes left.
func cgroupProcs(dir string) ([]int, error) {
	var out []int
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return err
		}
		if !d.IsDir() {
			return nil
		}
		f, err := os.Open(filepath.Join(p, "cgroup.procs"))
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err != nil {
			return err
		}
		defer f.Close()
		pids, err := ParsePIDs(f)
		out = append(out, pids...)
		return err
	})
	slices.Sort(out)
	return slices.Compact(out), err
}

// ParsePIDs reads a cgroup.procs file: one decimal PID a line.
func ParsePIDs(r io.Reader) ([]int, error) {
	var out []int
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" {
			continue
		}
		pid, err := strconv.Atoi(line)
		if err != nil || pid <= 0 {
			return out, fmt.Errorf("cgroup.procs: %q is not a PID", line)
		}
		out = append(out, pid)
	}
	return out, sc.Err()
}
