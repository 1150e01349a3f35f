// Command richt-soak runs a random, seeded sequence of module runs on one real target with
// faults injected between and during them, and checks after every step that nothing is
// half-done and that every reaction owed was delivered exactly once (docs/reliability.md,
// "Soak"):
//
//	richt-soak [-for 10m] [-seed N] [-faults kind,...] [-modules BINARY]
//
// The steps: rpm_exact pins moving up and down (one package and a set), unit_override
// drop-ins changing, systemd_lifecycle with a restart_on, and the service module (with a
// sensitive drop-in); check mode mixed in. The faults: SIGKILL of the module during its
// run, SIGKILL of a transaction's supervisor, a stop of the caller's unit (the module run
// by a oneshot unit), two runs at once, a corrupt durable record, systemctl daemon-reexec
// during a run, a full disk under the drop-ins, a reboot of the target during a run (clean,
// or a power loss). A fault that needs a package transaction forces a step that moves the
// version, outside check mode; each fault records whether it landed (the process existed
// and was killed, the run was cut short or overlapped, the write met the full disk, the
// module read the corrupt record, the restart caught DNF at work), and a kind that never
// landed fails the soak.
//
// After every step the service converges to what was last asked, and the soak checks: one
// build per package name and `dnf check` clean; no temporary file left; the unit's
// restarts and reloads, counted from a timeline the unit itself writes, against what the
// runs owed (none lost, none doubled, the last start on the installed version and the last
// reaction with the asked level); a converging run after a successful one changes nothing;
// a check-mode run changes nothing; the corrupt-record run's result; no secret in any
// output (diff on, every run's output and the journal read). It prints the counts per fault
// kind (drawn and landed) and, for a violation, the seed and the step; the same seed
// replays the same sequence. Not part of make test: `make soak` (SOAK_ARGS=-for 30m).
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"math/rand"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/richt/services/modules"
	"github.com/richt/services/testenv"
	"github.com/richt/services/testenv/fixtures"
)

// secret is the start of the sensitive drop-in's content (the level follows, so the
// drop-in changes, and a diff would show it, whenever the level does): it must never
// appear in any output.
const secret = "SOAK_TOKEN=s3cr3t-soak-4711"

func main() { os.Exit(soakMain()) }

// soakMain is the soak; its exit code is main's. It returns rather than exits, so that the
// target is always removed: an os.Exit in main skipped the deferred Terminate, and every
// soak that found a violation left its container running. SIGINT and SIGTERM end the
// steps the same way.
func soakMain() int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	dur := flag.Duration("for", 10*time.Minute, "how long to run steps (the target's start and the final check come on top)")
	seed := flag.Int64("seed", time.Now().UnixNano(), "seed of the random sequence (printed; the same seed replays it)")
	only := flag.String("faults", "", "comma-separated fault kinds to draw from (default: all of "+strings.Join(faultKinds, ",")+"); the seed replays with the same list")
	prebuilt := flag.String("modules", "", "a multi-call module binary (linux) to soak instead of building this tree's, e.g. a deliberately broken build (docs/reliability.md)")
	flag.Parse()
	if *only != "" {
		kinds, err := pickFaults(*only)
		if err != nil {
			fmt.Fprintln(os.Stderr, "richt-soak: -faults:", err)
			return 2
		}
		faultKinds = kinds
	}
	at := commit()
	fmt.Printf("richt-soak: seed %d, for %s, image %s, at %s\n", *seed, *dur, generation(), at)
	s, err := start(ctx, *seed, *prebuilt)
	if err != nil {
		fmt.Fprintln(os.Stderr, "richt-soak:", err)
		return 2
	}
	defer s.t.Terminate(context.Background())
	began := time.Now()
	deadline := began.Add(*dur)
	for time.Now().Before(deadline) && len(s.violations) == 0 && ctx.Err() == nil {
		s.step(context.Background())
	}
	if ctx.Err() != nil {
		fmt.Fprintln(os.Stderr, "richt-soak: interrupted; removing the target")
		return 2
	}
	s.verdict()
	s.report(*seed, time.Since(began), at)
	if len(s.violations) > 0 {
		return 1
	}
	return 0
}

