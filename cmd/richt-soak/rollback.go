package main

// The rollback service: a second service, soakrb, that the service module runs with
// rollback: true. Its steps move it to a good build, to a build whose unit cannot start,
// or to a config that moves the daemon away from its health probe; after every step it is
// all new or all old, and running.

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/richt/services/testenv"
)

// The rollback service's names. It is its own package, unit and config, so that demo's
// timeline and ledger never see it: its daemon writes no timeline line and its package no
// install line.
const (
	rbName     = "soakrb"
	rbUnit     = "soakrb.service"
	rbConfPath = "/etc/soakrb.conf"
	rbRecords  = "/var/lib/richt/rollback"
	// rbBroken is the build whose unit cannot start (its ExecStartPre fails, as
	// fixtures.DemoBroken's does).
	rbBroken = "3.0"
	// rbMoved is the config that makes the daemon listen on another port: the unit starts
	// and stays active, the probe finds nobody and fails once the process timeout passes.
	rbMoved = "moved"
	// rbTimeout is the process step's deadline, and so how long a moved config takes to
	// fail its probe: long enough for a start on a loaded host, short for a soak.
	rbTimeout = "15s"
	rbPort    = 18081
)

// rbGood are the builds that start; rbGoodConfigs the configs the probe answers under.
var (
	rbGood        = []string{"1.0", "2.0"}
	rbGoodConfigs = []string{"a", "b"}
)

// rollbackOps are the steps that run the rollback service: to a good state, to the
// broken build, to the moved config.
var rollbackOps = []string{"rollback-good", "rollback-build", "rollback-config"}

// rbState is a state of the rollback service: its build's version and its config's name.
type rbState struct{ Version, Config string }

func (st rbState) String() string { return st.Version + "/" + st.Config }

// good: the state runs and answers its probe.
func (st rbState) good() bool { return st.Version != rbBroken && st.Config != rbMoved }

// banner is what the daemon of st greets a connection with: the build it was started from
// and the config it read, so an answer proves the running process is the installed one.
func (st rbState) banner() string { return fmt.Sprintf("soakrb %s %s ready", st.Version, st.Config) }

// rbConfig is the content of the config called name: the port the daemon listens on, and
// a note it puts in its greeting.
func rbConfig(name string) string {
	port := rbPort
	if name == rbMoved {
		port = rbPort + 1
	}
	return fmt.Sprintf("port=%d\nnote=%s\n", port, name)
}

// rbConfigName is the name of the config whose content is content.
func rbConfigName(content string) string {
	if strings.TrimSpace(content) == "" {
		return "(none)"
	}
	for _, n := range append(slices.Clone(rbGoodConfigs), rbMoved) {
		if strings.TrimSpace(content) == strings.TrimSpace(rbConfig(n)) {
			return n
		}
	}
	return fmt.Sprintf("(unknown: %q)", content)
}

// rbDaemon is the rollback service's program: DemoDaemon's shape (a shell loop, and
// systemd-socket-activate greeting every connection), reading its port and note from the
// config when it starts.
const rbDaemon = `#!/bin/sh
port=$(sed -n 's/^port=//p' ` + rbConfPath + ` 2>/dev/null)
note=$(sed -n 's/^note=//p' ` + rbConfPath + ` 2>/dev/null)
v=$(cat /usr/share/soakrb/version)
trap 'exit 0' TERM
systemd-socket-activate --listen=127.0.0.1:${port:-18081} --accept --inetd /bin/echo "soakrb $v ${note:-none} ready" >/dev/null 2>&1 &
while :; do sleep 1 & wait $!; done
`

// rbPackage is the rollback service's package at version, built like fixtures.DemoPackage
// under its own name and paths (demo's would conflict), with a %pre that takes a second as
// soakPackage's does, so a fault during its transaction meets DNF at work. rbBroken's unit
// cannot start, as fixtures.DemoBroken's.
func rbPackage(version string) testenv.Package {
	pre := ""
	if version == rbBroken {
		pre = `ExecStartPre=/bin/sh -c 'echo "soakrb ` + version + `: configuration check failed" >&2; exit 1'` + "\n"
	}
	unit := fmt.Sprintf("[Unit]\nDescription=richt soak rollback daemon %s\n\n[Service]\nType=simple\n%sExecStart=/usr/bin/soakrb-daemon\n\n[Install]\nWantedBy=multi-user.target\n", version, pre)
	return testenv.Package{
		Name:    rbName,
		Version: version,
		Files: map[string]testenv.File{
			"/usr/bin/soakrb-daemon":            {Content: rbDaemon, Mode: 0o755},
			"/usr/lib/systemd/system/" + rbUnit: {Content: unit, Mode: 0o644},
			"/usr/share/" + rbName + "/version": {Content: version + "\n", Mode: 0o644},
		},
		Scriptlets: map[string]string{"pre": "sleep 1"},
	}
}

