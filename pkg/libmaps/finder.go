package libmaps

import (
	"context"

	"github.com/richt/services/pkg/runner"
)

// Finder reports, for one control group, which of its processes map replaced files, and
// whether the service manager (PID 1) does, each capped and with the files' packages.
type Finder struct {
	Scanner
	// Runner runs rpm for the files' packages; nil: no packages.
	Runner runner.Runner
}

// Stale is the unit's report (the processes of group) and the manager's. The packages are
// looked up once for both; a failed lookup leaves them out (the files still count).
func (f Finder) Stale(ctx context.Context, group string) (unit, manager Report, err error) {
	pids, err := f.PIDs(group)
	if err != nil {
		return unit, manager, err
	}
	procs, err := f.Scan(pids)
	if err != nil {
		return unit, manager, err
	}
	unit = Capped(procs)
	// PID 1 is never in a service's group; it is read as one more process. Only root may
	// read it: a user manager's run (scope user) reports no manager rather than fail.
	if procs, err := f.Scan([]int{1}); err == nil {
		manager = Capped(procs)
	}
	if f.Runner == nil || unit.Empty() && manager.Empty() {
		return unit, manager, nil
	}
	paths := append(unit.Paths(), manager.Paths()...)
	owners, _ := Owners(ctx, f.Runner, paths)
	return unit.WithPackages(owners), manager.WithPackages(owners), nil
}