type soak struct {
	t     *testenv.Target
	rnd   *rand.Rand
	bins  map[string]string // module -> path on the host (a link named after it)
	steps int
	runs  int
	// drawn and landed count the faults by kind: drawn for the step, and whether it hit.
	drawn, landed map[string]int
	outputs       []string // every output read since the last check, searched for the secret
	// version and level are what the last completed run of the service asked for.
	version, level string
	violations     []string

	led ledger
	// lines is how many lines of the timeline file were read; levelNow is 20-level.conf's
	// level as last read.
	lines    int
	levelNow string
	cursor   string // the journal's cursor after the last read
	// diffs counts results whose diff showed the non-sensitive level drop-in: proof that
	// the secret check reads diffs in which the sensitive one would show.
	diffs int
	// repeated counts reactions served twice after a fault that kills a run between a
	// reaction and its record's removal (at-least-once, by design): not a violation.
	repeated int
}

// pkgVersion is a version the soak pins, and whether its package restarts the unit from
// its %postun on an upgrade or downgrade away from it, as EL's %systemd_postun_with_restart
// does (testenv's SystemdUnits). 2.0 does, so a move from 2.0 restarts the unit inside the
// transaction and a following restart_on must not restart it again.
type pkgVersion struct {
	version    string
	restartsOn bool
}

var pkgVersions = []pkgVersion{{"1.0", false}, {"2.0", true}}

var versions = []string{"0:1.0-1.noarch", "0:2.0-1.noarch"}
var levels = []string{"info", "debug", "warn"}

func generation() string {
	if g := os.Getenv("TESTENV_SUITE"); g != "" {
		return g
	}
	return "trixie (default)"
}

func commit() string {
	out, err := exec.Command("git", "rev-parse", "--short", "HEAD").Output()
	if err != nil {
		return "unknown commit"
	}
	c := strings.TrimSpace(string(out))
	if st, _ := exec.Command("git", "status", "--porcelain", "--untracked-files=no").Output(); len(st) > 0 {
		c += " (with uncommitted changes)"
	}
	return c
}

func start(ctx context.Context, seed int64, prebuilt string) (*soak, error) {
	bin := prebuilt
	if bin == "" {
		var err error
		if bin, err = build(); err != nil {
			return nil, err
		}
	}
	s := &soak{rnd: rand.New(rand.NewSource(seed)), bins: map[string]string{}, drawn: map[string]int{}, landed: map[string]int{}}
	s.led.restartsOnUpgradeFrom = func(v string) bool {
		for _, p := range pkgVersions {
			if p.version == v {
				return p.restartsOn
			}
		}
		return false
	}
	dir, err := os.MkdirTemp("", "richt-soak-bin-")
	if err != nil {
		return nil, err
	}
	for _, m := range modules.Names() {
		p := filepath.Join(dir, m)
		if err := os.Symlink(bin, p); err != nil {
			return nil, err
		}
		s.bins[m] = p
	}
	if s.t, err = testenv.StartContext(ctx, testenv.WithLabel("org.richt.soak", "1")); err != nil {
		return nil, err
	}
	if err := s.t.WriteFile(ctx, markerPath, []byte(marker), 0o755); err != nil {
		return nil, fmt.Errorf("write the timeline marker: %w", err)
	}
	repo, err := os.MkdirTemp("", "richt-soak-repo-")
	if err != nil {
		return nil, err
	}
	var pkgs []testenv.Package
	for _, v := range pkgVersions {
		pkgs = append(pkgs, soakPackage(v))
	}
	if err := testenv.BuildRepoDir(repo, pkgs...); err != nil {
		return nil, err
	}
	if err := s.t.AddRepo(ctx, "fixtures", repo); err != nil {
		return nil, err
	}
	s.version, s.level = versions[0], levels[0]
	if _, err := s.converge(ctx, "set-up"); err != nil {
		return nil, err
	}
	// The set-up's install and first start are owed by nothing the ledger tracks yet.
	s.led.take()
	return s, nil
}

