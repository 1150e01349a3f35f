package main

// The checks after every step, and the verdict and report at the end.

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"
)

// invariants are checked after the step and a converging run; each returned string is a
// violation.
func (s *soak) invariants(ctx context.Context, fault string) []string {
	var out []string
	exec := func(script string) string {
		res, err := s.t.Exec(ctx, "/bin/sh", "-c", script)
		if err != nil {
			return "error: " + err.Error()
		}
		return strings.TrimSpace(res.Stdout)
	}
	if dup := exec(`rpm -qa --qf '%{NAME}.%{ARCH}\n' | sort | uniq -d`); dup != "" {
		out = append(out, "more than one build of: "+dup)
	}
	if s.steps%10 == 0 {
		if c := exec(`dnf -q check 2>&1; echo "rc=$?"`); c != "rc=0" {
			out = append(out, "dnf check: "+c)
		}
	}
	if stray := exec(`find /etc/systemd/system /var/lib/richt /var/cache/richt -name '.*.richt-*' 2>/dev/null`); stray != "" {
		out = append(out, "temporary files left after a completed run: "+stray)
	}
	want := "demo-" + strings.TrimPrefix(s.version, "0:")
	if got := exec(`rpm -q demo`); got != want {
		out = append(out, fmt.Sprintf("installed %q, the last run asked for %q", got, want))
	}
	if st := exec(`systemctl is-active demo.service; systemctl is-enabled demo.service`); st != "active\nenabled" {
		out = append(out, "demo.service is "+strings.ReplaceAll(st, "\n", ", "))
	}
	if s.levelNow != s.level {
		out = append(out, "20-level.conf says "+s.levelNow+", the last run asked for "+s.level)
	}
	// No run fails over a pending record it cannot carry out but the one a corrupt record
	// was written for: a run refused before acting records nothing, so no
	// record of a reload the unit cannot do is left for later runs to fail on.
	for _, r := range s.parsed {
		msg := fmt.Sprint(r["msg"])
		if r["failed"] == true && fault != "corrupt-record" && (strings.Contains(msg, "cannot be carried out as recorded") || strings.Contains(msg, "Job type reload is not applicable")) {
			out = append(out, "a run failed over a pending record a refused run left: "+msg)
		}
	}
	if exec(`test -e `+noReloadDropIn+` && echo left`) == "left" {
		out = append(out, "the refused-reload fault's drop-in is still there")
	}
	if nd := exec(`systemctl show -p NeedDaemonReload --value demo.service`); nd != "no" {
		out = append(out, "the manager still needs a reload: NeedDaemonReload="+nd)
	}
	// Every reaction owed was delivered, none twice, and the running process is the
	// package's and the level's the service asked for.
	lost, unowed, trail := s.led.take()
	var reactions []string
	for _, l := range lost {
		reactions = append(reactions, "lost: "+l)
	}
	if len(unowed) > 0 {
		if slices.Contains(killingFaults, fault) {
			s.repeated += len(unowed)
		} else {
			reactions = append(reactions, "doubled: reactions nothing owed: "+strings.Join(unowed, ", "))
		}
	}
	if len(reactions) > 0 {
		out = append(out, strings.Join(reactions, "; ")+"\n  the runs and their events: "+strings.Join(trail, "\n  ")+s.failedRuns())
	}
	ver := strings.TrimSuffix(strings.TrimPrefix(s.version, "0:"), "-1.noarch")
	if e, ok := s.led.last("start"); !ok || e.version != ver {
		out = append(out, fmt.Sprintf("the running process was not started on version %s: last start %v", ver, e))
	}
	if e, ok := s.led.last("start", "reload"); !ok || e.level != s.level {
		out = append(out, fmt.Sprintf("the unit did not react to level %s: last reaction %v", s.level, e))
	}
	// The journal (the units' outputs, the modules' logs) since the last read.
	j := exec(fmt.Sprintf(`journalctl --no-pager -o cat --show-cursor --after-cursor=%q 2>/dev/null || journalctl --no-pager -o cat --show-cursor -b`, s.cursor))
	if i := strings.LastIndex(j, "-- cursor: "); i >= 0 {
		s.cursor = strings.TrimSpace(j[i+len("-- cursor: "):])
	}
	s.outputs = append(s.outputs, j)
	if len(out) > 0 {
		// A violation's report carries the step's journal: what the modules logged and
		// what the manager did, without which a seed must be replayed to be understood.
		out[len(out)-1] += "\n  the step's journal:\n    " + strings.ReplaceAll(tailLines(j, 80), "\n", "\n    ")
	}
	for _, o := range s.outputs {
		if strings.Contains(o, "s3cr3t-soak") {
			i := strings.Index(o, "s3cr3t-soak")
			out = append(out, "the sensitive drop-in's secret is in an output: ..."+o[max(0, i-200):min(len(o), i+60)])
			break
		}
	}
	s.outputs = s.outputs[:0]
	return out
}

