// Command richt-soak runs a random, seeded sequence of module runs on one real target with
// faults injected between and during them, and checks after every step that nothing is
// half-done (docs/reliability.md, "Soak"):
//
//	richt-soak [-for 10m] [-seed N]
//
// The steps: rpm_exact pins moving up and down (one package and a set), unit_override
// drop-ins changing (one of them sensitive), systemd_lifecycle with the triggers the last
// runs reported, and the service module; check mode mixed in. The faults: SIGKILL of the
// module during its run, SIGKILL of a transaction's supervisor, a stop of the caller's unit
// (the module run by a oneshot unit), two runs at once on the unit, a corrupt durable
// record, systemctl daemon-reexec during a run, a full disk under the drop-ins, a reboot of
// the target during a run (clean, or a power loss). After every
// step it checks the invariants: one build per package name and `dnf check` clean; no
// temporary file left once a run completed; after a converging run of the service module
// the unit runs, enabled, with the requested package and drop-ins, and was started after
// the package it runs was installed (a restart owed is never lost); no secret in any
// output. It prints the counts and, for a violation, the seed and the step; the same seed
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
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/richt/services/modules"
	"github.com/richt/services/testenv"
	"github.com/richt/services/testenv/fixtures"
)

// secret is the content of the sensitive drop-in: it must never appear in any output.
const secret = "SOAK_TOKEN=s3cr3t-soak-4711"

func main() {
	dur := flag.Duration("for", 10*time.Minute, "how long to run steps (the target's start and the final check come on top)")
	seed := flag.Int64("seed", time.Now().UnixNano(), "seed of the random sequence (printed; the same seed replays it)")
	only := flag.String("faults", "", "comma-separated fault kinds to draw from (default: all of "+strings.Join(faultKinds, ",")+"); the seed replays with the same list")
	flag.Parse()
	if *only != "" {
		kinds, err := pickFaults(*only)
		if err != nil {
			fmt.Fprintln(os.Stderr, "richt-soak: -faults:", err)
			os.Exit(2)
		}
		faultKinds = kinds
	}
	fmt.Printf("richt-soak: seed %d, for %s, image %s\n", *seed, *dur, os.Getenv("TESTENV_SUITE"))
	s, err := start(context.Background(), *seed)
	if err != nil {
		fmt.Fprintln(os.Stderr, "richt-soak:", err)
		os.Exit(2)
	}
	defer s.t.Terminate(context.Background())
	deadline := time.Now().Add(*dur)
	for time.Now().Before(deadline) && len(s.violations) == 0 {
		s.step(context.Background())
	}
	s.report(*seed)
	if len(s.violations) > 0 {
		os.Exit(1)
	}
}

type soak struct {
	t       *testenv.Target
	rnd     *rand.Rand
	bins    map[string]string // module -> path on the host (a link named after it)
	steps   int
	runs    int
	faults  map[string]int
	outputs []string // every module output, checked for the secret
	// version and level are what the last completed run of the service asked for.
	version, level string
	violations     []string
}

var versions = []string{"0:1.0-1.noarch", "0:2.0-1.noarch"}
var levels = []string{"info", "debug", "warn"}

func start(ctx context.Context, seed int64) (*soak, error) {
	bin, err := build()
	if err != nil {
		return nil, err
	}
	s := &soak{rnd: rand.New(rand.NewSource(seed)), bins: map[string]string{}, faults: map[string]int{}}
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
	repo, err := os.MkdirTemp("", "richt-soak-repo-")
	if err != nil {
		return nil, err
	}
	if err := testenv.BuildRepoDir(repo, slowDemo("1.0"), slowDemo("2.0")); err != nil {
		return nil, err
	}
	if err := s.t.AddRepo(ctx, "fixtures", repo); err != nil {
		return nil, err
	}
	s.version, s.level = versions[0], levels[0]
	if err := s.converge(ctx, "set-up"); err != nil {
		return nil, err
	}
	return s, nil
}

// slowDemo is the demo package with a %pre that takes a second, as a real package's
// scriptlets or payload do: a fault "during a transaction" then meets DNF at work, where the
// fixture alone is installed in about 0.2 s.
func slowDemo(version string) testenv.Package {
	p := fixtures.DemoPackage(version)
	p.Scriptlets = map[string]string{"pre": "sleep 1"}
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

// service is the demo service (fixtures.DemoService) with a sensitive drop-in besides.
func service(version, level string) map[string]any {
	args := fixtures.DemoService(version, level)
	args["dropins"] = append(args["dropins"].([]any), map[string]any{"unit": "demo.service", "name": "30-secret.conf",
		"sensitive": true, "mode": "0600", "content": "[Service]\nEnvironment=" + secret + "\n"})
	return args
}

// run runs a module in the target and keeps its output.
func (s *soak) run(ctx context.Context, module string, args map[string]any, env ...string) (map[string]any, error) {
	s.runs++
	ctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	out, err := s.t.RunModuleRaw(ctx, s.bins[module], args, env...)
	s.outputs = append(s.outputs, out)
	if err != nil {
		return nil, err
	}
	var r map[string]any
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		return nil, fmt.Errorf("%s: not one JSON object: %v: %s", module, err, out)
	}
	return r, nil
}

