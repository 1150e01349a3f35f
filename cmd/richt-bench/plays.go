package main

import (
	"fmt"
	"path/filepath"
)

// The plays are built as data and written as JSON (which is YAML). Each measured part
// starts with a marker task named "BENCH row|side|round"; the timing callback adds every
// following task's time to that segment until the next marker. Segments whose row is
// "ignore" are set-up steps and are not reported.

type task = map[string]any

func marker(row, side string, round int) task {
	seg := fmt.Sprintf("%s|%s|%d", row, side, round)
	return task{"name": "BENCH " + seg, "ansible.builtin.debug": map[string]any{"msg": seg, "verbosity": 1}}
}

func ignore() task { return marker("ignore", "-", 0) }

const (
	demoV1, demoV2   = "0:1.0-1.noarch", "0:2.0-1.noarch"
	nevraV1, nevraV2 = "demo-1.0-1.noarch", "demo-2.0-1.noarch"
	dropinDir        = "/etc/systemd/system/demo.service.d"
)

func repoFile(id, path string) task {
	return task{"name": "repository " + id, "ansible.builtin.copy": map[string]any{
		"dest": "/etc/yum.repos.d/" + id + ".repo", "mode": "0644",
		"content": fmt.Sprintf("[%s]\nname=%s\nbaseurl=file://%s\ngpgcheck=0\n", id, id, path),
	}}
}

func oursPackage(version string) task {
	return task{"name": "ours package " + version, "richt.services.rpm_exact": map[string]any{"name": "demo", "version": version}}
}

// dnfBackend tells the built-in dnf module of ansible-core 2.15 and later which DNF it
// drives: on these Debian-built targets its detection finds apt. 2.14 has no such option.
const dnfBackend = "{{ 'dnf4' if ansible_version.full is version('2.15', '>=') else omit }}"

func builtinPackage(nevra string) task {
	return task{"name": "built-in package " + nevra, "ansible.builtin.dnf": map[string]any{"name": nevra, "state": "present", "allow_downgrade": true, "use_backend": dnfBackend}}
}

// setNames are fixtures.PinnedSet's packages: acc-app and acc-tool require acc-lib at
// their own version, so the three move together or not at all.
var setNames = []string{"acc-lib", "acc-app", "acc-tool"}

func oursSet(version string) task {
	var entries []map[string]any
	for _, n := range setNames {
		entries = append(entries, map[string]any{"name": n, "version": "0:" + version + "-1.noarch"})
	}
	return task{"name": "ours set " + version, "richt.services.rpm_exact": map[string]any{"packages": entries}}
}

func builtinSet(version string) task {
	var names []string
	for _, n := range setNames {
		names = append(names, n+"-"+version+"-1.noarch")
	}
	return task{"name": "built-in set " + version, "ansible.builtin.dnf": map[string]any{"name": names, "state": "present", "allow_downgrade": true, "use_backend": dnfBackend}}
}

func oursService() task {
	return task{"name": "ours service", "richt.services.systemd_lifecycle": map[string]any{"unit": "demo.service", "state": "running", "enabled": true}}
}

func builtinService() task {
	return task{"name": "built-in service", "ansible.builtin.systemd_service": map[string]any{"name": "demo.service", "state": "started", "enabled": true}}
}

func flush() task { return task{"name": "flush handlers", "ansible.builtin.meta": "flush_handlers"} }

var handlers = []task{
	{"name": "bench restart", "ansible.builtin.systemd_service": map[string]any{"name": "demo.service", "state": "restarted", "daemon_reload": true}},
	{"name": "bench reload", "ansible.builtin.systemd_service": map[string]any{"name": "demo.service", "state": "reloaded", "daemon_reload": true}},
	// A config change reloads with no manager reload: no unit file moved.
	{"name": "bench config reload", "ansible.builtin.systemd_service": map[string]any{"name": "demo.service", "state": "reloaded"}},
}

func demoVars(root string) map[string]any {
	return map[string]any{
		"vars":       map[string]any{"demo_version": demoV1, "demo_level": "info"},
		"vars_files": []string{filepath.Join(root, "playbooks/vars/demo_service.yml")},
	}
}

func play(root string, tasks []task) map[string]any {
	p := demoVars(root)
	p["name"] = "richt-bench"
	p["tasks"] = tasks
	p["handlers"] = handlers
	return p
}

func role() task {
	return task{"name": "the demo role", "ansible.builtin.include_role": map[string]any{"name": "richt.services.service"}}
}

