package main

// One module run on the target, its accounting, and the service converging after a step.

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/richt/services/pkg/durable"
)

// snapshot reads what the timeline gained and the level drop-in's level; it reports
// whether the level changed since the last snapshot.
func (s *soak) snapshot(ctx context.Context) (levelChanged bool) {
	res, err := s.t.Exec(ctx, "/bin/sh", "-c", fmt.Sprintf(`sed -n 's/^Environment=DEMO_LEVEL=//p' /etc/systemd/system/demo.service.d/20-level.conf 2>/dev/null; echo ---; tail -n +%d %s 2>/dev/null`, s.lines+1, timelineFile))
	if err != nil {
		s.violations = append(s.violations, "read the timeline: "+err.Error())
		return false
	}
	level, rest, _ := strings.Cut(res.Stdout, "---\n")
	level = strings.TrimSpace(level)
	levelChanged = level != s.levelNow
	s.levelNow = level
	var evs []event
	for _, l := range strings.SplitAfter(rest, "\n") {
		if !strings.HasSuffix(l, "\n") {
			break // a line being written: read it next time
		}
		s.lines++
		if e, ok := parseEvent(l); ok {
			evs = append(evs, e)
		}
	}
	s.led.add(evs)
	return levelChanged
}

// accounted runs f, a module run in one way or another, and accounts for what it owed.
// A systemd_lifecycle run that failed after writing its reaction as pending still owes
// it (the next run carries it out): the record is read before and after such a run.
func (s *soak) accounted(ctx context.Context, module string, check bool, f func() (failed bool)) {
	from, boots := len(s.led.events), s.led.boots
	var before string
	lifecycle := module == "systemd_lifecycle" && !check
	if lifecycle {
		before = s.pendingRecord(ctx)
	}
	failed := f()
	if s.led.boots != boots {
		from = -1 // the start at boot, and whatever came after, belong to this run
	}
	var recorded string
	if lifecycle && failed {
		recorded = recordedBy(before, s.pendingRecord(ctx))
	}
	changed := s.snapshot(ctx)
	s.led.account(run{module: module, check: check, failed: failed, recorded: recorded, from: from, levelChanged: changed, level: s.levelNow})
}

// pendingRecord is demo.service's pending reaction record as it is on the target, "" when
// there is none.
func (s *soak) pendingRecord(ctx context.Context) string {
	res, err := s.t.Exec(ctx, "/bin/sh", "-c", "cat "+pendingRecordPath+" 2>/dev/null")
	if err != nil {
		return ""
	}
	return res.Stdout
}

// recordedBy is the reaction a run left pending: the record after it, when the run wrote
// or stamped it (it differs from the one before); "" otherwise. A record the run did not
// touch was accounted for by the run that wrote it.
func recordedBy(before, after string) string {
	if after == "" || after == before {
		return ""
	}
	var p durable.Pending
	if err := json.Unmarshal([]byte(after), &p); err != nil {
		return ""
	}
	switch p.Reaction {
	case "restart", "reload":
		return p.Reaction
	}
	return ""
}

// run runs a module in the target with diff on and keeps its output.
func (s *soak) run(ctx context.Context, module string, args map[string]any) (map[string]any, error) {
	s.runs++
	args["_ansible_diff"] = true
	ctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	out, err := s.t.RunModuleRaw(ctx, s.bins[module], args)
	s.outputs = append(s.outputs, out)
	if err != nil {
		return nil, err
	}
	return s.result(module, out)
}

// result parses a module's output: one JSON object, whatever happened to the run (a module
// that was not killed always answers). It counts the result's rollback, and keeps it for
// the step's judgement (parsed).
func (s *soak) result(module, out string) (map[string]any, error) {
	var r map[string]any
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		return nil, fmt.Errorf("%s: not one JSON object: %v: %q", module, err, out)
	}
	if d, _ := json.Marshal(r["diff"]); strings.Contains(string(d), "DEMO_LEVEL=") {
		s.diffs++
	}
	s.countRollback(r)
	s.parsed = append(s.parsed, r)
	return r, nil
}

// converge runs the service module with what the soak last asked for, until it succeeds
// (a run may meet the leftovers of a fault: a transaction still settling, a lock). It
// returns the first attempt's result.
func (s *soak) converge(ctx context.Context, why string) (first map[string]any, err error) {
	var last string
	for attempt := 0; attempt < 5; attempt++ {
		var r map[string]any
		var rerr error
		s.accounted(ctx, "service", false, func() bool {
			r, rerr = s.run(ctx, "service", service(s.version, s.level))
			return rerr != nil || r["failed"] == true
		})
		if attempt == 0 {
			first = r
		}
		if rerr == nil && r["failed"] != true {
			return first, nil
		}
		last = fmt.Sprint(rerr, r["msg"])
		time.Sleep(2 * time.Second)
	}
	return first, fmt.Errorf("%s: the service does not converge: %s", why, last)
}
