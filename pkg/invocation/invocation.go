// Package invocation says when this module process began. A module runs once per task
// (the service module runs its steps inside that one process), so everything with a time
// at or after Start belongs to this run: a pending record it wrote is not "from an
// earlier run", and a failure message quotes only the journal lines since then
// (`journalctl --since=@EPOCH`), not an earlier run's.
//
// The cost of the rule: another run for the same unit that wrote in the same moment
// counts as this one. Runs for one unit are serialized by its lock, so that is a run
// whose turn came while this one waited, and what it wrote is due either way.
package invocation

import "time"

// Start is when this process began (package initialisation). A variable so tests can
// place it.
var Start = time.Now()

// Since reports whether t is at or after Start: written by this run.
func Since(t time.Time) bool { return !t.Before(Start) }

// Epoch is Start in whole seconds since the epoch, rounded down so nothing of this run
// is left out: the form `journalctl --since=@EPOCH` takes.
func Epoch() int64 { return Start.Unix() }
