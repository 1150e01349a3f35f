package main

import (
	"fmt"
	"strings"
)

// The soak counts the demo unit's restarts and reloads exactly: the unit's ExecStartPre
// and its first ExecReload (marker, written into the target at the start) append a line to
// the timeline file, naming the package version on disk and the DEMO_LEVEL the manager
// gave the unit; the soak's packages append one in %pre when they are installed. The lines
// are written before the start or reload job completes, so a line is there once the module
// that caused it returned: no settling, no timestamps.
const (
	timelineFile = "/run/demo/events"
	// pendingRecordPath is demo.service's pending reaction record (pkg/durable).
	pendingRecordPath = "/var/lib/richt/pending/demo.service.json"
	markerPath        = "/usr/local/sbin/soak-mark"
	marker            = `#!/bin/sh
mkdir -p /run/demo
echo "soak-$1 version=$(cat /usr/share/demo/version 2>/dev/null) level=$DEMO_LEVEL" >> ` + timelineFile + "\n"
)

// An event is one timeline line: a package installed (version), or the unit started or
// reloaded (with the version on disk and the level it was given).
type event struct {
	kind, version, level string
}

func (e event) String() string {
	if e.kind == "install" {
		return "install " + e.version
	}
	return fmt.Sprintf("%s (version %s, level %s)", e.kind, e.version, e.level)
}

// parseEvent reads one timeline line; ok is false for the demo daemon's own lines.
func parseEvent(line string) (event, bool) {
	f := strings.Fields(line)
	if len(f) == 0 {
		return event{}, false
	}
	switch f[0] {
	case "soak-install":
		if len(f) == 2 {
			return event{kind: "install", version: f[1]}, true
		}
	case "soak-start", "soak-reload":
		e := event{kind: strings.TrimPrefix(f[0], "soak-")}
		for _, kv := range f[1:] {
			if v, ok := strings.CutPrefix(kv, "version="); ok {
				e.version = v
			} else if v, ok := strings.CutPrefix(kv, "level="); ok {
				e.level = v
			}
		}
		return e, true
	}
	return event{}, false
}

// An obligation is a reaction the unit owes: a restart, served by the first start after
// since, or a reload, served by the first reload or start after since (a restart
// delivers what a reload would).
type obligation struct {
	kind  string
	since int
	why   string
	// level, for a reload owed by the level's drop-in: only a reaction that gave the unit
	// this level serves it (a restart in the same run before the drop-in was written, such
	// as a package's %postun, does not).
	level string
}

// run is what the ledger needs to know of one module run (or of the soak acting as an
// operator) to derive what it owed.
type run struct {
	module string // a module's name, or "operator" for a systemctl restart by hand
	check  bool
	failed bool
	// recorded is the reaction a failed systemd_lifecycle run left written as pending
	// ("restart", "reload" or ""): owed, as the next run carries it out.
	recorded string
	// from is the index of the first event the run could have written.
	from int
	// levelChanged: 20-level.conf (the drop-in with reload: true) differs after the run,
	// and holds level.
	levelChanged bool
	level        string
}

// ledger holds this boot's events and the reactions owed and not yet served.
type ledger struct {
	events    []event
	installed string // the version the last install event (or the target) says is on disk
	open      []obligation
	settled   int      // events before this index were matched against obligations
	boots     int      // reboots so far: a run across one wrote its events from index 0
	unowed    []string // reactions that served no obligation since the last take
	trail     []string // the runs and their events since the last take, for a violation's report
	// restartsOnUpgradeFrom says whether replacing a version restarts the unit inside the
	// package transaction (an EL package's %postun with restart).
	restartsOnUpgradeFrom func(version string) bool
	// Totals for the report.
	starts, reloads, owedRestarts, owedReloads int
}

// add appends events read from the timeline.
func (l *ledger) add(evs []event) { l.events = append(l.events, evs...) }

func (l *ledger) owe(kind string, since int, why string) {
	l.open = append(l.open, obligation{kind: kind, since: since, why: why})
	if kind == "restart" {
		l.owedRestarts++
	} else {
		l.owedReloads++
	}
}