// soakPackage is the demo package with a %pre that takes a second, as a real package's
// scriptlets or payload do: a fault "during a transaction" then meets DNF at work, where the
// fixture alone is installed in about 0.2 s. %pre then writes the install into the
// timeline, and the package ships its version for the marker to read.
func soakPackage(v pkgVersion) testenv.Package {
	p := fixtures.DemoPackage(v.version)
	p.Files["/usr/share/demo/version"] = testenv.File{Content: v.version + "\n", Mode: 0o644}
	p.Scriptlets = map[string]string{"pre": "sleep 1\nmkdir -p /run/demo\necho 'soak-install " + v.version + "' >> " + timelineFile}
	if v.restartsOn {
		p.SystemdUnits = []string{"demo.service"}
	}
	return p
}

// build compiles the multi-call binary for the targets.
func build() (string, error) {
	dir, err := os.MkdirTemp("", "richt-soak-build-")
	if err != nil {
		return "", err
	}
	out := filepath.Join(dir, "richt-modules")
	cmd := exec.Command("go", "build", "-trimpath", "-o", out, modules.Command)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux")
	if msg, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("build: %w\n%s", err, msg)
	}
	return out, nil
}

// service is the demo service (fixtures.DemoService) with the timeline marker in its start
// and reload, and a sensitive drop-in besides.
func service(version, level string) map[string]any {
	args := fixtures.DemoService(version, level)
	dropins := args["dropins"].([]any)
	for _, d := range dropins {
		if m := d.(map[string]any); m["name"] == "10-reload.conf" {
			m["content"] = "[Service]\nExecStartPre=" + markerPath + " start\nExecReload=" + markerPath + " reload\nExecReload=/bin/kill -HUP $MAINPID\n"
		}
	}
	// reload: true as the level's drop-in: a change of the level owes one reload, not a
	// restart, so a lost reload cannot hide behind a restart the secret's change owed.
	args["dropins"] = append(dropins, map[string]any{"unit": "demo.service", "name": "30-secret.conf", "reload": true,
		"sensitive": true, "mode": "0600", "content": "[Service]\nEnvironment=" + secret + "-" + level + "\n"})
	return args
}

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
func (s *soak) accounted(ctx context.Context, module string, check bool, f func() (failed bool)) {
	from, boots := len(s.led.events), s.led.boots
	failed := f()
	if s.led.boots != boots {
		from = -1 // the start at boot, and whatever came after, belong to this run
	}
	changed := s.snapshot(ctx)
	s.led.account(run{module: module, check: check, failed: failed, from: from, levelChanged: changed, level: s.levelNow})
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
// that was not killed always answers).
func (s *soak) result(module, out string) (map[string]any, error) {
	var r map[string]any
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		return nil, fmt.Errorf("%s: not one JSON object: %v: %q", module, err, out)
	}
	if d, _ := json.Marshal(r["diff"]); strings.Contains(string(d), "DEMO_LEVEL=") {
		s.diffs++
	}
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

// ops are the steps the soak draws from, with their weights.
var ops = []struct {
	name   string
	weight int
}{
	{"service", 4}, {"pin", 3}, {"set", 1}, {"dropin", 3}, {"lifecycle", 2},
}

// faultKinds are the faults the soak injects, drawn for about a third of the steps.
var faultKinds = []string{"kill-module", "kill-supervisor", "stop-caller", "concurrent", "corrupt-record", "daemon-reexec", "full-disk", "reboot", "power-loss"}

// transactionFaults meet a package transaction: their step moves the version.
var transactionFaults = []string{"kill-module", "kill-supervisor", "stop-caller", "concurrent", "daemon-reexec", "reboot", "power-loss"}

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

// Step is one drawn step: the operation, the fault (or none), check mode, and the version
// and level it asks for.
type Step struct {
	Op, Fault      string
	Check          bool
	Version, Level string
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

// Draw picks the next step from r given the version and level the service was last asked
// for (what the target holds before the step): the whole sequence is a function of the
// seed. A fault draws a step it can hit: a transaction fault one that moves the version
// (pin, set or service; not in check mode), a full disk one that writes a drop-in, a
// corrupt record one that reads it (service or lifecycle).
func Draw(r *rand.Rand, version, level string) Step {
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
		st.Fault = faultKinds[r.Intn(len(faultKinds))]
	}
	st.Check = r.Intn(5) == 0
	st.Version, st.Level = versions[r.Intn(len(versions))], levels[r.Intn(len(levels))]
	switch {
	case slices.Contains(transactionFaults, st.Fault):
		if !slices.Contains([]string{"service", "pin", "set"}, st.Op) {
			st.Op = []string{"service", "pin", "set"}[r.Intn(3)]
		}
		st.Check = false
		if st.Version == version {
			st.Version = other(r, versions, version)
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
	return st
}

func (s *soak) step(ctx context.Context) {
	s.steps++
	st := Draw(s.rnd, s.version, s.level)
	module, args := s.args(st.Op, st.Version, st.Level)
	if st.Check {
		args["_ansible_check_mode"] = true
	}
	label := fmt.Sprintf("step %d: %s %s/%s%s", s.steps, st.Op, st.Version, st.Level, map[bool]string{true: " (check mode)"}[st.Check])
	versionBefore, levelBefore := s.led.installed, s.levelNow
	succeeded := false
	if st.Fault != "" {
		s.drawn[st.Fault]++
		label += ", fault " + st.Fault
		landed, note := s.inject(ctx, st.Fault, module, st.Op, args)
		if landed {
			s.landed[st.Fault]++
		}
		if note != "" {
			s.violations = append(s.violations, label+": "+note)
		}
	} else {
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
func (s *soak) args(op, version, level string) (string, map[string]any) {
	switch op {
	case "pin":
		return "rpm_exact", map[string]any{"name": "demo", "version": version}
	case "set":
		return "rpm_exact", map[string]any{"packages": []any{map[string]any{"name": "demo", "version": version}}}
	case "dropin":
		return "unit_override", map[string]any{"unit": "demo.service", "name": "20-level.conf", "daemon_reload": false,
			"content": "[Service]\nEnvironment=DEMO_LEVEL=" + level + "\n"}
	case "lifecycle":
		return "systemd_lifecycle", map[string]any{"unit": "demo.service", "enabled": true,
			"restart_on": []any{map[string]any{"changed": true, "package_changed": true}}}
	}
	return "service", service(version, level)
}

// Shell helpers for the fault scripts: alive (a process that runs, not a zombie) and
// waitscope (until a transaction's scope runs, while the condition holds, at most ~6 s).
const shellHelpers = `alive() { [ -e /proc/$1 ] && ! grep -q '^State:[[:space:]]*Z' /proc/$1/status 2>/dev/null; }
scope() { systemctl list-units --no-legend --plain 'richt-rpm-transaction-*' | grep -q .; }
waitscope() { i=0; while [ $i -lt 300 ] && eval "$1" && ! scope; do i=$((i+1)); sleep 0.02; done; }
`

// inject runs the step's module under one fault and reports whether the fault landed, and
// a violation it saw, if any.
func (s *soak) inject(ctx context.Context, fault, module, op string, args map[string]any) (landed bool, violation string) {
	bin, err := s.t.InstallModule(ctx, s.bins[module])
	if err != nil {
		return false, "install module: " + err.Error()
	}
	args["_ansible_diff"] = true
	data, _ := json.Marshal(args)
	_ = s.t.WriteFile(ctx, "/var/tmp/soak-args.json", data, 0o600)
	s.runs++
	// sh runs a fault script whose last line is "soak-hit=0|1"; it returns the rest.
	sh := func(script string) (out string, hit bool) {
		res, err := s.t.Exec(ctx, "/bin/sh", "-c", shellHelpers+script)
		if err != nil {
			violation = "fault script: " + err.Error()
			return "", false
		}
		out = res.Stdout + res.Stderr
		s.outputs = append(s.outputs, out)
		body, last, _ := cutLast(res.Stdout)
		return body, last == "soak-hit=1"
	}
	// one checks that a run that was not killed answered with one JSON object.
	one := func(out string) map[string]any {
		r, err := s.result(module, strings.TrimSpace(out))
		if err != nil && violation == "" {
			violation = err.Error()
		}
		return r
	}
	after := fmt.Sprintf("%.2f", s.rnd.Float64()*2.5) // after the scope appeared: in DNF or in the module's reactions
	failed := false
	s.accounted(ctx, module, false, func() bool {
		switch fault {
		case "kill-module":
			_, landed = sh(fmt.Sprintf(`%s /var/tmp/soak-args.json >/var/tmp/soak-out 2>&1 & p=$!
waitscope "alive $p"; sleep %s; kill -9 $p 2>/dev/null; wait $p; rc=$?; cat /var/tmp/soak-out; echo; [ $rc = 137 ] && echo soak-hit=1 || echo soak-hit=0`, bin, after))
			failed = true
		case "kill-supervisor":
			// The supervisor is the process in the transaction's scope that runs the module's
			// own executable (DNF runs beside it); found by that, not by its arguments.
			var out string
			out, landed = sh(fmt.Sprintf(`%[1]s /var/tmp/soak-args.json >/var/tmp/soak-out 2>&1 & p=$!
waitscope "alive $p"; sleep %[2]s; hit=0; exe=$(readlink -f %[1]s)
for u in $(systemctl list-units --no-legend --plain 'richt-rpm-transaction-*' | awk '{print $1}'); do
  cg=$(systemctl show -p ControlGroup --value "$u")
  for q in $(cat /sys/fs/cgroup$cg/cgroup.procs 2>/dev/null); do
    [ "$(readlink /proc/$q/exe)" = "$exe" ] && kill -9 $q 2>/dev/null && hit=1
  done
done
wait $p; cat /var/tmp/soak-out; echo; echo soak-hit=$hit`, bin, fmt.Sprintf("%.2f", s.rnd.Float64()*0.8)))
			r := one(out)
			failed = r == nil || r["failed"] == true
		case "stop-caller":
			// The caller is a oneshot unit running the module through a shell that writes the
			// exit status when the module ended by itself: no status file, the stop cut it short.
			_, landed = sh(fmt.Sprintf(`rm -f /var/tmp/soak-rc /var/tmp/soak-out
systemd-run --quiet --unit=soak-caller-%[1]d --service-type=oneshot --no-block /bin/sh -c '%[2]s /var/tmp/soak-args.json >/var/tmp/soak-out 2>&1; echo $? >/var/tmp/soak-rc'
waitscope "[ ! -e /var/tmp/soak-rc ]"; sleep %[3]s; systemctl stop soak-caller-%[1]d.service
cat /var/tmp/soak-out 2>/dev/null; echo; [ -e /var/tmp/soak-rc ] && echo soak-hit=0 || echo soak-hit=1`, s.steps, bin, after))
			failed = true
		case "concurrent":
			var out string
			out, landed = sh(fmt.Sprintf(`%[1]s /var/tmp/soak-args.json >/var/tmp/soak-out1 2>&1 & p1=$!; %[1]s /var/tmp/soak-args.json >/var/tmp/soak-out2 2>&1 & p2=$!
waitscope "alive $p1 || alive $p2"; alive $p1 && alive $p2 && hit=1 || hit=0; wait
cat /var/tmp/soak-out1; echo; echo soak-between; cat /var/tmp/soak-out2; echo; echo soak-hit=$hit`, bin))
			a, b, _ := strings.Cut(out, "soak-between\n")
			ra, rb := one(a), one(b)
			failed = ra == nil || rb == nil || ra["failed"] == true || rb["failed"] == true
			s.runs++
		case "corrupt-record":
			failed, landed = s.corruptRecord(ctx, bin, module, sh, one, &violation)
		case "daemon-reexec":
			var out string
			out, landed = sh(fmt.Sprintf(`%s /var/tmp/soak-args.json >/var/tmp/soak-out 2>&1 & p=$!
waitscope "alive $p"; sleep %s; systemctl daemon-reexec; alive $p && hit=1 || hit=0; wait $p
cat /var/tmp/soak-out; echo; echo soak-hit=$hit`, bin, after))
			r := one(out)
			failed = r == nil || r["failed"] == true
		case "full-disk":
			var out string
			out, _ = sh(fmt.Sprintf(`d=/etc/systemd/system/demo.service.d; mkdir -p /var/tmp/soak-keep && cp -a $d/. /var/tmp/soak-keep/ &&
mount -t tmpfs -o size=64k soak-full $d && cp -a /var/tmp/soak-keep/. $d/ && dd if=/dev/zero of=$d/.fill bs=4k 2>/dev/null
%s /var/tmp/soak-args.json; echo; rm -f $d/.fill; cp -a $d/. /var/tmp/soak-keep/; umount $d; cp -a /var/tmp/soak-keep/. $d/; rm -rf /var/tmp/soak-keep; echo soak-hit=0`, bin))
			r := one(out)
			failed = r == nil || r["failed"] == true
			// The write met the full disk: the run failed saying so.
			landed = failed && strings.Contains(out, "no space left on device")
		case "reboot", "power-loss":
			failed = true
			landed = s.restart(ctx, fault, bin, &violation)
		}
		return failed
	})
	return landed, violation
}

// corruptRecord writes a half record the module reads (the manager-sync record or the
// unit's pending reaction), runs the module and judges its result; the record is left to
// the module. A corrupt manager-sync record is replaced after the daemon-reload it stands
// for; a corrupt pending reaction fails the run naming the file and what to do, and the
// soak does that, as an operator would.
func (s *soak) corruptRecord(ctx context.Context, bin, module string, sh func(string) (string, bool), one func(string) map[string]any, violation *string) (failed, landed bool) {
	pending := s.rnd.Intn(2) == 1
	target := "/var/lib/richt/manager-sync-due"
	if pending {
		target = "/var/lib/richt/pending/demo.service.json"
	}
	out, _ := sh(fmt.Sprintf(`mkdir -p $(dirname %[1]s) && printf '{"half' > %[1]s; %[2]s /var/tmp/soak-args.json; echo; echo soak-hit=0`, target, bin))
	r := one(out)
	if r == nil {
		return true, false
	}
	failed = r["failed"] == true
	msg := fmt.Sprint(r["msg"])
	left, _ := s.t.Exec(ctx, "/bin/sh", "-c", "cat "+target+" 2>/dev/null")
	switch {
	case pending && !failed:
		*violation = module + " ignored a corrupt pending reaction record and succeeded"
	case pending && !strings.Contains(msg, target):
		*violation = module + "'s refusal of a corrupt pending record does not name it: " + msg
	case pending && left.Stdout != `{"half`:
		*violation = module + " changed the corrupt pending record it refused: " + left.Stdout
	case pending:
		landed = true
		// What the message says: restart by hand, remove the file.
		s.accounted(ctx, "operator", false, func() bool {
			res, err := s.t.Exec(ctx, "/bin/sh", "-c", "systemctl restart demo.service && rm -f "+target)
			return err != nil || res.ExitCode != 0
		})
	case failed:
		*violation = module + " failed over a corrupt manager-sync record: " + msg
	case left.Stdout == `{"half`:
		*violation = module + " succeeded and left the corrupt manager-sync record in place"
	default:
		landed = true
	}
	return failed, landed
}

// restart runs the step's module as a unit of its own (a process left behind by an exec
// does not outlive the exec), then restarts the target under it: cleanly (systemd stops
// its units, the transaction's scope among them) or as a power loss (everything killed at
// once). The restart comes a random moment within 0.4 s after the transaction's scope
// appeared, inside the one-second %pre. It reports whether the restart caught DNF at work:
// a new transaction record without a finished outcome, or with the stop its supervisor saw.
func (s *soak) restart(ctx context.Context, fault, bin string, violation *string) bool {
	delay := fmt.Sprintf("%.2f", s.rnd.Float64()*0.4)
	res, _ := s.t.Exec(ctx, "/bin/sh", "-c", fmt.Sprintf(`rm -f /var/tmp/soak-out; ls -d /var/lib/richt/transactions/*/ > /var/tmp/soak-records 2>/dev/null
systemd-run --quiet --unit=soak-run-%d --service-type=oneshot --no-block -p StandardOutput=file:/var/tmp/soak-out %s /var/tmp/soak-args.json
for i in $(seq 150); do systemctl list-units --no-legend 'richt-rpm-transaction-*' | grep -q . && break; sleep 0.02; done; sleep %s`, s.steps, bin, delay))
	s.outputs = append(s.outputs, res.Stdout+res.Stderr)
	rctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	if err := s.t.Reboot(rctx, fault == "power-loss", 20*time.Second); err != nil {
		*violation = err.Error()
		return false
	}
	// /run, the timeline with it, is empty again; the journal may be too.
	s.lines = 0
	inst, _ := s.t.Exec(ctx, "/bin/sh", "-c", `cat /usr/share/demo/version`)
	s.led.reboot(strings.TrimSpace(inst.Stdout))
	res, _ = s.t.Exec(ctx, "/bin/sh", "-c", `cat /var/tmp/soak-out 2>/dev/null; for d in /var/lib/richt/transactions/*/; do grep -qxF "$d" /var/tmp/soak-records && continue; [ -f "$d/request.json" ] && { ! grep -qs '"done": *true' "$d/outcome.json" || grep -qs '"stopped"' "$d/outcome.json"; } && echo "soak-caught $d"; done`)
	s.outputs = append(s.outputs, res.Stdout)
	return strings.Contains(res.Stdout, "soak-caught ")
}

// cutLast splits off the last non-empty line.
func cutLast(out string) (body, last string, ok bool) {
	t := strings.TrimRight(out, "\n")
	i := strings.LastIndex(t, "\n")
	if i < 0 {
		return "", t, t != ""
	}
	return t[:i], t[i+1:], true
}

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
		out = append(out, strings.Join(reactions, "; ")+"\n  the runs and their events: "+strings.Join(trail, "\n  "))
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
	fmt.Println("\nFor docs/reliability.md:\n\n| generation | seed | ran | steps | module runs | faults drawn/landed (by kind) | restarts / reloads (owed) | violations |\n| --- | ---: | --- | ---: | ---: | --- | --- | ---: |")
	fmt.Printf("| %s | %d | %s, at %s | %d | %d | %d/%d: %s | %d (%d) / %d (%d), %d again after a kill | %d |\n",
		generation(), seed, ran.Round(time.Second), at, s.steps, s.runs, drawn, landed, strings.Join(kinds, ", "),
		s.led.starts, s.led.owedRestarts, s.led.reloads, s.led.owedReloads, s.repeated, len(s.violations))
	for _, v := range s.violations {
		fmt.Printf("VIOLATION (seed %d): %s\n", seed, v)
	}
}
