package main

import (
	"strings"
)

// The rollback row times a failing upgrade until the old state serves again. Both sides
// start from the demo service converged at the good build (1.0, running, answering its
// probe) and move the demo package to a build that installs but cannot start; both end
// back on the good build, answering. Ours is one richt.services.service task with
// rollback: true; theirs is what a user writes with the built-ins: a block that upgrades,
// restarts and probes, and a rescue that downgrades, restarts and probes again.
//
// Each side fails on purpose half-way, and the report counts a failed task as a failed
// side. So the expected failures are taken out (rollbackTimings): ours says by its result
// whether the previous state is back and healthy (failed_when reads it; the module's own
// message, which says so at its end, is cut to 300 characters by the timing callback), and
// the built-in block's restart and probe fail so that the rescue runs. Whether each side
// really left the good build serving is checked after the timed part, in a segment of its
// own (rollbackVerifyRow) whose failures become the row's.

const (
	// demoBrokenV and nevraBroken name the build that installs but cannot start: newer
	// than every other demo build of the bench's repository, which the other rows pin
	// exactly, so its presence changes none of them.
	demoBrokenV, nevraBroken = "0:3.0-1.noarch", "demo-3.0-1.noarch"

	rollbackRow       = "rollback"
	rollbackVerifyRow = "rollback-verify"

	// The built-in block's tasks that fail on the broken build so that the rescue runs.
	builtinBrokenRestart = "built-in: restart on the broken build"
	builtinBrokenProbe   = "built-in: probe on the broken build"
)

// demoProbe is the demo play's health probe (banner 127.0.0.1:8080 expecting "demo
// ready") as a user writes it with the built-ins: wait_for reading the greeting, bounded
// by the same 20 s as the demo play's process timeout.
func demoProbe(name string) task {
	return task{"name": name, "ansible.builtin.wait_for": map[string]any{
		"host": "127.0.0.1", "port": 8080, "search_regex": "demo ready", "timeout": 20}}
}

// rollbackOurs is the demo service task with the package pinned to the broken build and
// rollback: true: it upgrades, fails at the restart, and puts the good build back, proved
// by the probe. The module fails the task by design; failed_when counts the run as the
// bench expects it only when rolled_back says the previous state is back and healthy.
func rollbackOurs() task {
	t := serviceTask()
	t["name"] = "ours: upgrade to the broken build, rolled back"
	t["richt.services.service"].(map[string]any)["rollback"] = true
	t["vars"] = map[string]any{"demo_version": demoBrokenV}
	t["register"] = "bench_rollback"
	t["ignore_errors"] = true
	t["failed_when"] = "bench_rollback.rolled_back is not defined or not bench_rollback.rolled_back.healthy"
	return t
}

// rollbackBuiltin is the same change with the built-ins: block and rescue. The unit file
// moves with the package, so each restart reloads the manager first (without it systemd
// would restart the old unit). The block's tasks do not ignore errors: the measured plays
// ignore them everywhere (so that a failing side does not stop the others), which would
// keep the rescue from running; the rescue's tasks keep the play's setting.
func rollbackBuiltin() []task {
	pkg := func(name, nevra string) task {
		return task{"name": name, "ansible.builtin.dnf": map[string]any{
			"name": nevra, "state": "present", "allow_downgrade": true, "use_backend": dnfBackend}}
	}
	restart := func(name string) task {
		return task{"name": name, "ansible.builtin.systemd_service": map[string]any{
			"name": "demo.service", "state": "restarted", "daemon_reload": true}}
	}
	block := []task{
		pkg("built-in: upgrade to the broken build", nevraBroken),
		restart(builtinBrokenRestart),
		demoProbe(builtinBrokenProbe),
	}
	for _, t := range block {
		t["ignore_errors"] = false
	}
	return []task{{"name": "built-in: upgrade, rescued by the previous build",
		"block": block,
		"rescue": []task{
			pkg("built-in rescue: back to the good build", nevraV1),
			restart("built-in rescue: restart on the good build"),
			demoProbe("built-in rescue: probe on the good build"),
		}}}
}

// rollbackVerify checks, after the timed part, that the side left the good build
// installed and answering.
func rollbackVerify() []task {
	return []task{
		{"name": "the good build is installed", "ansible.builtin.command": "rpm -q demo", "register": "bench_rpm_demo",
			"changed_when": false, "failed_when": "bench_rpm_demo.rc != 0 or bench_rpm_demo.stdout != '" + nevraV1 + "'"},
		demoProbe("the good build answers"),
	}
}

// rollbackPlay measures the rollback row. pre and restore converge the demo service at
// the good build (unmeasured): every side starts from it, whatever the side before left.
func rollbackPlay(rounds int, mitogen bool) rowsPlay {
	side := func(timed []task) sideFn {
		return func(r int, side string, mark func(string) task) []task {
			ts := append([]task{mark(rollbackRow)}, timed...)
			return append(append(ts, mark(rollbackVerifyRow)), rollbackVerify()...)
		}
	}
	return rowsPlay{name: rollbackRow, rounds: rounds, mitogen: mitogen, hosts: "one", forks: 1,
		pre:     []task{serviceTask()},
		ours:    side([]task{rollbackOurs()}),
		builtin: side(rollbackBuiltin()),
		restore: []task{serviceTask()},
	}
}

// rollbackTimings readies the rollback play's timings for sides: the built-in block's
// failures that start its rescue are no failures of the side, and the checks after the
// timed part leave no time of their own, only their failures, as failures of the row's
// side in their round. Other segments pass unchanged.
func rollbackTimings(ts []timing) []timing {
	var out []timing
	for _, t := range ts {
		p := strings.Split(t.Segment, "|")
		if len(p) != 3 {
			out = append(out, t)
			continue
		}
		switch {
		case p[0] == rollbackVerifyRow:
			if t.Failed != nil {
				msg := "after the timed part: " + *t.Failed
				out = append(out, timing{Segment: rollbackRow + "|" + p[1] + "|" + p[2], Task: t.Task, Failed: &msg})
			}
			continue
		case p[0] == rollbackRow && (p[1] == sideBuiltin || p[1] == sideBuiltinMitogen) &&
			(t.Task == builtinBrokenRestart || t.Task == builtinBrokenProbe):
			t.Failed = nil
		}
		out = append(out, t)
	}
	return out
}