// rollbackService is the rollback service asked to hold st: the package at its build, the
// config, the process restarted for either and probed on the good configs' port.
func rollbackService(st rbState) map[string]any {
	return map[string]any{
		"name":     rbName,
		"rollback": true,
		"packages": []any{map[string]any{"name": rbName, "version": "0:" + st.Version + "-1.noarch"}},
		"configs":  []any{map[string]any{"name": "conf", "path": rbConfPath, "content": rbConfig(st.Config)}},
		"processes": []any{map[string]any{"unit": rbUnit, "enabled": true, "timeout": rbTimeout,
			"restart_on": []any{"package:" + rbName, "config:conf"},
			"health":     map[string]any{"banner": fmt.Sprintf("127.0.0.1:%d", rbPort), "expect": "ready"}}},
	}
}

// rbDying are the faults that end the rollback service's run where they land: the record
// it leaves holds the phase the run was in.
var rbDying = []string{"kill-module", "stop-caller", "reboot", "power-loss", "kill-rollback"}

// rbObservation is what the soak reads of the rollback service on the target.
type rbObservation struct {
	Builds []string // the installed versions of the package: one when all is well
	Config string   // the config file's content; "" when missing
	Unit   string   // is-active and is-enabled: "active enabled" when all is well
	Answer string   // what the probe's address greeted with
	// Left is what is in the records' directory: nothing once a run ended (well, or
	// rolled back and healthy).
	Left []string
}

// rbObserve prints an rbObservation's parts between "@@" lines. The greeting is read
// with bash's /dev/tcp, tried for a few seconds.
const rbObserve = `rpm -qa --qf '%{NAME} %{VERSION}\n' | sed -n 's/^soakrb //p' | sort | tr '\n' ' '; echo
echo @@
cat ` + rbConfPath + ` 2>/dev/null
echo @@
echo $(systemctl is-active ` + rbUnit + `) $(systemctl is-enabled ` + rbUnit + ` 2>/dev/null)
echo @@
i=0; a=; while [ $i -lt 25 ]; do a=$(timeout 3 bash -c 'cat </dev/tcp/127.0.0.1/18081' 2>/dev/null); [ -n "$a" ] && break; i=$((i+1)); sleep 0.2; done; echo "$a"
echo @@
ls -A ` + rbRecords + ` 2>/dev/null
`

// parseObservation reads rbObserve's output.
func parseObservation(out string) (rbObservation, error) {
	parts := strings.Split(out, "@@\n")
	if len(parts) != 5 {
		return rbObservation{}, fmt.Errorf("the rollback service's observation has %d parts, not 5: %q", len(parts), out)
	}
	return rbObservation{
		Builds: strings.Fields(parts[0]),
		Config: parts[1],
		Unit:   strings.TrimSpace(parts[2]),
		Answer: strings.TrimSpace(parts[3]),
		Left:   strings.Fields(parts[4]),
	}, nil
}

// judgeRollback judges the rollback service as observed: it holds one of allowed, all
// new or all old (one build, and the config that belongs with it; never the broken build
// or the moved config), its unit active and enabled, the process of that state answering
// the probe; nothing in the records' directory unless recordAllowed. held is the state it
// holds, ok whether that is one of allowed.
func judgeRollback(allowed []rbState, o rbObservation, recordAllowed bool) (held rbState, ok bool, out []string) {
	if len(o.Builds) != 1 {
		out = append(out, fmt.Sprintf("%s has %d builds installed (%s), where one of %v belongs", rbName, len(o.Builds), strings.Join(o.Builds, ", "), allowed))
	} else {
		held = rbState{o.Builds[0], rbConfigName(o.Config)}
		ok = slices.Contains(allowed, held)
		switch {
		case ok:
		case held.Version == rbBroken:
			out = append(out, fmt.Sprintf("the broken build %s is installed (with config %s); allowed: %v", rbBroken, held.Config, allowed))
		case held.Config == rbMoved:
			out = append(out, fmt.Sprintf("the config that fails the probe is in place (with build %s); allowed: %v", held.Version, allowed))
		case slices.ContainsFunc(allowed, func(a rbState) bool { return a.Version == held.Version || a.Config == held.Config }):
			out = append(out, fmt.Sprintf("neither all new nor all old: build %s with config %s; allowed: %v", held.Version, held.Config, allowed))
		default:
			out = append(out, fmt.Sprintf("holds build %s with config %s, where one of %v belongs", held.Version, held.Config, allowed))
		}
	}
	if o.Unit != "active enabled" {
		out = append(out, fmt.Sprintf("%s is %q, not active and enabled", rbUnit, o.Unit))
	}
	if ok && o.Answer != held.banner() {
		out = append(out, fmt.Sprintf("the probe's address answers %q, not %q (the process of the installed build and config)", o.Answer, held.banner()))
	}
	if !recordAllowed && len(o.Left) > 0 {
		out = append(out, "left in "+rbRecords+" after a run that ended: "+strings.Join(o.Left, " "))
	}
	return held, ok, out
}

