package main

// The seeded draw of each step: the operation, the version and level it asks for, the fault.

import (
	"context"
	"fmt"
	"math/rand"
	"slices"
	"strings"

	"github.com/richt/services/pkg/contract"
)

// ops are the steps the soak draws from, with their weights.
var ops = []struct {
	name   string
	weight int
}{
	{"service", 4}, {"pin", 3}, {"set", 1}, {"dropin", 3}, {"lifecycle", 2},
	{"rollback-good", 2}, {"rollback-build", 2}, {"rollback-config", 1},
}

// faultKinds are the faults the soak injects, drawn for about a third of the steps (from a
// faultDeck).
var faultKinds = []string{"kill-module", "kill-supervisor", "stop-caller", "concurrent", "corrupt-record", "daemon-reexec", "full-disk", "reboot", "power-loss", "kill-rollback", "refused-reload"}

// transactionFaults meet a package transaction: their step moves the version.
var transactionFaults = []string{"kill-module", "kill-supervisor", "stop-caller", "concurrent", "daemon-reexec", "reboot", "power-loss"}

// transactionOps are the steps that move a version: demo's service, pin and set, and the
// rollback service's steps (which move its build when a transaction fault is drawn).
var transactionOps = []string{"service", "pin", "set", "rollback-good", "rollback-build", "rollback-config"}

// killingFaults can end a run between a reaction and the removal of its record: the
// next run serves it again (at least once, by design), which is counted, not a violation.
var killingFaults = []string{"kill-module", "stop-caller", "reboot", "power-loss"}

// pickFaults parses -faults: known kinds only, in faultKinds' order.
func pickFaults(list string) ([]string, error) {
	want := map[string]bool{}
	for _, k := range strings.Split(list, ",") {
		want[strings.TrimSpace(k)] = true
	}
	var kinds []string
	for _, k := range faultKinds {
		if want[k] {
			kinds = append(kinds, k)
			delete(want, k)
		}
	}
	for k := range want {
		return nil, fmt.Errorf("unknown fault kind %q (known: %s)", k, strings.Join(faultKinds, ", "))
	}
	return kinds, nil
}

// faultDeck deals the fault kinds like a deck of cards, shuffled anew from the seed each
// time it runs out: every kind comes once in each len(faultKinds) faults. A soak draws 40
// to 50 faults in 8 minutes, and an independent draw per fault left one of eleven kinds
// out of two of three trixie soaks (stop 54), which the coverage rule then failed.
type faultDeck struct{ left []string }

// deal is the deck's next kind.
func (d *faultDeck) deal(r *rand.Rand) string {
	if len(d.left) == 0 {
		d.left = slices.Clone(faultKinds)
		r.Shuffle(len(d.left), func(i, j int) { d.left[i], d.left[j] = d.left[j], d.left[i] })
	}
	k := d.left[0]
	d.left = d.left[1:]
	return k
}

// Step is one drawn step: the operation, the fault (or none), check mode, the version and
// level it asks of demo, and the state it asks of the rollback service (rollback ops).
type Step struct {
	Op, Fault      string
	Check          bool
	Version, Level string
	Rb             rbState
}

// other is a value of list other than cur, drawn from r.
func other(r *rand.Rand, list []string, cur string) string {
	var rest []string
	for _, v := range list {
		if v != cur {
			rest = append(rest, v)
		}
	}
	return rest[r.Intn(len(rest))]
}

// Draw picks the next step from r (its fault from deck) given the version and level demo was last asked for and
// the rollback service's last good state (what the target holds before the step): the
// whole sequence is a function of the seed. A rollback step asks for a good build and
// config (rollback-good), the broken build with a good config (rollback-build), or a good
// build with the moved config (rollback-config). A fault draws a step it can hit: a
// transaction fault one that moves a version (pin, set, service, or a rollback step; not
// in check mode), a full disk one that writes a drop-in, a corrupt record one that reads
// it (service or lifecycle), kill-rollback a step that rolls back (rollback-build or
// rollback-config).
func Draw(r *rand.Rand, deck *faultDeck, version, level string, rb rbState) Step {
	total := 0
	for _, o := range ops {
		total += o.weight
	}
	var st Step
	n := r.Intn(total)
	for _, o := range ops {
		if n < o.weight {
			st.Op = o.name
			break
		}
		n -= o.weight
	}
	if r.Intn(3) == 0 {
		st.Fault = deck.deal(r)
	}
	st.Check = r.Intn(5) == 0
	st.Version, st.Level = versions[r.Intn(len(versions))], levels[r.Intn(len(levels))]
	st.Rb = rbState{rbGood[r.Intn(len(rbGood))], rbGoodConfigs[r.Intn(len(rbGoodConfigs))]}
	switch {
	case slices.Contains(transactionFaults, st.Fault):
		if !slices.Contains(transactionOps, st.Op) {
			st.Op = transactionOps[r.Intn(len(transactionOps))]
		}
		st.Check = false
		if st.Version == version {
			st.Version = other(r, versions, version)
		}
		if st.Rb.Version == rb.Version {
			st.Rb.Version = other(r, rbGood, rb.Version)
		}
	case st.Fault == "kill-rollback":
		if st.Op != "rollback-build" && st.Op != "rollback-config" {
			st.Op = []string{"rollback-build", "rollback-config"}[r.Intn(2)]
		}
		st.Check = false
		// The build moves too, so the rollback has a transaction to be killed in: one of
		// a config alone is over in a moment.
		if st.Rb.Version == rb.Version {
			st.Rb.Version = other(r, rbGood, rb.Version)
		}
	case st.Fault == "full-disk":
		if st.Op != "service" && st.Op != "dropin" {
			st.Op = "dropin"
		}
		st.Check = false
		if st.Level == level {
			st.Level = other(r, levels, level)
		}
	case st.Fault == "corrupt-record":
		if st.Op != "service" && st.Op != "lifecycle" {
			st.Op = []string{"service", "lifecycle"}[r.Intn(2)]
		}
		st.Check = false
	}
	switch st.Op {
	case "rollback-build":
		st.Rb.Version = rbBroken
	case "rollback-config":
		st.Rb.Config = rbMoved
	}
	return st
}

