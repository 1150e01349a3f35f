package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/richt/services/testenv/fixtures"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func failedTiming(seg, task string, s float64, msg string) timing {
	return timing{Segment: seg, Task: task, Seconds: s, Failed: &msg}
}

func TestRollbackTimingsKeepOnlyTheFailuresThatCount(t *testing.T) {
	ok := func(seg, task string, s float64) timing { return timing{Segment: seg, Task: task, Seconds: s} }
	cases := []struct {
		name string
		in   []timing
		want map[[2]string]side // sides() of the result
	}{
		{"the built-in block's restart fails so that the rescue runs: no failure, the rescue's time counts",
			[]timing{
				ok("rollback|builtin|1", "built-in: upgrade to the broken build", 2),
				failedTiming("rollback|builtin|1", builtinBrokenRestart, 0.5, "Unable to restart service demo.service"),
				ok("rollback|builtin|1", "built-in rescue: back to the good build", 2),
				ok("rollback|builtin|1", "built-in rescue: restart on the good build", 0.5),
				ok("rollback|builtin|1", "built-in rescue: probe on the good build", 1),
				ok("rollback-verify|builtin|1", "the good build is installed", 0.3),
				ok("rollback-verify|builtin|1", "the good build answers", 0.3),
			},
			map[[2]string]side{{"rollback", "builtin"}: {Median: 6, Rounds: 1}}},
		{"the probe on the broken build under Mitogen is expected too",
			[]timing{failedTiming("rollback|builtin-mitogen|1", builtinBrokenProbe, 20, "Timeout when waiting for 127.0.0.1:8080")},
			map[[2]string]side{{"rollback", "builtin-mitogen"}: {Median: 20, Rounds: 1}}},
		{"a failing rescue is the side's failure",
			[]timing{
				failedTiming("rollback|builtin|1", builtinBrokenRestart, 0.5, "Unable to restart service demo.service"),
				failedTiming("rollback|builtin|1", "built-in rescue: back to the good build", 1, "No package demo-1.0-1.noarch available."),
			},
			map[[2]string]side{{"rollback", "builtin"}: {Median: 1.5, Rounds: 1,
				Failed: "built-in rescue: back to the good build: No package demo-1.0-1.noarch available."}}},
		{"the block's package step failing is no expected failure",
			[]timing{failedTiming("rollback|builtin|1", "built-in: upgrade to the broken build", 1, "No package demo-3.0-1.noarch available.")},
			map[[2]string]side{{"rollback", "builtin"}: {Median: 1, Rounds: 1,
				Failed: "built-in: upgrade to the broken build: No package demo-3.0-1.noarch available."}}},
		{"ours failing (no healthy rollback in its result) is ours' failure",
			[]timing{failedTiming("rollback|ours|1", "ours: upgrade to the broken build, rolled back", 3, "demo.service failed to restart")},
			map[[2]string]side{{"rollback", "ours"}: {Median: 3, Rounds: 1,
				Failed: "ours: upgrade to the broken build, rolled back: demo.service failed to restart"}}},
		{"a failed check after the timed part fails the side of its round, adding no time",
			[]timing{
				ok("rollback|ours|2", "ours: upgrade to the broken build, rolled back", 3),
				ok("rollback-verify|ours|2", "the good build is installed", 0.3),
				failedTiming("rollback-verify|ours|2", "the good build answers", 20, "Timeout when waiting for 127.0.0.1:8080"),
			},
			map[[2]string]side{{"rollback", "ours"}: {Median: 3, Rounds: 1,
				Failed: "the good build answers: after the timed part: Timeout when waiting for 127.0.0.1:8080"}}},
		{"a failed check in the warm-up round is ignored as every warm-up failure is",
			[]timing{
				ok("rollback|ours|0", "ours: upgrade to the broken build, rolled back", 9),
				failedTiming("rollback-verify|ours|0", "the good build is installed", 0.3, "demo-3.0-1.noarch"),
				ok("rollback|ours|1", "ours: upgrade to the broken build, rolled back", 3),
			},
			map[[2]string]side{{"rollback", "ours"}: {Median: 3, Rounds: 1}}},
		{"other rows pass unchanged, a failure named like the block's included",
			[]timing{
				failedTiming("config|builtin|1", builtinBrokenRestart, 1, "x"),
				ok("ignore|-|0", "back to a clean target", 1),
			},
			map[[2]string]side{{"config", "builtin"}: {Median: 1, Rounds: 1, Failed: builtinBrokenRestart + ": x"}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			assert.Equal(t, c.want, sides(rollbackTimings(c.in)))
		})
	}
}