// verdict adds the violations of the run as a whole: a fault kind that never landed, and
// a secret check that never saw a diff.
func (s *soak) verdict() {
	if len(s.violations) > 0 {
		return // the soak stopped at the first step that failed
	}
	for _, k := range faultKinds {
		if s.landed[k] == 0 {
			s.violations = append(s.violations, fmt.Sprintf("fault %s never landed (drawn %d times): the soak did not exercise it", k, s.drawn[k]))
		}
	}
	if s.diffs == 0 {
		s.violations = append(s.violations, "no result showed a diff of the level drop-in: the secret check read no diff")
	}
	if s.rbc.healthy == 0 {
		s.violations = append(s.violations, fmt.Sprintf("no run of the rollback service rolled back healthy (%d rollback steps): the soak did not exercise rollback", s.rbSteps()))
	}
}

// rbSteps is the number of rollback steps.
func (s *soak) rbSteps() int {
	n := 0
	for _, op := range rollbackOps {
		n += s.rbc.steps[op]
	}
	return n
}

// rollbackLine says what the rollback service's steps did, for the report and the note.
func (s *soak) rollbackLine() string {
	return fmt.Sprintf("%d rollback steps (good %d, broken build %d, broken config %d), %d rollbacks (%d healthy), %d kills during a rollback (%d during the forward change, %d outside the record)",
		s.rbSteps(), s.rbc.steps["rollback-good"], s.rbc.steps["rollback-build"], s.rbc.steps["rollback-config"],
		s.rbc.rollbacks, s.rbc.healthy, s.rbc.killsInRollback, s.rbc.killsInForward, s.rbc.killsOutside)
}

func (s *soak) report(seed int64, ran time.Duration, at string) {
	drawn, landed := 0, 0
	var kinds []string
	fmt.Println("\n| fault | drawn | landed |\n| --- | ---: | ---: |")
	for _, k := range faultKinds {
		fmt.Printf("| %s | %d | %d |\n", k, s.drawn[k], s.landed[k])
		drawn += s.drawn[k]
		landed += s.landed[k]
		kinds = append(kinds, fmt.Sprintf("%s %d/%d", k, s.drawn[k], s.landed[k]))
	}
	fmt.Printf("\nricht-soak: seed %d: %d steps, %d module runs, faults drawn/landed %d/%d; restarts %d (owed %d), reloads %d (owed %d), %d served again after a kill; %d results with a diff; %d invariant violations\n",
		seed, s.steps, s.runs, drawn, landed, s.led.starts, s.led.owedRestarts, s.led.reloads, s.led.owedReloads, s.repeated, s.diffs, len(s.violations))
	fmt.Printf("richt-soak: rollback service: %s\n", s.rollbackLine())
	fmt.Println("\nFor docs/reliability.md:\n\n| generation | seed | ran | steps | module runs | faults drawn/landed (by kind) | restarts / reloads (owed) | violations |\n| --- | ---: | --- | ---: | ---: | --- | --- | ---: |")
	fmt.Printf("| %s | %d | %s, at %s | %d | %d | %d/%d: %s | %d (%d) / %d (%d), %d again after a kill | %d |\n",
		generation(), seed, ran.Round(time.Second), at, s.steps, s.runs, drawn, landed, strings.Join(kinds, ", "),
		s.led.starts, s.led.owedRestarts, s.led.reloads, s.led.owedReloads, s.repeated, len(s.violations))
	fmt.Printf("\nRollback service (for the note): %s.\n", s.rollbackLine())
	for _, v := range s.violations {
		fmt.Printf("VIOLATION (seed %d): %s\n", seed, v)
	}
}

// failedRuns names the step's failed module runs with their messages, for a violation's
// report.
func (s *soak) failedRuns() string {
	var b strings.Builder
	for i, r := range s.parsed {
		if r["failed"] == true {
			fmt.Fprintf(&b, "\n  run %d failed: %v", i+1, r["msg"])
		}
	}
	return b.String()
}

// tailLines is the last n lines of text.
func tailLines(text string, n int) string {
	lines := strings.Split(strings.TrimRight(text, "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}
