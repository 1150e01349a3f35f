package main

import (
	"fmt"
	"math/rand"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The same seed draws the same sequence of steps and faults: a failing seed replays.
func TestDrawIsAFunctionOfTheSeed(t *testing.T) {
	draw := func(seed int64) []string {
		r := rand.New(rand.NewSource(seed))
		var deck faultDeck
		var out []string
		for range 200 {
			st := Draw(r, &deck, versions[0], levels[0], rbState{rbGood[0], rbGoodConfigs[0]})
			out = append(out, fmt.Sprintf("%+v", st))
		}
		return out
	}
	assert.Equal(t, draw(42), draw(42))
	assert.NotEqual(t, draw(42), draw(43))
	seen := map[string]bool{}
	for _, s := range draw(7) {
		seen[s] = true
	}
	assert.Greater(t, len(seen), 20, "the draws vary")
}

// Every kind of fault comes once in each run of len(faultKinds) faults drawn, in an order
// the seed decides: a soak that draws a few dozen faults meets every kind several times.
func TestFaultDeckDealsEveryKindOncePerRound(t *testing.T) {
	r := rand.New(rand.NewSource(5))
	var deck faultDeck
	orders := map[string]bool{}
	for round := range 50 {
		var order []string
		for range faultKinds {
			order = append(order, deck.deal(r))
		}
		assert.ElementsMatch(t, faultKinds, order, "round %d", round)
		orders[strings.Join(order, ",")] = true
	}
	assert.Greater(t, len(orders), 40, "the rounds come in different orders")
}

func TestPickFaults(t *testing.T) {
	for _, tc := range []struct {
		list string
		want []string
		err  string
	}{
		{"reboot", []string{"reboot"}, ""},
		{"power-loss, kill-module", []string{"kill-module", "power-loss"}, ""},
		{"reboot,unplug", nil, `unknown fault kind "unplug"`},
	} {
		t.Run(tc.list, func(t *testing.T) {
			got, err := pickFaults(tc.list)
			if tc.err != "" {
				assert.ErrorContains(t, err, tc.err)
				return
			}
			assert.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
}

// A fault draws a step it can hit: a transaction fault moves a version outside check
// mode on a step with a transaction (demo's, or the rollback service's build), a full disk
// writes a new level into a drop-in, a corrupt record is read by the service or lifecycle
// module, kill-rollback meets a step that rolls back and moves the build.
func TestDrawGivesEveryFaultAStepItCanHit(t *testing.T) {
	r := rand.New(rand.NewSource(1))
	var deck faultDeck
	seen := map[string]int{}
	for range 6000 {
		version, level := versions[r.Intn(2)], levels[r.Intn(3)]
		rb := rbState{rbGood[r.Intn(2)], rbGoodConfigs[r.Intn(2)]}
		st := Draw(r, &deck, version, level, rb)
		seen[st.Fault]++
		switch {
		case slices.Contains(transactionFaults, st.Fault):
			assert.Contains(t, transactionOps, st.Op, "%+v", st)
			assert.NotEqual(t, version, st.Version, "%+v", st)
			assert.NotEqual(t, rb.Version, st.Rb.Version, "%+v", st)
			assert.False(t, st.Check, "%+v", st)
		case st.Fault == "kill-rollback":
			assert.Contains(t, []string{"rollback-build", "rollback-config"}, st.Op, "%+v", st)
			assert.NotEqual(t, rb.Version, st.Rb.Version, "%+v", st)
			assert.False(t, st.Check, "%+v", st)
		case st.Fault == "full-disk":
			assert.Contains(t, []string{"service", "dropin"}, st.Op, "%+v", st)
			assert.NotEqual(t, level, st.Level, "%+v", st)
			assert.False(t, st.Check, "%+v", st)
		case st.Fault == "corrupt-record":
			assert.Contains(t, []string{"service", "lifecycle"}, st.Op, "%+v", st)
			assert.False(t, st.Check, "%+v", st)
		}
	}
	for _, k := range faultKinds {
		assert.Greater(t, seen[k], 100, k)
	}
}

// The rollback steps ask what their names say: rollback-good a good build and config,
// rollback-build the broken build with a good config, rollback-config a good build with
// the moved config; all three are drawn, with and without faults, and demo's ops still are.
func TestDrawRollbackSteps(t *testing.T) {
	r := rand.New(rand.NewSource(3))
	var deck faultDeck
	ops, faulted := map[string]int{}, map[string]int{}
	for range 3000 {
		st := Draw(r, &deck, versions[0], levels[0], rbState{"1.0", "a"})
		ops[st.Op]++
		if st.Fault != "" {
			faulted[st.Op]++
		}
		switch st.Op {
		case "rollback-good":
			assert.True(t, st.Rb.good(), "%+v", st)
		case "rollback-build":
			assert.Equal(t, rbBroken, st.Rb.Version, "%+v", st)
			assert.Contains(t, rbGoodConfigs, st.Rb.Config, "%+v", st)
			assert.False(t, st.Rb.good())
		case "rollback-config":
			assert.Contains(t, rbGood, st.Rb.Version, "%+v", st)
			assert.Equal(t, rbMoved, st.Rb.Config, "%+v", st)
			assert.False(t, st.Rb.good())
		}
	}
	for _, o := range []string{"service", "pin", "set", "dropin", "lifecycle", "rollback-good", "rollback-build", "rollback-config"} {
		assert.Greater(t, ops[o], 100, o)
	}
	for _, o := range rollbackOps {
		assert.Greater(t, faulted[o], 30, "faults on %s", o)
	}
}

// A fixed seed draws the rollback steps among the others, with their faults, the same
// way each time: a failing seed replays them.
func TestDrawRollbackStepsWithAFixedSeed(t *testing.T) {
	draw := func() (seq []string, ops map[string]int, killRollback int) {
		r := rand.New(rand.NewSource(11))
		var deck faultDeck
		ops = map[string]int{}
		for range 400 {
			st := Draw(r, &deck, versions[0], levels[0], rbState{"1.0", "a"})
			if slices.Contains(rollbackOps, st.Op) {
				seq = append(seq, fmt.Sprintf("%s %s %s %v", st.Op, st.Rb, st.Fault, st.Check))
				ops[st.Op]++
			}
			if st.Fault == "kill-rollback" {
				killRollback++
			}
		}
		return seq, ops, killRollback
	}
	seq, ops, kills := draw()
	again, _, _ := draw()
	assert.Equal(t, seq, again)
	for _, o := range rollbackOps {
		assert.Positive(t, ops[o], o)
	}
	assert.Positive(t, kills, "kill-rollback drawn")
}

func observed(builds, config, unit, answer string, left ...string) rbObservation {
	return rbObservation{Builds: strings.Fields(builds), Config: config, Unit: unit, Answer: answer, Left: append([]string{}, left...)}
}

// After every step the rollback service is all new or all old, and running.
func TestJudgeRollback(t *testing.T) {
	old, upNew := rbState{"1.0", "a"}, rbState{"2.0", "b"}
	both := []rbState{old, upNew}
	for _, tc := range []struct {
		name          string
		allowed       []rbState
		obs           rbObservation
		recordAllowed bool
		held          rbState
		ok            bool
		want          []string // substrings, one per violation
	}{
		{"all old, running", []rbState{old}, observed("1.0", rbConfig("a"), "active enabled", "soakrb 1.0 a ready"), false, old, true, nil},
		{"all new, running", both, observed("2.0", rbConfig("b"), "active enabled", "soakrb 2.0 b ready"), false, upNew, true, nil},
		{"new build, old config: a mix", both, observed("2.0", rbConfig("a"), "active enabled", "soakrb 2.0 a ready"), false, rbState{"2.0", "a"}, false,
			[]string{"neither all new nor all old: build 2.0 with config a"}},
		{"the broken build installed, the unit down", []rbState{old}, observed("3.0", rbConfig("a"), "failed enabled", ""), false, rbState{"3.0", "a"}, false,
			[]string{"the broken build 3.0 is installed", `soakrb.service is "failed enabled"`}},
		{"the moved config left in place", []rbState{old}, observed("1.0", rbConfig(rbMoved), "active enabled", ""), false, rbState{"1.0", rbMoved}, false,
			[]string{"the config that fails the probe is in place"}},
		{"two builds after a cut transaction", []rbState{old}, observed("1.0 3.0", rbConfig("a"), "active enabled", "soakrb 1.0 a ready"), false, rbState{}, false,
			[]string{"soakrb has 2 builds installed (1.0, 3.0)"}},
		{"the right files, the process of the old build still running", both, observed("2.0", rbConfig("b"), "active enabled", "soakrb 1.0 a ready"), false, upNew, true,
			[]string{`answers "soakrb 1.0 a ready", not "soakrb 2.0 b ready"`}},
		{"nobody answers", []rbState{old}, observed("1.0", rbConfig("a"), "active enabled", ""), false, old, true,
			[]string{`answers "", not "soakrb 1.0 a ready"`}},
		{"disabled", []rbState{old}, observed("1.0", rbConfig("a"), "active disabled", "soakrb 1.0 a ready"), false, old, true,
			[]string{`soakrb.service is "active disabled"`}},
		{"a record left after a run that ended", []rbState{old}, observed("1.0", rbConfig("a"), "active enabled", "soakrb 1.0 a ready", "soakrb-0a1b2c3d4e5f.json"), false, old, true,
			[]string{"left in /var/lib/richt/rollback after a run that ended: soakrb-0a1b2c3d4e5f.json"}},
		{"a record the module said it kept", []rbState{old}, observed("1.0", rbConfig("a"), "active enabled", "soakrb 1.0 a ready", "soakrb-0a1b2c3d4e5f.json"), true, old, true, nil},
		{"the config missing", []rbState{old}, observed("1.0", "", "active enabled", "soakrb 1.0 none ready"), false, rbState{"1.0", "(none)"}, false,
			[]string{"neither all new nor all old: build 1.0 with config (none)"}},
		{"all new after a run that failed", []rbState{old}, observed("2.0", rbConfig("b"), "active enabled", "soakrb 2.0 b ready"), false, upNew, false,
			[]string{"holds build 2.0 with config b, where one of [1.0/a] belongs"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			held, ok, got := judgeRollback(tc.allowed, tc.obs, tc.recordAllowed)
			assert.Equal(t, tc.held, held)
			assert.Equal(t, tc.ok, ok)
			require.Len(t, got, len(tc.want), "%q", got)
			for i, w := range tc.want {
				assert.Contains(t, got[i], w)
			}
		})
	}
}

// A run to a broken state fails with a healthy rollback and says so; a run to a good
// state, or in check mode, succeeds.
func TestJudgeResult(t *testing.T) {
	broken, good := rbState{rbBroken, "a"}, rbState{"2.0", "a"}
	healthy := map[string]any{"failed": true, "msg": "the change failed and was rolled back, the previous state is back and healthy; rolled back: soakrb to soakrb-0:1.0-1.noarch. The change's failure: process soakrb.service: start failed",
		"rolled_back": map[string]any{"healthy": true}}
	for _, tc := range []struct {
		name  string
		st    rbState
		check bool
		r     map[string]any
		want  string // "" for no violation
	}{
		{"good, succeeded", good, false, map[string]any{"changed": true}, ""},
		{"good, failed", good, false, map[string]any{"failed": true, "msg": "boom"}, "the run to 2.0/a failed: boom"},
		{"broken, rolled back healthy", broken, false, healthy, ""},
		{"broken, check mode succeeds", broken, true, map[string]any{"changed": true}, ""},
		{"broken, check mode failed", broken, true, map[string]any{"failed": true, "msg": "no"}, "failed: no"},
		{"moved config, rolled back healthy", rbState{"1.0", rbMoved}, false, healthy, ""},
		{"broken, succeeded", broken, false, map[string]any{"changed": true}, "the run to the broken 3.0/a succeeded"},
		{"broken, failed without a rollback", broken, false, map[string]any{"failed": true, "msg": "start failed"}, "failed without rolled_back: start failed"},
		{"broken, rollback not healthy", broken, false, map[string]any{"failed": true, "msg": "m", "rolled_back": map[string]any{"healthy": false, "failed": "packages"}},
			"is not healthy (failed at packages)"},
		{"broken, healthy but the message does not say so", broken, false, map[string]any{"failed": true, "msg": "start failed", "rolled_back": map[string]any{"healthy": true}},
			"does not say the previous state is back and healthy"},
		{"no result", good, false, nil, "no result"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := judgeResult(tc.st, tc.check, tc.r)
			if tc.want == "" {
				assert.Empty(t, got)
				return
			}
			require.Len(t, got, 1, "%q", got)
			assert.Contains(t, got[0], tc.want)
		})
	}
}

// The state a run leaves: the asked one only when it is good and the run succeeded
// outside check mode.
func TestExpectedState(t *testing.T) {
	prev, good, broken := rbState{"1.0", "a"}, rbState{"2.0", "b"}, rbState{rbBroken, "b"}
	ok, failed := map[string]any{"changed": true}, map[string]any{"failed": true}
	assert.Equal(t, good, expectedState(prev, good, false, ok))
	assert.Equal(t, prev, expectedState(prev, good, false, failed))
	assert.Equal(t, prev, expectedState(prev, good, false, nil))
	assert.Equal(t, prev, expectedState(prev, good, true, ok))
	assert.Equal(t, prev, expectedState(prev, broken, false, failed))
	assert.Equal(t, prev, expectedState(prev, broken, false, ok), "a broken state is never the one to hold")
}

func TestParseObservation(t *testing.T) {
	o, err := parseObservation("2.0 \n@@\n" + rbConfig("b") + "@@\nactive enabled\n@@\nsoakrb 2.0 b ready\n@@\n")
	require.NoError(t, err)
	assert.Equal(t, observed("2.0", rbConfig("b"), "active enabled", "soakrb 2.0 b ready"), o)
	o, err = parseObservation(" \n@@\n@@\ninactive disabled\n@@\n\n@@\nsoakrb-1.json\nsoakrb-1.d\n")
	require.NoError(t, err)
	assert.Equal(t, observed("", "", "inactive disabled", "", "soakrb-1.json", "soakrb-1.d"), o)
	_, err = parseObservation("half")
	assert.ErrorContains(t, err, "has 1 parts")
	assert.Equal(t, "moved", rbConfigName(rbConfig(rbMoved)))
	assert.Equal(t, "a", rbConfigName(strings.TrimSpace(rbConfig("a"))))
	assert.Equal(t, `(unknown: "port=1\n")`, rbConfigName("port=1\n"))
}

// The ledger counts a unit's restarts and reloads against what the runs owed.
func TestLedger(t *testing.T) {
	type seg struct {
		run   run
		lines []string
	}
	for _, tc := range []struct {
		name         string
		segs         []seg
		reboot       bool
		lost, unowed int
	}{
		{"a service run that installs restarts once", []seg{
			{run{module: "service"}, []string{"soak-install 2.0", "soak-start version=2.0 level=info"}},
		}, false, 0, 0},
		{"an install by the service module with no restart loses it", []seg{
			{run{module: "service"}, []string{"soak-install 2.0"}},
		}, false, 1, 0},
		{"a restart from the package's %postun serves the service's restart", []seg{
			{run{module: "service"}, []string{"soak-install 2.0", "soak-install 1.0", "soak-start version=1.0 level=info"}},
		}, false, 0, 0},
		{"%postun's restart, then restart_on restarts again: doubled", []seg{
			{run{module: "service"}, []string{"soak-install 2.0", "soak-install 1.0", "soak-start version=1.0 level=info", "start 77", "soak-start version=1.0 level=info"}},
		}, false, 0, 1},
		{"rpm_exact moving away from a plain build owes nothing", []seg{
			{run{module: "rpm_exact"}, []string{"soak-install 2.0"}},
		}, false, 0, 0},
		{"rpm_exact moving away from a build with %postun owes its restart", []seg{
			{run{module: "rpm_exact"}, []string{"soak-install 2.0"}},
			{run{module: "rpm_exact"}, []string{"soak-install 1.0"}},
		}, false, 1, 0},
		{"%postun's restart before the drop-in's write, then its reload: owed", []seg{
			{run{module: "service", levelChanged: true, level: "info"}, []string{"soak-install 2.0", "soak-install 1.0", "soak-start version=1.0 level=debug", "soak-reload version=1.0 level=info"}},
		}, false, 0, 0},
		{"%postun's restart before the drop-in's write, then a restart: the reload turned into a restart", []seg{
			{run{module: "service", levelChanged: true, level: "info"}, []string{"soak-install 2.0", "soak-install 1.0", "soak-start version=1.0 level=debug", "soak-start version=1.0 level=info"}},
		}, false, 0, 1},
		{"%postun's restart before the drop-in's write and nothing after: the reload is lost", []seg{
			{run{module: "service", levelChanged: true, level: "info"}, []string{"soak-install 2.0", "soak-install 1.0", "soak-start version=1.0 level=debug"}},
		}, false, 1, 0},
		{"a reload owed for a level the drop-in no longer holds is owed no more", []seg{
			{run{module: "service", levelChanged: true, level: "warn", failed: true}, nil},
			{run{module: "service", levelChanged: true, level: "info"}, []string{"soak-reload version=1.0 level=info"}},
		}, false, 0, 0},
		{"a drop-in change with reload: true and no reload is lost", []seg{
			{run{module: "service", levelChanged: true, level: "warn"}, nil},
		}, false, 1, 0},
		{"one reload serves the drop-in; a second is doubled", []seg{
			{run{module: "service", levelChanged: true, level: "warn"}, []string{"soak-reload version=1.0 level=warn", "soak-reload version=1.0 level=warn"}},
		}, false, 0, 1},
		{"a pending reload and the next run's restart: one start serves both", []seg{
			{run{module: "service", levelChanged: true, level: "warn", failed: true}, nil},
			{run{module: "service"}, []string{"soak-install 2.0", "soak-start version=2.0 level=warn"}},
		}, false, 0, 0},
		{"unit_override owes nothing; a reload after it is doubled", []seg{
			{run{module: "unit_override", levelChanged: true}, []string{"soak-reload version=1.0 level=warn"}},
		}, false, 0, 1},
		{"a refused lifecycle run owes nothing", []seg{
			{run{module: "systemd_lifecycle", failed: true}, nil},
		}, false, 0, 0},
		{"a lifecycle run that failed after recording its restart owes it to the next run", []seg{
			{run{module: "systemd_lifecycle", failed: true, recorded: "restart"}, nil},
			{run{module: "service", failed: true}, nil},
			{run{module: "service"}, []string{"soak-start version=1.0 level=info"}},
		}, false, 0, 0},
		{"a lifecycle run that failed after recording its restart, and nothing after: lost", []seg{
			{run{module: "systemd_lifecycle", failed: true, recorded: "restart"}, nil},
		}, false, 1, 0},
		{"a failed lifecycle run that recorded nothing, then a start: doubled", []seg{
			{run{module: "systemd_lifecycle", failed: true}, nil},
			{run{module: "service"}, []string{"soak-start version=1.0 level=info"}},
		}, false, 0, 1},
		{"lifecycle's restart_on owes one restart", []seg{
			{run{module: "systemd_lifecycle"}, []string{"soak-start version=1.0 level=info"}},
		}, false, 0, 0},
		{"check mode owes nothing", []seg{
			{run{module: "systemd_lifecycle", check: true}, []string{"soak-start version=1.0 level=info"}},
		}, false, 0, 1},
		{"the start at boot is owed and serves what was owed before", []seg{
			{run{module: "service", from: -1}, []string{"soak-start version=1.0 level=info"}},
		}, true, 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := ledger{installed: "1.0", restartsOnUpgradeFrom: func(v string) bool { return v == "2.0" }}
			l.owe("reload", 0, "before the reboot")
			l.take()
			if tc.reboot {
				l.owe("reload", 0, "before the reboot")
				l.reboot("1.0")
			}
			for _, sg := range tc.segs {
				r := sg.run
				if r.from == 0 {
					r.from = len(l.events)
				}
				for _, line := range sg.lines {
					if e, ok := parseEvent(line); ok {
						l.add([]event{e})
					}
				}
				l.account(r)
			}
			lost, unowed, _ := l.take()
			assert.Len(t, lost, tc.lost, "lost: %v", lost)
			assert.Len(t, unowed, tc.unowed, "unowed: %v", unowed)
		})
	}
}

func TestRecordedBy(t *testing.T) {
	restart := `{"reaction": "restart", "since": "2026-12-05T07:00:00Z", "at": {"boot_id": "b", "monotonic_us": 1}}`
	restamped := `{"reaction": "restart", "since": "2026-12-05T07:00:00Z", "at": {"boot_id": "b", "monotonic_us": 2}}`
	for _, tc := range []struct {
		name, before, after, want string
	}{
		{"no record after the run", "", "", ""},
		{"the run wrote a restart", "", restart, "restart"},
		{"the run stamped an older record again", restart, restamped, "restart"},
		{"a record the run did not touch", restart, restart, ""},
		{"the run cleared the record", restart, "", ""},
		{"a record of a reaction this version cannot read", "", `{"reaction": "unknown"}`, ""},
		{"a damaged record", "", `{"reaction": "rest`, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, recordedBy(tc.before, tc.after))
		})
	}
}