func (s *soak) step(ctx context.Context) {
	s.steps++
	st := Draw(s.rnd, &s.deck, s.version, s.level, s.rb)
	module, args := s.args(st)
	if st.Check {
		args["_ansible_check_mode"] = true
	}
	rollbackOp := slices.Contains(rollbackOps, st.Op)
	asked := st.Version + "/" + st.Level
	if rollbackOp {
		asked = fmt.Sprintf("%s from %s", st.Rb, s.rb)
		s.rbc.steps[st.Op]++
	}
	label := fmt.Sprintf("step %d: %s %s%s", s.steps, st.Op, asked, map[bool]string{true: " (check mode)"}[st.Check])
	versionBefore, levelBefore := s.led.installed, s.levelNow
	succeeded := false
	s.parsed = s.parsed[:0]
	switch {
	case st.Fault != "":
		s.drawn[st.Fault]++
		label += ", fault " + st.Fault
		landed, note := s.inject(ctx, st.Fault, module, st.Op, st.Check, args)
		if landed {
			s.landed[st.Fault]++
		}
		if note != "" {
			s.violations = append(s.violations, label+": "+note)
		}
		if rollbackOp {
			s.afterRollbackFault(ctx, st, label, landed)
		}
	case rollbackOp:
		s.rollbackRun(ctx, st, label, args)
	default:
		s.accounted(ctx, module, st.Check, func() bool {
			r, err := s.run(ctx, module, args)
			if err != nil {
				s.violations = append(s.violations, label+": "+err.Error())
				return true
			}
			succeeded = r["failed"] != true
			return !succeeded
		})
		if succeeded && !st.Check && st.Op == "service" {
			s.version, s.level = st.Version, st.Level
		}
		if st.Check && (s.led.installed != versionBefore || s.levelNow != levelBefore) {
			s.violations = append(s.violations, fmt.Sprintf("%s: check mode changed the target: version %s -> %s, level %s -> %s",
				label, versionBefore, s.led.installed, levelBefore, s.levelNow))
		}
	}
	// After every step: the service converges to what was last asked, and holds.
	first, err := s.converge(ctx, label)
	if err != nil {
		s.violations = append(s.violations, err.Error())
		return
	}
	if succeeded && !st.Check && st.Op == "service" && first["changed"] == true {
		s.violations = append(s.violations, label+": the run after a successful run of the same service changed something: "+fmt.Sprint(first["plan"]))
	}
	for _, v := range s.invariants(ctx, st.Fault) {
		s.violations = append(s.violations, label+": "+v)
	}
}

// args is a step's module and arguments.
func (s *soak) args(st Step) (string, map[string]any) {
	version, level := st.Version, st.Level
	switch st.Op {
	case "rollback-good", "rollback-build", "rollback-config":
		return "service", rollbackService(st.Rb)
	case "pin":
		return "rpm_exact", map[string]any{"name": "demo", "version": version}
	case "set":
		return "rpm_exact", map[string]any{"packages": []any{map[string]any{"name": "demo", "version": version}}}
	case "dropin":
		return "unit_override", map[string]any{"unit": "demo.service", "name": "20-level.conf", "daemon_reload": false,
			"content": "[Service]\nEnvironment=DEMO_LEVEL=" + level + "\n"}
	case "lifecycle":
		return "systemd_lifecycle", map[string]any{"unit": "demo.service", "enabled": true,
			"restart_on": []any{contract.Registered(true, contract.Change{PackageChanged: true})}}
	}
	return "service", service(version, level)
}
