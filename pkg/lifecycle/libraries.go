package lifecycle

import (
	"context"
	"fmt"

	"github.com/richt/services/pkg/libmaps"
	"github.com/richt/services/pkg/reaction"
	"github.com/richt/services/pkg/systemd"
)

// Libraries finds the processes of a control group that map files replaced since they
// mapped them, and whether the manager (PID 1) does (libmaps.Finder).
type Libraries interface {
	Stale(ctx context.Context, group string) (unit, manager libmaps.Report, err error)
}

// LibraryScan is what a run read of its unit's mappings. The same reading decides a real
// run and check mode's prediction.
type LibraryScan struct {
	Group   systemd.Group
	Unit    libmaps.Report
	Manager libmaps.Report
	// Err is why the mappings could not be read; only a run whose restart_on names
	// libraries fails for it, the others report it as a warning.
	Err error
}

// How a unit's stale mappings are handled, as results report them (libraries.reaction).
const (
	LibrariesRestart  = "restart"
	LibrariesNotWired = "reported: restart_on does not name libraries"
	LibrariesRefused  = "reported: RefuseManualStop=yes"
)

// LibrariesResult is the result's `libraries`: the unit's processes that map replaced
// files (by PID, files sorted, capped, with their packages), how that is handled, and the
// manager's own stale files.
type LibrariesResult struct {
	Reaction string `json:"reaction,omitempty"`
	libmaps.Report
	Manager *libmaps.Report `json:"manager,omitempty"`
}

// scanLibraries reads the unit's mappings when it runs and is to run on; nil when not
// read (no scanner, a backend that cannot name the group, a unit that does not run).
func (d Deps) scanLibraries(ctx context.Context, w Want, trig reaction.Triggers, u systemd.Props) (*LibraryScan, error) {
	gr, ok := d.Systemd.(systemd.GroupReader)
	if d.Libraries == nil || !ok || !w.Running || u.LoadState != "loaded" || !u.Running() {
		return nil, nil
	}
	s := &LibraryScan{}
	var err error
	if s.Group, err = gr.Group(ctx, w.Unit); err == nil {
		s.Unit, s.Manager, err = d.Libraries.Stale(ctx, s.Group.ControlGroup)
	}
	if err != nil {
		if trig.WantsLibraries() {
			return nil, fmt.Errorf("restart_on names %s, and the files %s's processes map could not be read: %w", reaction.Libraries, w.Unit, err)
		}
		return &LibraryScan{Err: err}, nil
	}
	return s, nil
}

// librariesDue is trig with its libraries trigger changed when a process of the unit maps
// a replaced file and the unit may be restarted by hand.
func librariesDue(trig reaction.Triggers, s *LibraryScan) reaction.Triggers {
	if s == nil || s.Unit.Empty() || s.Group.RefuseManualStop || !trig.WantsLibraries() {
		return trig
	}
	return trig.LibrariesStale()
}

// librariesResult is the result's libraries for a plan; nil when nothing maps a replaced
// file.
func librariesResult(p Plan) *LibrariesResult {
	s := p.Observed.Libraries
	if s == nil || s.Err != nil || s.Unit.Empty() && s.Manager.Empty() {
		return nil
	}
	r := &LibrariesResult{Report: s.Unit}
	if !s.Manager.Empty() {
		m := s.Manager
		r.Manager = &m
	}
	switch {
	case s.Unit.Empty():
	case s.Group.RefuseManualStop:
		r.Reaction = LibrariesRefused
	case !p.Triggers.WantsLibraries():
		r.Reaction = LibrariesNotWired
	default:
		r.Reaction = LibrariesRestart
	}
	if r.Processes == nil {
		r.Processes = []libmaps.Process{}
	}
	return r
}

// libraryWarnings tells what a run leaves running on replaced files: a unit not wired to
// libraries, a unit that refuses a manual stop, the manager itself; the same in check mode
// and in a real run.
func libraryWarnings(p Plan, warn func(format string, args ...any)) {
	s, unit := p.Observed.Libraries, p.Want.Unit
	if s == nil {
		return
	}
	if s.Err != nil {
		warn("%s: could not read which files its processes map: %v", unit, s.Err)
		return
	}
	if !s.Unit.Empty() {
		switch {
		case s.Group.RefuseManualStop:
			warn("%s maps files replaced since its processes started and has RefuseManualStop=yes: not restarted, it runs the old code until it is restarted in a maintenance window or the host reboots: %s", unit, s.Unit.Summary())
		case !p.Triggers.WantsLibraries():
			warn("%s maps files replaced since its processes started: not restarted, since its restart_on does not name %s: %s", unit, reaction.Libraries, s.Unit.Summary())
		}
	}
	if !s.Manager.Empty() {
		warn("the service manager (PID 1) maps files replaced since it started: it runs the old code until `systemctl daemon-reexec` or a reboot, which no task here does: %s", s.Manager.Summary())
	}
}