// judgeResult judges a rollback service run that was not killed, asked for st: check
// mode and a good state succeed; a broken state fails with rolled_back healthy and the
// message that says so.
func judgeResult(st rbState, check bool, r map[string]any) []string {
	if r == nil {
		return []string{"no result"}
	}
	failed := r["failed"] == true
	msg := fmt.Sprint(r["msg"])
	if check || st.good() {
		if failed {
			return []string{fmt.Sprintf("the run to %s failed: %s", st, msg)}
		}
		return nil
	}
	rb, _ := r["rolled_back"].(map[string]any)
	var out []string
	switch {
	case !failed:
		out = append(out, fmt.Sprintf("the run to the broken %s succeeded", st))
	case rb == nil:
		out = append(out, fmt.Sprintf("the run to the broken %s failed without rolled_back: %s", st, msg))
	case rb["healthy"] != true:
		out = append(out, fmt.Sprintf("the rollback from the broken %s is not healthy (failed at %v): %s", st, rb["failed"], msg))
	case !strings.Contains(msg, "the previous state is back and healthy"):
		out = append(out, fmt.Sprintf("the rolled-back run's message does not say the previous state is back and healthy: %s", msg))
	}
	return out
}

// expectedState is the state the rollback service holds after a run asked for st from
// prev (the last good state): st when it is good and the run succeeded outside check
// mode, else prev.
func expectedState(prev, st rbState, check bool, r map[string]any) rbState {
	if !check && st.good() && r != nil && r["failed"] != true {
		return st
	}
	return prev
}

// rbCounts are the rollback service's numbers for the report.
type rbCounts struct {
	steps map[string]int // by op
	// rollbacks are the results with rolled_back (every run of the service: steps, the
	// runs after a fault, concurrent runs); healthy those whose rollback was.
	rollbacks, healthy int
	// The dying faults that landed, by the phase the record they left was in: restoring
	// (the kill landed during a rollback), changing (during the forward change), none
	// (before the record was written or after the run removed it).
	killsInRollback, killsInForward, killsOutside int
}

// observeRollback reads the rollback service on the target.
func (s *soak) observeRollback(ctx context.Context) (rbObservation, error) {
	res, err := s.t.Exec(ctx, "/bin/sh", "-c", rbObserve)
	if err != nil {
		return rbObservation{}, fmt.Errorf("observe the rollback service: %w", err)
	}
	return parseObservation(res.Stdout)
}

// checkRollback observes the rollback service and judges it.
func (s *soak) checkRollback(ctx context.Context, allowed []rbState, recordAllowed bool) []string {
	o, err := s.observeRollback(ctx)
	if err != nil {
		return []string{err.Error()}
	}
	_, _, out := judgeRollback(allowed, o, recordAllowed)
	return out
}

// rollbackRun is a rollback step without a fault: one run, its result judged, and the
// service judged against the state the run leaves (the asked state when it is good and
// the run succeeded, else the last good one), with no record left.
func (s *soak) rollbackRun(ctx context.Context, st Step, label string, args map[string]any) {
	var r map[string]any
	var err error
	s.accounted(ctx, "service", st.Check, func() bool {
		r, err = s.run(ctx, "service", args)
		return err != nil || r["failed"] == true
	})
	if err != nil {
		s.violations = append(s.violations, label+": "+err.Error())
		return
	}
	want := expectedState(s.rb, st.Rb, st.Check, r)
	vs := judgeResult(st.Rb, st.Check, r)
	vs = append(vs, s.checkRollback(ctx, []rbState{want}, false)...)
	for _, v := range vs {
		s.violations = append(s.violations, label+": "+v)
	}
	s.rb = want
}

