package molecule

import (
	"bufio"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
)

// systemd's catalog message IDs for unit jobs (sd-messages.h): the manager logs one of
// these, with UNIT= and JOB_TYPE=, for every job it finishes.
const (
	msgUnitStarted  = "39f53479d3a045ac8e11786248231fbf"
	msgUnitStopped  = "9d1aaa27d60140bd96365438aad20286"
	msgUnitReloaded = "7b05ebc668384222baa8881179cfda54"
)

// UnitEvents counts what happened to one unit during an action.
type UnitEvents struct {
	Started, Restarted, Reloaded, Stopped int
}

// None reports whether nothing happened.
func (e UnitEvents) None() bool { return e == UnitEvents{} }

// Outcome names what happened, for an upgrade's expectation: "untouched", or the one
// kind of event when there was exactly one event, else a list ("restarted 2").
func (e UnitEvents) Outcome() string {
	if e.None() {
		return "untouched"
	}
	return e.String()
}

// String lists the counts that are not zero: "restarted 1, reloaded 2".
func (e UnitEvents) String() string {
	var parts []string
	for _, p := range []struct {
		n    int
		name string
	}{{e.Started, "started"}, {e.Restarted, "restarted"}, {e.Reloaded, "reloaded"}, {e.Stopped, "stopped"}} {
		if p.n > 0 {
			parts = append(parts, fmt.Sprintf("%s %d", p.name, p.n))
		}
	}
	return strings.Join(parts, ", ")
}

// ParseJournal reads `journalctl -o json` lines of the service manager and counts, per
// unit, finished start, restart, reload and stop jobs (scopes and slices left out). A restart job logs "Stopped" with
// JOB_TYPE=restart and then "Started" (as a start): the pair counts as one restart. Jobs
// that did not finish "done" count as nothing (the play's own failure tells of them).
func ParseJournal(out string) map[string]UnitEvents {
	ev := map[string]UnitEvents{}
	restarting := map[string]bool{}
	sc := bufio.NewScanner(strings.NewReader(out))
	sc.Buffer(make([]byte, 1<<20), len(out)+1) // no line too long to reach the end
	for sc.Scan() {
		var e struct {
			ID     string `json:"MESSAGE_ID"`
			Unit   string `json:"UNIT"`
			Type   string `json:"JOB_TYPE"`
			Result string `json:"JOB_RESULT"`
		}
		if json.Unmarshal(sc.Bytes(), &e) != nil || e.Unit == "" || transient(e.Unit) {
			continue
		}
		if e.Result != "" && e.Result != "done" {
			continue
		}
		u := ev[e.Unit]
		switch e.ID {
		case msgUnitStarted:
			if restarting[e.Unit] {
				u.Restarted++
				restarting[e.Unit] = false
			} else {
				u.Started++
			}
		case msgUnitStopped:
			if e.Type == "restart" || e.Type == "try-restart" {
				restarting[e.Unit] = true
			} else {
				u.Stopped++
			}
		case msgUnitReloaded:
			u.Reloaded++
		default:
			continue
		}
		ev[e.Unit] = u
	}
	// A restart whose start never came is a stop.
	for unit, pending := range restarting {
		if pending {
			u := ev[unit]
			u.Stopped++
			ev[unit] = u
		}
	}
	for unit, u := range ev {
		if u.None() {
			delete(ev, unit)
		}
	}
	return ev
}

// transient tells units that group processes (scopes, slices) from the daemons a role
// manages: a module that runs DNF in a scope of its own starts one per run, which says
// nothing about the role's services.
func transient(unit string) bool {
	return strings.HasSuffix(unit, ".scope") || strings.HasSuffix(unit, ".slice")
}

// FormatEvents is one line per unit, sorted, or a line saying nothing happened.
func FormatEvents(instance string, ev map[string]UnitEvents) []string {
	if len(ev) == 0 {
		return []string{fmt.Sprintf("%s: no unit started, restarted, reloaded or stopped", instance)}
	}
	units := make([]string, 0, len(ev))
	for u := range ev {
		units = append(units, u)
	}
	sort.Strings(units)
	lines := make([]string, 0, len(units))
	for _, u := range units {
		lines = append(lines, fmt.Sprintf("%s: %s %s", instance, u, ev[u]))
	}
	return lines
}