// Without rollbackTimings the report would count the built-ins' rescue as a failed side:
// the reason it exists.
func TestRollbackTimingsAreNeededForTheBuiltinSide(t *testing.T) {
	in := []timing{failedTiming("rollback|builtin|1", builtinBrokenRestart, 0.5, "Unable to restart service demo.service")}
	assert.False(t, sides(in)[[2]string{"rollback", "builtin"}].ok())
	assert.True(t, sides(rollbackTimings(in))[[2]string{"rollback", "builtin"}].ok())
}

func TestDemoBrokenIsTheDemoPackageWithAFailingStart(t *testing.T) {
	good, broken := fixtures.DemoPackage("3.0"), fixtures.DemoBroken("3.0")
	assert.Equal(t, "demo", broken.Name)
	assert.Equal(t, "demo-"+broken.Version+"-1.noarch", nevraBroken)
	assert.Equal(t, "0:"+broken.Version+"-1.noarch", demoBrokenV)
	for _, v := range []string{demoV1, demoV2} {
		assert.NotEqual(t, v, demoBrokenV, "the broken build must be a build of its own")
	}
	assert.Equal(t, good.Files["/usr/bin/demo-daemon"], broken.Files["/usr/bin/demo-daemon"], "the same daemon: only the unit's start check differs")
	unit := broken.Files["/usr/lib/systemd/system/demo.service"].Content
	assert.Contains(t, unit, "ExecStartPre=/bin/sh -c '")
	assert.Contains(t, unit, "exit 1'")
	assert.Contains(t, unit, "ExecStart=/usr/bin/demo-daemon\n")
	assert.NotContains(t, fixtures.DemoPackage("1.0").Files["/usr/lib/systemd/system/demo.service"].Content, "ExecStartPre",
		"the good build's unit is left alone")
}

// findTask returns the task named name among ts and the blocks' sections within them.
func findTask(ts []any, name string) map[string]any {
	for _, x := range ts {
		m, _ := x.(map[string]any)
		if m["name"] == name {
			return m
		}
		for _, sec := range []string{"block", "rescue"} {
			if sub, ok := m[sec].([]any); ok {
				if f := findTask(sub, name); f != nil {
					return f
				}
			}
		}
	}
	return nil
}

func TestRollbackPlayShape(t *testing.T) {
	rp := rollbackPlay(2, true)
	assert.Equal(t, "rollback", rp.name, "-only rollback selects the play by this name")
	data, err := json.Marshal(rp.plays("/repo"))
	require.NoError(t, err)
	var plays []map[string]any
	require.NoError(t, json.Unmarshal(data, &plays))
	// pre, rounds 0-2 each with a default-strategy and a Mitogen play; no post.
	require.Len(t, plays, 1+3*2)

	for i, p := range plays[1:] {
		tasks := p["tasks"].([]any)
		var markers []string
		for _, x := range tasks {
			if n := x.(map[string]any)["name"].(string); strings.HasPrefix(n, "BENCH ") && !strings.HasPrefix(n, "BENCH ignore") {
				markers = append(markers, strings.TrimPrefix(n, "BENCH "))
			}
		}
		r := i / 2
		first, second := sideOurs, sideBuiltin
		if i%2 == 1 {
			first, second = sideBuiltinMitogen, sideOursMitogen
		}
		seg := func(row, side string) string { return row + "|" + side + "|" + string(rune('0'+r)) }
		assert.Equal(t, []string{seg(rollbackRow, first), seg(rollbackVerifyRow, first), seg(rollbackRow, second), seg(rollbackVerifyRow, second)}, markers)

		ours := findTask(tasks, "ours: upgrade to the broken build, rolled back")
		require.NotNil(t, ours)
		mod := ours["richt.services.service"].(map[string]any)
		assert.Equal(t, true, mod["rollback"])
		assert.Equal(t, "{{ service_processes }}", mod["processes"], "the demo play's processes, health probe included")
		assert.Equal(t, map[string]any{"demo_version": demoBrokenV}, ours["vars"])
		assert.Contains(t, ours["failed_when"], "rolled_back.healthy")

		restart, probe := findTask(tasks, builtinBrokenRestart), findTask(tasks, builtinBrokenProbe)
		require.NotNil(t, restart)
		require.NotNil(t, probe)
		assert.Equal(t, false, restart["ignore_errors"], "the play ignores errors; the block must not, or its rescue never runs")
		assert.Equal(t, true, restart["ansible.builtin.systemd_service"].(map[string]any)["daemon_reload"])
		back := findTask(tasks, "built-in rescue: back to the good build")
		require.NotNil(t, back)
		assert.Equal(t, nevraV1, back["ansible.builtin.dnf"].(map[string]any)["name"])
		assert.Nil(t, back["ignore_errors"], "the rescue keeps the play's setting")
		assert.Equal(t, true, p["ignore_errors"])
	}
}