// converge runs the service module with what the soak last asked for, until it succeeds
// (a run may meet the leftovers of a fault: a transaction still settling, a lock), and
// checks the invariants of a converged service.
func (s *soak) converge(ctx context.Context, why string) error {
	var last string
	for attempt := 0; attempt < 5; attempt++ {
		r, err := s.run(ctx, "service", service(s.version, s.level))
		if err == nil && r["failed"] != true {
			return nil
		}
		last = fmt.Sprint(err, r["msg"])
		time.Sleep(2 * time.Second)
	}
	return fmt.Errorf("%s: the service does not converge: %s", why, last)
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

// Draw picks the next step and fault from r: the whole sequence is a function of the seed.
func Draw(r *rand.Rand) (op, fault string, check bool) {
	total := 0
	for _, o := range ops {
		total += o.weight
	}
	n := r.Intn(total)
	for _, o := range ops {
		if n < o.weight {
			op = o.name
			break
		}
		n -= o.weight
	}
	if r.Intn(3) == 0 {
		fault = faultKinds[r.Intn(len(faultKinds))]
	}
	check = r.Intn(5) == 0
	return op, fault, check
}

func (s *soak) step(ctx context.Context) {
	s.steps++
	op, fault, check := Draw(s.rnd)
	version, level := versions[s.rnd.Intn(len(versions))], levels[s.rnd.Intn(len(levels))]
	if (fault == "reboot" || fault == "power-loss") && version == s.version {
		// A restart is the fault of a transaction under way: the pin moves, when the step
		// has one.
		version = versions[(slices.Index(versions, s.version)+1)%len(versions)]
	}
	module, args := s.args(op, version, level)
	if check {
		args["_ansible_check_mode"] = true
	}
	label := fmt.Sprintf("step %d: %s%s", s.steps, op, map[bool]string{true: " (check mode)"}[check])
	if fault != "" {
		s.faults[fault]++
		label += ", fault " + fault
		s.inject(ctx, fault, module, args)
	} else {
		r, err := s.run(ctx, module, args)
		if err == nil && r["failed"] != true && !check && op == "service" {
			s.version, s.level = version, level
		}
	}
	// After every step: the service converges to what was last asked, and holds.
	if err := s.converge(ctx, label); err != nil {
		s.violations = append(s.violations, err.Error())
		return
	}
	for _, v := range s.invariants(ctx) {
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

// inject runs the step's module under one fault.
func (s *soak) inject(ctx context.Context, fault, module string, args map[string]any) {
	bin, err := s.t.InstallModule(ctx, s.bins[module])
	if err != nil {
		s.violations = append(s.violations, "install module: "+err.Error())
		return
	}
	data, _ := json.Marshal(args)
	_ = s.t.WriteFile(ctx, "/var/tmp/soak-args.json", data, 0o600)
	delay := fmt.Sprintf("%.2f", s.rnd.Float64()*1.5)
	sh := func(script string) {
		res, _ := s.t.Exec(ctx, "/bin/sh", "-c", script)
		s.outputs = append(s.outputs, res.Stdout+res.Stderr)
	}
	switch fault {
	case "kill-module":
		sh(fmt.Sprintf(`%s /var/tmp/soak-args.json >/var/tmp/soak-out 2>&1 & p=$!; sleep %s; kill -9 $p 2>/dev/null; wait $p; cat /var/tmp/soak-out`, bin, delay))
	case "kill-supervisor":
		sh(fmt.Sprintf(`%s /var/tmp/soak-args.json >/var/tmp/soak-out 2>&1 & p=$!; sleep %s; pkill -9 -f 'exe rpm_exact$'; wait $p; cat /var/tmp/soak-out`, bin, delay))
	case "stop-caller":
		sh(fmt.Sprintf(`systemd-run --quiet --unit=soak-caller-%d --service-type=oneshot --no-block %s /var/tmp/soak-args.json; sleep %s; systemctl stop soak-caller-%d.service`, s.steps, bin, delay, s.steps))
	case "concurrent":
		sh(fmt.Sprintf(`%[1]s /var/tmp/soak-args.json & %[1]s /var/tmp/soak-args.json & wait`, bin))
	case "corrupt-record":
		target := []string{"/var/lib/richt/manager-sync-due", "/var/lib/richt/pending/demo.service.json"}[s.rnd.Intn(2)]
		sh(fmt.Sprintf(`mkdir -p $(dirname %[1]s) && printf '{"half' > %[1]s; %[2]s /var/tmp/soak-args.json; rm -f %[1]s`, target, bin))
	case "daemon-reexec":
		sh(fmt.Sprintf(`%s /var/tmp/soak-args.json & sleep %s; systemctl daemon-reexec; wait`, bin, delay))
	case "reboot", "power-loss":
		// The run starts as a unit of its own (a process left behind by an exec does not
		// outlive the exec), then the target restarts under it: cleanly (systemd stops its
		// units, the transaction's scope among them) or as a power loss (everything killed
		// at once). The restart comes a random moment within 0.4 s after the transaction's
		// scope appeared, inside slowDemo's one-second %pre (after 3 s for a step without a
		// transaction).
		delay = fmt.Sprintf("%.2f", s.rnd.Float64()*0.4)
		sh(fmt.Sprintf(`ls -d /var/lib/richt/transactions/*/ > /var/tmp/soak-records 2>/dev/null
systemd-run --quiet --unit=soak-run-%d --service-type=oneshot --no-block -p StandardOutput=file:/var/tmp/soak-out %s /var/tmp/soak-args.json
for i in $(seq 150); do systemctl list-units --no-legend 'richt-rpm-transaction-*' | grep -q . && break; sleep 0.02; done; sleep %s`, s.steps, bin, delay))
		rctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
		defer cancel()
		if err := s.t.Reboot(rctx, fault == "power-loss", 20*time.Second); err != nil {
			s.violations = append(s.violations, err.Error())
			return
		}
		// Whether the restart caught DNF at work: a new transaction record without a
		// finished outcome, or with the stop its supervisor saw.
		res, _ := s.t.Exec(ctx, "/bin/sh", "-c", `for d in /var/lib/richt/transactions/*/; do grep -qxF "$d" /var/tmp/soak-records && continue; [ -f "$d/request.json" ] && { ! grep -qs '"done": *true' "$d/outcome.json" || grep -qs '"stopped"' "$d/outcome.json"; } && echo "$d"; done`)
		if strings.TrimSpace(res.Stdout) != "" {
			s.faults[fault+" during a transaction"]++
		}
	case "full-disk":
		sh(fmt.Sprintf(`d=/etc/systemd/system/demo.service.d; mkdir -p /var/tmp/soak-keep && cp -a $d/. /var/tmp/soak-keep/ &&
mount -t tmpfs -o size=64k soak-full $d && cp -a /var/tmp/soak-keep/. $d/ && dd if=/dev/zero of=$d/.fill bs=4k 2>/dev/null
%s /var/tmp/soak-args.json; rm -f $d/.fill; cp -a $d/. /var/tmp/soak-keep/; umount $d; cp -a /var/tmp/soak-keep/. $d/; rm -rf /var/tmp/soak-keep`, bin))
	}
}

// invariants are checked after the step and a converging run; each returned string is a
// violation.
func (s *soak) invariants(ctx context.Context) []string {
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
	if lvl := exec(`cat /etc/systemd/system/demo.service.d/20-level.conf`); !strings.Contains(lvl, "DEMO_LEVEL="+s.level) {
		out = append(out, "20-level.conf says "+lvl+", the last run asked for "+s.level)
	}
	// A restart owed is never lost: the running process started after the package it runs
	// was installed.
	if since := exec(`inst=$(rpm -q --qf '%{INSTALLTIME}' demo); up=$(date -d "$(systemctl show -p ActiveEnterTimestamp --value demo.service)" +%s); [ "$up" -ge "$inst" ] && echo ok || echo "active since $up, installed $inst"`); since != "ok" {
		out = append(out, "demo.service was not restarted after its package changed: "+since)
	}
	if nd := exec(`systemctl show -p NeedDaemonReload --value demo.service`); nd != "no" {
		out = append(out, "the manager still needs a reload: NeedDaemonReload="+nd)
	}
	for _, o := range s.outputs {
		if strings.Contains(o, "s3cr3t-soak") {
			out = append(out, "the sensitive drop-in's secret is in a module's output")
			break
		}
	}
	s.outputs = s.outputs[:0]
	return out
}

func (s *soak) report(seed int64) {
	kinds := make([]string, 0, len(s.faults))
	total := 0
	for k, n := range s.faults {
		kinds = append(kinds, fmt.Sprintf("%s %d", k, n))
		if !strings.Contains(k, " during ") { // a subset of its kind, counted there
			total += n
		}
	}
	sort.Strings(kinds)
	fmt.Printf("richt-soak: seed %d: %d steps, %d module runs, %d faults (%s), %d invariant violations\n",
		seed, s.steps, s.runs, total, strings.Join(kinds, ", "), len(s.violations))
	for _, v := range s.violations {
		fmt.Printf("VIOLATION (seed %d): %s\n", seed, v)
	}
}
