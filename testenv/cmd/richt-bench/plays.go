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

// singlePlays are the rows measured on one target, each its own ansible-playbook run so
// that no row inherits a long play's state (run in this order).
func singlePlays(root string, rounds int) []namedPlay {
	cold := []task{
		ignore(),
		{"name": "connection warm-up", "ansible.builtin.raw": "true"},
		{"name": "empty the binary cache", "ansible.builtin.file": map[string]any{"path": "/root/.cache/richt.services", "state": "absent"}},
		marker("cold", "ours-rpm", 1), oursPackage(demoV1),
		marker("cold", "builtin-dnf", 1), builtinPackage(nevraV1),
		marker("cold", "ours-svc", 1), oursService(),
		marker("cold", "builtin-systemd", 1), builtinService(),
	}
	var pkg, svc, dropin, updown, bulk []task
	sets := []task{ignore(), oursSet("1.0")}
	for r := 0; r <= rounds; r++ {
		pkg = append(pkg, marker("pkg-fixtures", "ours", r), oursPackage(demoV1), marker("pkg-fixtures", "builtin", r), builtinPackage(nevraV1))
		svc = append(svc, marker("svc", "ours", r), oursService(), marker("svc", "builtin", r), builtinService())
		dropin = append(dropin,
			marker("dropin", "ours", r),
			task{"name": "ours drop-in", "register": "bench_ours_dropin", "richt.services.unit_override": map[string]any{
				"unit": "demo.service", "name": "30-bench-ours.conf", "daemon_reload": false,
				"content": fmt.Sprintf("[Service]\nEnvironment=BENCH_OURS=%d\n", r)}},
			task{"name": "ours reload", "richt.services.systemd_lifecycle": map[string]any{
				"unit": "demo.service", "state": "running", "reload_on": []string{"{{ bench_ours_dropin }}"}}},
			marker("dropin", "builtin", r),
			task{"name": "built-in drop-in", "notify": "bench reload", "ansible.builtin.copy": map[string]any{
				"dest": dropinDir + "/31-bench-builtin.conf", "mode": "0644",
				"content": fmt.Sprintf("[Service]\nEnvironment=BENCH_BUILTIN=%d\n", r)}},
			flush(),
		)
		updown = append(updown,
			marker("upgrade", "ours", r), oursPackage(demoV2), marker("downgrade", "ours", r), oursPackage(demoV1),
			marker("upgrade", "builtin", r), builtinPackage(nevraV2), marker("downgrade", "builtin", r), builtinPackage(nevraV1))
		sets = append(sets,
			marker("set-noop", "ours", r), oursSet("1.0"), marker("set-noop", "builtin", r), builtinSet("1.0"),
			marker("set-upgrade", "ours", r), oursSet("2.0"), marker("set-downgrade", "ours", r), oursSet("1.0"),
			marker("set-upgrade", "builtin", r), builtinSet("2.0"), marker("set-downgrade", "builtin", r), builtinSet("1.0"))
		bulk = append(bulk, marker("pkg-bulk", "ours", r), oursPackage(demoV1), marker("pkg-bulk", "builtin", r), builtinPackage(nevraV1))
	}
	dropin = append(dropin, ignore(),
		task{"name": "remove the bench drop-ins", "ansible.builtin.shell": "rm -f " + dropinDir + "/3*-bench-*.conf && systemctl daemon-reload"})
	bulk = append([]task{ignore(), repoFile("bulk", "/srv/richt-repos/bulk"),
		{"name": "bulk metadata cached (dnf makecache)", "ansible.builtin.command": "dnf -q makecache"}}, bulk...)
	bulk = append(bulk, ignore(),
		task{"name": "remove the bulk repository", "ansible.builtin.file": map[string]any{"path": "/etc/yum.repos.d/bulk.repo", "state": "absent"}})
	var out []namedPlay
	for _, p := range []struct {
		name  string
		tasks []task
	}{{"cold", cold}, {"pkg-fixtures", pkg}, {"svc", svc}, {"dropin", dropin}, {"updown", updown}, {"sets", sets}, {"pkg-bulk", bulk}} {
		out = append(out, namedPlay{p.name, []map[string]any{play(root, p.tasks)}})
	}
	return out
}

// namedPlay is one ansible-playbook run.
type namedPlay struct {
	name  string
	plays []map[string]any
}

func reset() []task {
	return []task{ignore(), {"name": "back to a clean target", "ansible.builtin.shell": "systemctl stop demo.service || true; " +
		"rpm -e demo || true; rm -rf " + dropinDir + " /var/lib/richt; systemctl daemon-reload"}}
}

// rolePlay measures the demo role's converge from a clean target and its no-op re-run.
func rolePlay(root string, rounds int) []map[string]any {
	var ts []task
	for r := 0; r <= rounds; r++ {
		ts = append(ts, reset()...)
		ts = append(ts, marker("role-converge", "ours", r), role(), marker("role-noop", "ours", r), role())
		ts = append(ts, reset()...)
		ts = append(ts, marker("role-converge", "builtin", r))
		ts = append(ts, builtinRole()...)
		ts = append(ts, marker("role-noop", "builtin", r))
		ts = append(ts, builtinRole()...)
	}
	return []map[string]any{play(root, ts)}
}

// manyPlay measures the no-op play on every target at once.
func manyPlay(root string, rounds int) []map[string]any {
	var ts []task
	for r := 0; r <= rounds; r++ {
		ts = append(ts, marker("many-noop", "ours", r), role(), marker("many-noop", "builtin", r))
		ts = append(ts, builtinRole()...)
	}
	return []map[string]any{play(root, ts)}
}