// account derives what r owed from the events it wrote and what it changed, then matches
// the reactions written since the last call against everything owed:
//   - each package install owes one restart when the service module ran it (its default
//     wiring: a package change restarts the process), or when the version it replaced
//     restarts its unit from the transaction (then rpm_exact alone owes it too, and the
//     service module must not restart a second time);
//   - the service module's change of the reload: true drop-in owes one reload, served by a
//     reload or a start that gave the unit the new level; a start that serves nothing but
//     a reload is a reload turned into a restart (a restart owed as well serves it, as
//     restart beats reload);
//   - systemd_lifecycle's restart_on (a trigger that always reports a change) owes one
//     restart, when the run did not fail; a run that failed owes what it left recorded as
//     pending (a run refused before acting records, and owes, nothing);
//   - the soak's own systemctl restart (operator) owes one restart.
//
// Check mode owes nothing: every reaction it causes is unowed.
func (l *ledger) account(r run) {
	var evs []string
	for i := max(r.from, 0); i < len(l.events); i++ {
		evs = append(evs, fmt.Sprintf("#%d %s", i, l.events[i]))
	}
	l.trail = append(l.trail, fmt.Sprintf("%s%s%s%s: [%s]", r.module, map[bool]string{true: " (check mode)"}[r.check],
		map[bool]string{true: " failed"}[r.failed], map[bool]string{true: " changed the level"}[r.levelChanged], strings.Join(evs, "; ")))
	if !r.check {
		for i := max(r.from, 0); i < len(l.events); i++ {
			e := l.events[i]
			if e.kind != "install" {
				continue
			}
			if r.module == "service" || l.restartsOnUpgradeFrom(l.installed) {
				l.owe("restart", i, fmt.Sprintf("%s installed %s over %s", r.module, e.version, l.installed))
			}
			l.installed = e.version
		}
		// Owed by the run as a whole: any reaction it wrote may serve it.
		switch since := r.from - 1; {
		case r.module == "service" && r.levelChanged:
			// A reload owed for a level the drop-in no longer holds is owed no more.
			keep := l.open[:0]
			for _, o := range l.open {
				if o.level == "" {
					keep = append(keep, o)
				}
			}
			l.open = keep
			l.owe("reload", since, "service changed the reload: true drop-in to level "+r.level)
			l.open[len(l.open)-1].level = r.level
		case r.module == "systemd_lifecycle" && !r.failed:
			l.owe("restart", since, "systemd_lifecycle's restart_on")
		case r.module == "systemd_lifecycle" && r.recorded != "":
			l.owe(r.recorded, since, "the "+r.recorded+" a failed systemd_lifecycle run left pending")
		case r.module == "operator":
			l.owe("restart", since, "the soak's systemctl restart")
		}
	} else {
		for _, e := range l.events[max(r.from, 0):] {
			if e.kind == "install" {
				l.installed = e.version
			}
		}
	}
	l.settle()
}

// settle matches every reaction not yet matched: it serves all obligations owed before it
// (of its kind: a start serves restarts and reloads, a reload only reloads); one that
// serves none is unowed.
func (l *ledger) settle() {
	for ; l.settled < len(l.events); l.settled++ {
		i, e := l.settled, l.events[l.settled]
		switch e.kind {
		case "start":
			l.starts++
		case "reload":
			l.reloads++
		default:
			continue
		}
		served, restart := false, false
		keep := l.open[:0]
		for _, o := range l.open {
			if o.since < i && (e.kind == "start" || o.kind == "reload") && (o.level == "" || o.level == e.level) {
				served = true
				restart = restart || o.kind == "restart"
				continue
			}
			keep = append(keep, o)
		}
		l.open = keep
		switch {
		case !served:
			l.unowed = append(l.unowed, fmt.Sprintf("%s #%d", e, i))
		case e.kind == "start" && !restart:
			l.unowed = append(l.unowed, fmt.Sprintf("%s #%d, where only a reload was owed (a reload turned into a restart)", e, i))
		}
	}
}

// reboot starts a new boot: /run, and with it the timeline, is empty again; the start at
// boot serves whatever was owed before, and is owed itself.
func (l *ledger) reboot(installed string) {
	l.events, l.settled, l.open = nil, 0, nil
	l.boots++
	l.trail = append(l.trail, "reboot")
	l.installed = installed
	l.owe("restart", -1, "the boot")
}

// take returns the obligations still open (lost reactions), the unowed reactions and the
// trail of runs, and forgets them.
func (l *ledger) take() (lost, unowed, trail []string) {
	for _, o := range l.open {
		lost = append(lost, fmt.Sprintf("a %s owed since event #%d (%s)", o.kind, o.since, o.why))
	}
	unowed, trail = l.unowed, l.trail
	l.open, l.unowed, l.trail = nil, nil, nil
	return lost, unowed, trail
}

// last returns the last event of one of kinds, if any.
func (l *ledger) last(kinds ...string) (event, bool) {
	for i := len(l.events) - 1; i >= 0; i-- {
		for _, k := range kinds {
			if l.events[i].kind == k {
				return l.events[i], true
			}
		}
	}
	return event{}, false
}