// builtinRole is what a user writes for the demo role with built-in modules: the package,
// the drop-ins (directory first), the service, handlers for restart and reload.
func builtinRole() []task {
	return []task{
		{"name": "built-in drop-in directory", "ansible.builtin.file": map[string]any{"path": dropinDir, "state": "directory", "mode": "0755"}},
		{"name": "built-in package", "ansible.builtin.dnf": map[string]any{"name": nevraV1, "state": "present", "allow_downgrade": true, "use_backend": dnfBackend}, "notify": "bench restart"},
		{"name": "built-in drop-ins", "ansible.builtin.copy": map[string]any{"dest": dropinDir + "/{{ item.name }}", "content": "{{ item.content }}", "mode": "0644"},
			"loop": "{{ service_dropins }}", "register": "bench_dropins", "notify": "bench reload"},
		{"name": "built-in service", "ansible.builtin.systemd_service": map[string]any{"name": "demo.service", "state": "started", "enabled": true,
			"daemon_reload": "{{ bench_dropins is changed }}"}},
		flush(),
	}
}

// noStartLimit lifts systemd's start rate limit (5 starts in 10 s) for demo.service on
// both sides: the rows restart it more often than that, and a refused start would fail
// whichever side hit it. A runtime drop-in (/run), so the resets between rows, which
// remove /etc's drop-in directory, leave it in place.
func noStartLimit() task {
	return task{"name": "no start rate limit for the benched unit", "ansible.builtin.shell": "mkdir -p /run/systemd/system/demo.service.d && " +
		"printf '[Unit]\\nStartLimitIntervalSec=0\\n' > /run/systemd/system/demo.service.d/00-bench-no-start-limit.conf && systemctl daemon-reload"}
}

// setupPlay converges every target with the demo role (not measured).
func setupPlay(root string) []map[string]any {
	return []map[string]any{play(root, []task{noStartLimit(), repoFile("fixtures", "/srv/richt-repos/fixtures"), role()})}
}

// Sides of a row. The Mitogen sides run in a play of their own (the strategy is a play
// keyword) right after the default-strategy play of the same round.
const (
	sideOurs, sideBuiltin               = "ours", "builtin"
	sideOursMitogen, sideBuiltinMitogen = "ours-mitogen", "builtin-mitogen"
)

// sideFn is one side's tasks for a round; mark names the segment a row's tasks add to, and
// side names the side (rows that write a file make each side's content its own, so that
// every side's task is a change).
type sideFn func(r int, side string, mark func(row string) task) []task

// rowsPlay is one ansible-playbook run measuring one or more rows.
type rowsPlay struct {
	name      string
	pre, post []task // set-up and clean-up, not measured
	// restore follows every side's tasks, not measured: it puts the target back where each
	// side starts (a side that fails half-way, like the built-in dnf under Mitogen after an
	// upgrade, would otherwise hand the next side a target where its change is a no-op).
	restore       []task
	ours, builtin sideFn
	mitogen       bool // also the two Mitogen sides
	firstRound    int  // 0: round 0 is a warm-up (not reported); 1: every round counts
	rounds        int
	hosts         string
	forks         int
}

// plays lays the rounds out: per round the default-strategy play (ours, then built-ins),
// then with Mitogen the mitogen_linear play (built-ins, then ours). Measured plays ignore
// errors so that one failing side is recorded (the timing callback notes it) and the
// other sides and rounds still run.
func (rp rowsPlay) plays(root string) []map[string]any {
	var out []map[string]any
	if len(rp.pre) > 0 {
		out = append(out, play(root, append([]task{ignore()}, rp.pre...)))
	}
	for r := rp.firstRound; r <= rp.rounds; r++ {
		side := func(f sideFn, name string) []task {
			ts := f(r, name, func(row string) task { return marker(row, name, r) })
			if len(rp.restore) > 0 {
				ts = append(append(ts, ignore()), rp.restore...)
			}
			return ts
		}
		p := play(root, append(side(rp.ours, sideOurs), side(rp.builtin, sideBuiltin)...))
		p["ignore_errors"] = true
		out = append(out, p)
		if rp.mitogen {
			m := play(root, append(side(rp.builtin, sideBuiltinMitogen), side(rp.ours, sideOursMitogen)...))
			m["ignore_errors"] = true
			m["strategy"] = "mitogen_linear"
			out = append(out, m)
		}
	}
	if len(rp.post) > 0 {
		out = append(out, play(root, append([]task{ignore()}, rp.post...)))
	}
	return out
}

// one repeats a task list under a single row.
func one(row string, ts ...task) sideFn {
	return func(r int, side string, mark func(string) task) []task { return append([]task{mark(row)}, ts...) }
}

