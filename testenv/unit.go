package testenv

import (
	"context"
	"strconv"
	"strings"
	"testing"
)

// UnitSnapshot is what systemd says about a unit at one moment, enough to tell afterwards
// which action a run took.
type UnitSnapshot struct {
	Unit          string
	ActiveState   string
	SubState      string
	UnitFileState string
	LoadState     string
	MainPID       int
	InvocationID  string
	// ExecMainStartTimestampMonotonic changes with every start of the main process.
	MainStart string
	// ExecReload is systemd's status of the unit's reload command, which names the PID and
	// start time of the last run: it changes with every reload through ExecReload=.
	ExecReload string
}

// Snapshot reads a unit's state with systemctl show.
func (t *Target) Snapshot(tb testing.TB, unit string) UnitSnapshot {
	tb.Helper()
	out := t.MustExec(tb, "systemctl", "show", "--property=ActiveState,SubState,UnitFileState,LoadState,MainPID,InvocationID,ExecMainStartTimestampMonotonic,ExecReload", "--", unit)
	s := UnitSnapshot{Unit: unit}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		k, v, _ := strings.Cut(line, "=")
		switch k {
		case "ActiveState":
			s.ActiveState = v
		case "SubState":
			s.SubState = v
		case "UnitFileState":
			s.UnitFileState = v
		case "LoadState":
			s.LoadState = v
		case "MainPID":
			s.MainPID, _ = strconv.Atoi(v)
		case "InvocationID":
			s.InvocationID = v
		case "ExecMainStartTimestampMonotonic":
			s.MainStart = v
		case "ExecReload":
			s.ExecReload = v
		}
	}
	return s
}

// Action is what happened to a unit between two snapshots.
type Action string

// Actions told apart by Classify.
const (
	Untouched Action = "untouched"
	Started   Action = "started"
	Restarted Action = "restarted"
	Reloaded  Action = "reloaded"
	Stopped   Action = "stopped"
)

// Classify tells from systemd's own properties what a run did to a unit: a new
// invocation ID or main PID on a unit that stayed active is a restart; the same process
// with a new run of its ExecReload= command is a reload; active from inactive is a start.
// A reload without ExecReload= (Type=notify-reload) leaves no trace here and reads as
// Untouched; check the service's own evidence for those.
func Classify(before, after UnitSnapshot) Action {
	wasActive := before.ActiveState == "active"
	isActive := after.ActiveState == "active"
	switch {
	case wasActive && !isActive:
		return Stopped
	case !wasActive && isActive:
		return Started
	case wasActive && isActive && (before.InvocationID != after.InvocationID || before.MainPID != after.MainPID):
		return Restarted
	case wasActive && isActive && before.ExecReload != after.ExecReload:
		return Reloaded
	}
	return Untouched
}

// DumpUnit returns `systemctl status` and the journal of a unit, for failure logs.
func (t *Target) DumpUnit(ctx context.Context, unit string) string {
	return t.transcript(ctx,
		[]string{"systemctl", "status", "--no-pager", "--full", "--", unit},
		[]string{"journalctl", "--no-pager", "-n", "30", "-u", unit})
}

// LogUnitOnFailure dumps the unit's status and journal into the test log if the test
// fails.
func (t *Target) LogUnitOnFailure(tb testing.TB, unit string) {
	tb.Cleanup(func() {
		if tb.Failed() {
			tb.Logf("unit %s at failure:\n%s", unit, t.DumpUnit(context.Background(), unit))
		}
	})
}
