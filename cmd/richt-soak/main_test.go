package main

import (
	"fmt"
	"math/rand"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
)

// The same seed draws the same sequence of steps and faults: a failing seed replays.
func TestDrawIsAFunctionOfTheSeed(t *testing.T) {
	draw := func(seed int64) []string {
		r := rand.New(rand.NewSource(seed))
		var out []string
		for range 200 {
			st := Draw(r, versions[0], levels[0])
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

// A fault draws a step it can hit: a transaction fault moves the version outside check
// mode on a step with a transaction, a full disk writes a new level into a drop-in, a
// corrupt record is read by the service or lifecycle module.
func TestDrawGivesEveryFaultAStepItCanHit(t *testing.T) {
	r := rand.New(rand.NewSource(1))
	seen := map[string]int{}
	for range 5000 {
		version, level := versions[r.Intn(2)], levels[r.Intn(3)]
		st := Draw(r, version, level)
		seen[st.Fault]++
		switch {
		case slices.Contains(transactionFaults, st.Fault):
			assert.Contains(t, []string{"service", "pin", "set"}, st.Op, "%+v", st)
			assert.NotEqual(t, version, st.Version, "%+v", st)
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