// coldPlay measures each module's first task on a target whose binary cache was emptied.
func coldPlay(root string) []map[string]any {
	return []map[string]any{play(root, []task{
		ignore(),
		{"name": "connection warm-up", "ansible.builtin.raw": "true"},
		{"name": "empty the binary cache", "ansible.builtin.file": map[string]any{"path": "/root/.cache/richt.services", "state": "absent"}},
		marker("cold", "ours-rpm", 1), oursPackage(demoV1),
		marker("cold", "builtin-dnf", 1), builtinPackage(nevraV1),
		marker("cold", "ours-svc", 1), oursService(),
		marker("cold", "builtin-systemd", 1), builtinService(),
	})}
}

// singlePlays are the rows measured on one target, each its own ansible-playbook run so
// that no row inherits a long play's state (run in this order).
func singlePlays(rounds int, mitogen bool) []rowsPlay {
	dropinOurs := func(r int, side string, mark func(string) task) []task {
		return []task{mark("dropin"),
			{"name": "ours drop-in", "register": "bench_ours_dropin", "richt.services.unit_override": map[string]any{
				"unit": "demo.service", "name": "30-bench-ours.conf", "daemon_reload": false,
				"content": fmt.Sprintf("[Service]\nEnvironment=BENCH_OURS=%s-%d\n", side, r)}},
			{"name": "ours reload", "richt.services.systemd_lifecycle": map[string]any{
				"unit": "demo.service", "state": "running", "reload_on": []string{"{{ bench_ours_dropin }}"}}}}
	}
	dropinBuiltin := func(r int, side string, mark func(string) task) []task {
		return []task{mark("dropin"),
			{"name": "built-in drop-in", "notify": "bench reload", "ansible.builtin.copy": map[string]any{
				"dest": dropinDir + "/31-bench-builtin.conf", "mode": "0644",
				"content": fmt.Sprintf("[Service]\nEnvironment=BENCH_BUILTIN=%s-%d\n", side, r)}},
			flush()}
	}
	updown := func(up, down task) sideFn {
		return func(r int, side string, mark func(string) task) []task {
			return []task{mark("upgrade"), up, mark("downgrade"), down}
		}
	}
	sets := func(f func(string) task) sideFn {
		return func(r int, side string, mark func(string) task) []task {
			return []task{mark("set-noop"), f("1.0"), mark("set-upgrade"), f("2.0"), mark("set-downgrade"), f("1.0")}
		}
	}
	base := rowsPlay{rounds: rounds, mitogen: mitogen, hosts: "one", forks: 1}
	with := func(rp rowsPlay) rowsPlay {
		rp.rounds, rp.mitogen, rp.hosts, rp.forks = base.rounds, base.mitogen, base.hosts, base.forks
		return rp
	}
	// The floor: what a task costs that asks the target for nothing (raw: one command over
	// the connection, no module) and one that runs the smallest module (ping).
	floor := rowsPlay{name: "floor",
		ours:    one("floor", task{"name": "raw true", "ansible.builtin.raw": "true"}),
		builtin: one("floor", task{"name": "ping", "ansible.builtin.ping": nil})}
	return []rowsPlay{
		with(floor),
		with(rowsPlay{name: "pkg-fixtures", ours: one("pkg-fixtures", oursPackage(demoV1)), builtin: one("pkg-fixtures", builtinPackage(nevraV1))}),
		with(rowsPlay{name: "svc", ours: one("svc", oursService()), builtin: one("svc", builtinService())}),
		with(rowsPlay{name: "dropin", ours: dropinOurs, builtin: dropinBuiltin,
			post: []task{{"name": "remove the bench drop-ins", "ansible.builtin.shell": "rm -f " + dropinDir + "/3*-bench-*.conf && systemctl daemon-reload"}}}),
		with(rowsPlay{name: "updown", ours: updown(oursPackage(demoV2), oursPackage(demoV1)), builtin: updown(builtinPackage(nevraV2), builtinPackage(nevraV1)),
			restore: []task{oursPackage(demoV1)}}),
		with(rowsPlay{name: "sets", pre: []task{oursSet("1.0")}, ours: sets(oursSet), builtin: sets(builtinSet), restore: []task{oursSet("1.0")}}),
		with(rowsPlay{name: "pkg-bulk",
			pre: []task{repoFile("bulk", "/srv/richt-repos/bulk"),
				{"name": "bulk metadata cached (dnf makecache)", "ansible.builtin.command": "dnf -q makecache"}},
			ours: one("pkg-bulk", oursPackage(demoV1)), builtin: one("pkg-bulk", builtinPackage(nevraV1)),
			post: []task{{"name": "remove the bulk repository", "ansible.builtin.file": map[string]any{"path": "/etc/yum.repos.d/bulk.repo", "state": "absent"}}}}),
	}
}