// afterRollbackFault follows a rollback step's faulted run. A dying fault that landed is
// counted by the phase of the record it left. A run that was not killed (kill-supervisor,
// concurrent, daemon-reexec) must have ended all new or all old and running, with no
// record — unless a result said its rollback did not bring the previous state back: that
// run kept its record for the next one, and is judged, as a killed run is, by the next.
// Then the next run, the same step run again as a play would be, must end as a run
// without a fault does.
func (s *soak) afterRollbackFault(ctx context.Context, st Step, label string, landed bool) {
	results := s.parsed
	if slices.Contains(rbDying, st.Fault) {
		if landed {
			switch s.recordPhase(ctx) {
			case "restoring":
				s.rbc.killsInRollback++
			case "changing":
				s.rbc.killsInForward++
			default:
				s.rbc.killsOutside++
			}
		}
	} else {
		allowed := []rbState{s.rb}
		if st.Rb.good() {
			allowed = append(allowed, st.Rb)
		}
		recordAllowed := false
		for _, r := range results {
			if rb, ok := r["rolled_back"].(map[string]any); ok && rb["healthy"] != true {
				recordAllowed = true // the module said the previous state is not back, and kept the record
			}
		}
		// A run that says its rollback did not bring the previous state back kept its
		// record for the next run, which must finish the job (checked below, as after a
		// kill); until then the host may be down, and the run said so.
		if !recordAllowed {
			for _, v := range s.checkRollback(ctx, allowed, false) {
				s.violations = append(s.violations, label+": after the faulted run: "+v)
			}
		}
		// What the faulted runs said, for the violation's reader: the failure, and what
		// a rollback put back or where it failed.
		if len(s.violations) > 0 {
			for _, r := range results {
				if f, _ := r["failed"].(bool); f {
					msg, _ := r["msg"].(string)
					if len(msg) > 1500 {
						msg = msg[:1500] + "…"
					}
					rb, _ := r["rolled_back"].(map[string]any)
					s.violations = append(s.violations, fmt.Sprintf("%s: the faulted run said: failed_step %v, rollback healthy %v failed at %v: %s", label, r["failed_step"], rb["healthy"], rb["failed"], msg))
				}
			}
		}
	}
	r, vs := s.rbNext(ctx, st.Rb)
	want := expectedState(s.rb, st.Rb, false, r)
	vs = append(vs, s.checkRollback(ctx, []rbState{want}, false)...)
	for _, v := range vs {
		s.violations = append(s.violations, label+": the run after the fault: "+v)
	}
	s.rb = want
}

// rbNext runs the rollback service to st until the result is what a run without a fault
// gives, at most five times: a run may meet what the faulted run left still settling (a
// transaction its supervisor finishes) and refuse before any change. A run that rolled
// back is final. It returns the last result and its judgement.
func (s *soak) rbNext(ctx context.Context, st rbState) (map[string]any, []string) {
	var r map[string]any
	var judged []string
	for attempt := 0; attempt < 5; attempt++ {
		if attempt > 0 {
			time.Sleep(2 * time.Second)
		}
		var err error
		s.accounted(ctx, "service", false, func() bool {
			r, err = s.run(ctx, "service", rollbackService(st))
			return err != nil || r["failed"] == true
		})
		if err != nil {
			r, judged = nil, []string{err.Error()}
			continue
		}
		judged = judgeResult(st, false, r)
		if _, rolled := r["rolled_back"]; len(judged) == 0 || rolled {
			break
		}
	}
	return r, judged
}

// recordPhase is the phase of the rollback record on the target; "" when there is none.
func (s *soak) recordPhase(ctx context.Context) string {
	res, err := s.t.Exec(ctx, "/bin/sh", "-c", `sed -n 's/.*"phase": *"\([a-z]*\)".*/\1/p' `+rbRecords+`/*.json 2>/dev/null | head -n 1`)
	if err != nil {
		return ""
	}
	return strings.TrimSpace(res.Stdout)
}

// countRollback counts a result's rollback.
func (s *soak) countRollback(r map[string]any) {
	if rb, ok := r["rolled_back"].(map[string]any); ok {
		s.rbc.rollbacks++
		if rb["healthy"] == true {
			s.rbc.healthy++
		}
	}
}

// setUpRollback installs the rollback service at its first good state.
func (s *soak) setUpRollback(ctx context.Context) error {
	s.rb = rbState{rbGood[0], rbGoodConfigs[0]}
	r, judged := s.rbNext(ctx, s.rb)
	if len(judged) > 0 {
		return fmt.Errorf("set up the rollback service: %s", strings.Join(judged, "; "))
	}
	if vs := s.checkRollback(ctx, []rbState{s.rb}, false); len(vs) > 0 {
		return fmt.Errorf("set up the rollback service (%v): %s", r["changed"], strings.Join(vs, "; "))
	}
	return nil
}