func reset() []task {
	return []task{ignore(), {"name": "back to a clean target", "ansible.builtin.shell": "systemctl stop demo.service || true; " +
		"rpm -e demo || true; rm -rf " + dropinDir + " /var/lib/richt; systemctl daemon-reload"}}
}

// rolePlay measures the demo role's converge from a clean target and its no-op re-run.
func rolePlay(rounds int, mitogen bool) rowsPlay {
	return demoRows("role", "role", "", role, rounds, mitogen)
}

// demoRows is a play measuring ours (the role or the service task) converging the demo
// service from a clean target and re-running, against the built-in play doing the same;
// its rows are PREFIX-converge and PREFIX-noop, with suffix after them (role-converge-el).
func demoRows(name, prefix, suffix string, ours func() task, rounds int, mitogen bool) rowsPlay {
	converge, noop := prefix+"-converge"+suffix, prefix+"-noop"+suffix
	return rowsPlay{name: name, rounds: rounds, mitogen: mitogen, hosts: "one", forks: 1,
		ours: func(r int, side string, mark func(string) task) []task {
			return append(reset(), mark(converge), ours(), mark(noop), ours())
		},
		builtin: func(r int, side string, mark func(string) task) []task {
			ts := append(reset(), mark(converge))
			ts = append(ts, builtinRole()...)
			return append(append(ts, mark(noop)), builtinRole()...)
		},
		post: []task{role()},
	}
}

// scalePlay measures, on n targets at once (forks = n), the demo role's no-op re-run and a
// changed run: a new log level in a reloadable drop-in, so each round changes one file and
// reloads the service on every host. Each side sets a level of its own, so each side's run
// is a change. The set-up play converged every target, so every round counts.
func scalePlay(n, rounds int) rowsPlay {
	noop, change := fmt.Sprintf("scale-noop-%d", n), fmt.Sprintf("scale-change-%d", n)
	// Each side's changed run sets a level of its own, so it is a change; its no-op run
	// keeps the level the other side's last changed run left.
	level := func(side string, r int) map[string]any {
		return map[string]any{"demo_level": fmt.Sprintf("%s%d", side, r)}
	}
	left := func(r int) map[string]any {
		if r <= 1 {
			return map[string]any{"demo_level": "info"}
		}
		return level("builtin", r-1)
	}
	return rowsPlay{name: fmt.Sprintf("scale-%d", n), rounds: rounds, firstRound: 1, hosts: fmt.Sprintf("h%d", n), forks: n,
		ours: func(r int, side string, mark func(string) task) []task {
			same, changed := role(), role()
			same["vars"], changed["vars"] = left(r), level("ours", r)
			return []task{mark(noop), same, mark(change), changed}
		},
		builtin: func(r int, side string, mark func(string) task) []task {
			return []task{mark(noop), {"name": "built-in play", "block": builtinRole(), "vars": level("ours", r)},
				mark(change), {"name": "built-in play, new level", "block": builtinRole(), "vars": level("builtin", r)}}
		},
		post: []task{role()},
	}
}

// serviceTask is the demo service as one richt.services.service task in a play, without
// the role (no include, no argument validation): the play vars the role reads.
func serviceTask() task {
	return task{"name": "the demo service", "richt.services.service": map[string]any{
		"name": "{{ service_name }}", "packages": "{{ service_packages }}",
		"dropins": "{{ service_dropins }}", "processes": "{{ service_processes }}"}}
}

// servicePlay measures the service module directly in a play: converge from clean and the
// no-op re-run, against the same built-in play as the role rows.
func servicePlay(rounds int, mitogen bool) rowsPlay {
	return demoRows("service", "service", "", serviceTask, rounds, mitogen)
}

// elPlays are the package and role rows again on the target whose RPM database holds an
// EL server's worth of packages (registered by bench.elSized before they run), under row
// names of their own.
func elPlays(rounds int, mitogen bool) []rowsPlay {
	updown := func(up, down task) sideFn {
		return func(r int, side string, mark func(string) task) []task {
			return []task{mark("upgrade-el"), up, mark("downgrade-el"), down}
		}
	}
	return []rowsPlay{
		{name: "pkg-el", rounds: rounds, mitogen: mitogen, hosts: "one", forks: 1,
			ours: one("pkg-el", oursPackage(demoV1)), builtin: one("pkg-el", builtinPackage(nevraV1))},
		{name: "updown-el", rounds: rounds, mitogen: mitogen, hosts: "one", forks: 1,
			ours: updown(oursPackage(demoV2), oursPackage(demoV1)), builtin: updown(builtinPackage(nevraV2), builtinPackage(nevraV1)),
			restore: []task{oursPackage(demoV1)}},
		demoRows("role-el", "role", "-el", role, rounds, mitogen),
	}
}
