// Command richt-bench measures the collection against Ansible's built-in modules in one run
// (`make bench`): the same targets, SSH with pipelining on, the two sides alternating task
// by task over several rounds after a warm-up round. It prints medians, ratios (ours ÷
// built-in), binary sizes, the cold (first) task cost and direct on-target run times as a
// Markdown table. docs/benchmarks.md explains the rows and holds recorded figures.
//
//	richt-bench [-rounds 7] [-targets 8] [-bulk 2000] [-direct 100]
package main

import (
	"context"
	_ "embed"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/richt/services/modules"
	"github.com/richt/services/testenv"
	"github.com/richt/services/testenv/fixtures"
)

//go:embed timing.py
var timingCallback []byte

type config struct {
	rounds, targets, bulk, direct int
	keep                          bool
	ansiblePlaybook               string
}

func main() {
	var c config
	flag.IntVar(&c.rounds, "rounds", 7, "measured rounds per row (after one warm-up round)")
	flag.IntVar(&c.targets, "targets", 8, "targets for the many-targets row (forks = targets)")
	flag.IntVar(&c.bulk, "bulk", 2000, "packages in the generated large repository")
	flag.IntVar(&c.direct, "direct", 100, "direct on-target runs per module")
	flag.BoolVar(&c.keep, "keep", false, "keep the work directory and the targets")
	flag.StringVar(&c.ansiblePlaybook, "ansible-playbook", "ansible-playbook", "the controller to measure with (for example /opt/richt/ansible-core-2.19/bin/ansible-playbook)")
	flag.Parse()
	if err := run(c); err != nil {
		fmt.Fprintln(os.Stderr, "richt-bench:", err)
		os.Exit(1)
	}
}

// bench holds one run's targets and files.
type bench struct {
	config
	work, coll, inventory string
	targets               []*testenv.Target
	env                   []string
	log                   func(string, ...any)
	// failed names the plays that failed; their rows report no ratio.
	failed []string
}

func run(c config) error {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Minute)
	defer cancel()
	b := &bench{config: c, log: func(f string, a ...any) { fmt.Fprintf(os.Stderr, "bench: "+f+"\n", a...) }}
	var err error
	if b.work, err = os.MkdirTemp("", "rb"); err != nil {
		return err
	}
	if !c.keep {
		defer os.RemoveAll(b.work)
	}
	root, err := repoRoot()
	if err != nil {
		return err
	}
	b.coll = filepath.Join(b.work, "coll")
	b.log("building the collection")
	if out, err := exec.Command("make", "-C", root, "build", "BUILD="+b.coll).CombinedOutput(); err != nil {
		return fmt.Errorf("make build: %w\n%s", err, out)
	}
	fixtureDir, bulk := filepath.Join(b.work, "fixtures"), filepath.Join(b.work, "bulk")
	pkgs := []testenv.Package{fixtures.DemoPackage("1.0"), fixtures.DemoPackage("2.0")}
	pkgs = append(append(pkgs, fixtures.PinnedSet("1.0")...), fixtures.PinnedSet("2.0")...)
	if err := testenv.BuildRepoDir(fixtureDir, pkgs...); err != nil {
		return err
	}
	b.log("generating a repository of %d packages", c.bulk)
	if err := buildBulk(bulk, c.bulk); err != nil {
		return err
	}
	// Every target started is removed on every way out, a failed start included.
	if !c.keep {
		defer func() {
			for _, t := range b.targets {
				if t != nil {
					_ = t.Terminate(context.Background())
				}
			}
		}()
	}
	if err := b.start(ctx, fixtureDir, bulk); err != nil {
		return err
	}
	if err := b.setup(root); err != nil {
		return err
	}

	b.log("converge: the demo role on %d targets", len(b.targets))
	if _, err := b.play("setup", "all", setupPlay(root)); err != nil {
		return err
	}
	b.log("rows on one target: cold, packages, service, drop-in reload, upgrade/downgrade, package sets")
	// A play that fails is reported with its rows marked failed; the other rows still run.
	var single []timing
	for _, p := range singlePlays(root, c.rounds) {
		single = append(single, b.playRows(p.name, "one", p.plays)...)
	}
	b.log("rows on one target: the demo role converge and no-op")
	role := b.playRows("role", "one", rolePlay(root, c.rounds))
	b.log("row: no-op play on %d targets, forks %d", len(b.targets), len(b.targets))
	many := b.playRows("many", "all", manyPlay(root, c.rounds))
	// Direct runs measure the module on a machine that is otherwise idle: the other
	// targets are not needed any more.
	for _, t := range b.targets[1:] {
		_ = t.Terminate(ctx)
	}
	b.settle()
	direct, err := b.directRuns(ctx)
	if err != nil {
		return err
	}
	b.report(merge(single, role, many), direct)
	return nil
}

func repoRoot() (string, error) {
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}").Output()
	if err != nil {
		return "", fmt.Errorf("find the module root (run from the repository): %w", err)
	}
	return strings.TrimSpace(string(out)), nil
}

// buildBulk makes n tiny noarch packages with one rpmbuild run (one spec, n subpackages).
func buildBulk(dir string, n int) error {
	var spec strings.Builder
	spec.WriteString("Name: bulk\nVersion: 1.0\nRelease: 1\nSummary: generated\nLicense: MIT\nBuildArch: noarch\n%description\ngenerated\n%files\n")
	for i := 0; i < n-1; i++ {
		fmt.Fprintf(&spec, "%%package -n bulk%04d\nSummary: generated %d\n%%description -n bulk%04d\ngenerated\n%%files -n bulk%04d\n", i, i, i, i)
	}
	top := dir + ".top"
	if err := os.MkdirAll(top, 0o755); err != nil {
		return err
	}
	defer os.RemoveAll(top)
	specPath := filepath.Join(top, "bulk.spec")
	if err := os.WriteFile(specPath, []byte(spec.String()), 0o644); err != nil {
		return err
	}
	if out, err := exec.Command("rpmbuild", "-bb", "--define", "_topdir "+top, "--define", "_rpmdir "+dir, specPath).CombinedOutput(); err != nil {
		return fmt.Errorf("rpmbuild bulk: %w\n%s", err, tailLines(string(out), 20))
	}
	if out, err := exec.Command("createrepo_c", "-q", dir).CombinedOutput(); err != nil {
		return fmt.Errorf("createrepo_c bulk: %w\n%s", err, out)
	}
	return nil
}

func (b *bench) start(ctx context.Context, fixtureDir, bulk string) error {
	b.log("starting %d targets", b.config.targets)
	b.targets = make([]*testenv.Target, b.config.targets)
	errs := make([]error, b.config.targets)
	var wg sync.WaitGroup
	for i := range b.targets {
		wg.Add(1)
		go func() {
			defer wg.Done()
			t, err := testenv.StartContext(ctx, testenv.WithLabel("org.richt.bench", "1"))
			b.targets[i] = t
			if err == nil {
				err = t.CopyDir(ctx, fixtureDir, "/srv/richt-repos/fixtures")
			}
			if err == nil && i == 0 {
				err = t.CopyDir(ctx, bulk, "/srv/richt-repos/bulk")
			}
			if err == nil {
				_, err = t.SSH(ctx)
			}
			errs[i] = err
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			return fmt.Errorf("target %d: %w", i, err)
		}
	}
	return nil
}

// setup writes the inventory (group "one": the first target; "all": every target), the
// timing callback and the environment every ansible-playbook run gets.
func (b *bench) setup(root string) error {
	hosts := map[string]any{}
	var one map[string]any
	for i, t := range b.targets {
		a, err := t.SSH(context.Background())
		if err != nil {
			return err
		}
		name := fmt.Sprintf("t%d", i)
		vars := a.HostVars()
		vars["ansible_python_interpreter"] = "/usr/bin/python3"
		hosts[name] = vars
		if i == 0 {
			one = map[string]any{name: nil}
		}
	}
	inv := map[string]any{"all": map[string]any{"hosts": hosts, "children": map[string]any{"one": map[string]any{"hosts": one}}}}
	data, _ := json.MarshalIndent(inv, "", "  ")
	b.inventory = filepath.Join(b.work, "inventory.json")
	if err := os.WriteFile(b.inventory, data, 0o600); err != nil {
		return err
	}
	cb := filepath.Join(b.work, "callbacks")
	if err := os.MkdirAll(cb, 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(cb, "richt_bench_timing.py"), timingCallback, 0o644); err != nil {
		return err
	}
	cp, err := os.MkdirTemp("", "rbcp")
	if err != nil {
		return err
	}
	b.env = append(os.Environ(),
		"ANSIBLE_PIPELINING=1", "ANSIBLE_HOST_KEY_CHECKING=false", "ANSIBLE_NOCOLOR=1",
		"ANSIBLE_COLLECTIONS_PATH="+b.coll, "ANSIBLE_CALLBACK_PLUGINS="+cb,
		"ANSIBLE_CALLBACKS_ENABLED=richt_bench_timing", "ANSIBLE_SSH_CONTROL_PATH_DIR="+cp,
		"ANSIBLE_RETRY_FILES_ENABLED=false")
	return nil
}

// timing is one measured task.
type timing struct {
	Segment string  `json:"segment"`
	Task    string  `json:"task"`
	Seconds float64 `json:"seconds"`
}

// play writes the play (a list of plays as JSON, which is YAML) and runs it on hosts.
func (b *bench) play(name, hosts string, plays []map[string]any) ([]timing, error) {
	for _, p := range plays {
		p["hosts"] = hosts
		p["gather_facts"] = false
	}
	data, err := json.MarshalIndent(plays, "", "  ")
	if err != nil {
		return nil, err
	}
	path := filepath.Join(b.work, name+".yml")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		return nil, err
	}
	out := filepath.Join(b.work, name+".json")
	cmd := exec.Command(b.ansiblePlaybook, "-i", b.inventory, "--forks", strconv.Itoa(len(b.targets)), path)
	cmd.Env = append(b.env, "RICHT_BENCH_OUT="+out)
	start := time.Now()
	res, err := cmd.CombinedOutput()
	if err != nil {
		return nil, fmt.Errorf("ansible-playbook %s: %w\n%s", name, err, tailLines(string(res), 60))
	}
	b.log("%s: %.0f s", name, time.Since(start).Seconds())
	data, err = os.ReadFile(out)
	if err != nil {
		return nil, fmt.Errorf("timings of %s: %w", name, err)
	}
	var ts []timing
	return ts, json.Unmarshal(data, &ts)
}

// playRows is play for measured rows: a failure is logged and remembered (report marks
// the play's rows failed) instead of ending the run.
func (b *bench) playRows(name, hosts string, plays []map[string]any) []timing {
	ts, err := b.play(name, hosts, plays)
	if err != nil {
		b.log("FAILED %s: %v", name, err)
		b.failed = append(b.failed, name)
		return nil
	}
	return ts
}

func merge(lists ...[]timing) []timing {
	var all []timing
	for _, l := range lists {
		all = append(all, l...)
	}
	return all
}

func tailLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// directRuns times the cached binaries on the first target without Ansible: converged
// runs, arguments on stdin from a file, timed by bash's $EPOCHREALTIME (no fork per sample).
// The samples of the two modules are taken in alternating blocks, so a slow spell of the
// machine does not fall on one module's whole sample.
func (b *bench) directRuns(ctx context.Context) (map[string]float64, error) {
	t := b.targets[0]
	cases := []struct{ module, args string }{
		{"rpm_exact", `{"name":"demo","version":"0:1.0-1.noarch"}`},
		{"systemd_lifecycle", `{"unit":"demo.service","state":"running","enabled":true}`},
	}
	const blocks = 4
	samples := map[string][]float64{}
	for block := 0; block < blocks; block++ {
		for _, c := range cases {
			n := b.direct / blocks
			if block == blocks-1 {
				n = b.direct - n*(blocks-1)
			}
			ms, err := b.directBlock(ctx, t, c.module, c.args, n, block == 0)
			if err != nil {
				return nil, err
			}
			samples[c.module] = append(samples[c.module], ms...)
		}
	}
	res := map[string]float64{}
	for m, ms := range samples {
		res[m] = median(ms)
	}
	return res, nil
}

// directBlock runs one module n times (after a warm-up) and returns each run's time in ms.
func (b *bench) directBlock(ctx context.Context, t *testenv.Target, m, args string, n int, first bool) ([]float64, error) {
	warm := 3
	if first {
		warm = 10
	}
	script := `set -e
bin=$(ls /root/.cache/richt.services/` + m + `-* | grep -v '\.ok$')
printf '%s' "$1" > /root/bench-args.json
"$bin" - < /root/bench-args.json | grep -q '"changed":false'
for i in $(seq ` + strconv.Itoa(warm) + `); do "$bin" - < /root/bench-args.json >/dev/null; done # warm-up
for i in $(seq ` + strconv.Itoa(n) + `); do
  s=$EPOCHREALTIME; "$bin" - < /root/bench-args.json >/dev/null; e=$EPOCHREALTIME
  echo "${s/./} ${e/./}"
done
"$bin" - < /root/bench-args.json | grep -o '"observed":"[^"]*"' || true`
	out, err := t.Exec(ctx, "bash", "-c", script, "bash", args)
	if err != nil || out.ExitCode != 0 {
		return nil, fmt.Errorf("direct runs of %s: %v %s %s", m, err, out.Stdout, out.Stderr)
	}
	var ms []float64
	for _, l := range strings.Split(strings.TrimSpace(out.Stdout), "\n") {
		if strings.HasPrefix(l, `"observed"`) {
			// rpm_exact says whether its converged runs asked rpm or its memo.
			if first {
				fmt.Fprintf(os.Stderr, "direct runs of %s: %s\n", m, l)
			}
			continue
		}
		f := strings.Fields(l)
		if len(f) != 2 {
			continue
		}
		s, _ := strconv.ParseInt(f[0], 10, 64)
		e, _ := strconv.ParseInt(f[1], 10, 64)
		ms = append(ms, float64(e-s)/1000)
	}
	return ms, nil
}

// settle waits until the machine is quiet after the other targets were removed: at least
// 15 s, then until the 1-minute load average is below 1 (at most 2 more minutes), and says
// what it was.
func (b *bench) settle() {
	time.Sleep(15 * time.Second)
	waited := 15 * time.Second
	load := loadAverage()
	for load >= 1 && waited < 135*time.Second {
		time.Sleep(5 * time.Second)
		waited += 5 * time.Second
		load = loadAverage()
	}
	b.log("direct runs: 1-minute load average %.2f after %s", load, waited)
}

// loadAverage is the host's 1-minute load average, or -1 when it cannot be read.
func loadAverage() float64 {
	data, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return -1
	}
	f := strings.Fields(string(data))
	if len(f) == 0 {
		return -1
	}
	v, err := strconv.ParseFloat(f[0], 64)
	if err != nil {
		return -1
	}
	return v
}

func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// segments sums task times per segment ("row|side|round").
func segments(ts []timing) map[string]float64 {
	m := map[string]float64{}
	for _, t := range ts {
		m[t.Segment] += t.Seconds
	}
	return m
}

// rowMedian is the median over measured rounds (round 0 is the warm-up).
func rowMedian(seg map[string]float64, row, side string) (float64, int) {
	var v []float64
	for k, s := range seg {
		p := strings.Split(k, "|")
		if len(p) == 3 && p[0] == row && p[1] == side && p[2] != "0" {
			v = append(v, s)
		}
	}
	return median(v), len(v)
}

var rows = []struct{ id, title string }{
	{"pkg-fixtures", "converged exact package, fixture repository (rpm_exact vs dnf)"},
	{"pkg-bulk", "converged exact package, +2,000-package repository (rpm_exact vs dnf)"},
	{"upgrade", "upgrade 1.0 → 2.0 (rpm_exact vs dnf)"},
	{"downgrade", "downgrade 2.0 → 1.0 (rpm_exact vs dnf allow_downgrade)"},
	{"set-noop", "converged set of 3 pinned packages (rpm_exact packages vs dnf name list)"},
	{"set-upgrade", "upgrade a set of 3 pinned packages 1.0 → 2.0 (rpm_exact packages vs dnf name list)"},
	{"set-downgrade", "downgrade the set 2.0 → 1.0 (rpm_exact packages vs dnf name list, allow_downgrade)"},
	{"svc", "converged service (systemd_lifecycle vs systemd_service)"},
	{"dropin", "drop-in change + reload (unit_override + reload_on vs copy + handler)"},
	{"role-converge", "demo role converge from clean (role vs built-in play)"},
	{"role-noop", "demo role no-op re-run (role vs built-in play)"},
	{"many-noop", "no-op play, 8 targets, forks 8 (role vs built-in play)"},
}

func (b *bench) report(ts []timing, direct map[string]float64) {
	seg := segments(ts)
	ver, _ := exec.Command(b.ansiblePlaybook, "--version").Output()
	fmt.Printf("\nricht-bench %s · %s · targets: %s · SSH, pipelining on · %d measured rounds after 1 warm-up\n\n",
		time.Now().UTC().Format("2006-01-02"), strings.SplitN(string(ver), "\n", 2)[0], b.targets[0].Image, b.rounds)
	fmt.Println("| row | ours (median s) | built-in (median s) | ours ÷ built-in |")
	fmt.Println("|---|---:|---:|---:|")
	for _, r := range rows {
		o, n := rowMedian(seg, r.id, "ours")
		bi, _ := rowMedian(seg, r.id, "builtin")
		if n == 0 || bi == 0 {
			fmt.Printf("| %s | n/a | n/a | n/a (no timings; failed plays: %s) |\n", r.title, strings.Join(b.failed, ", "))
			continue
		}
		fmt.Printf("| %s | %.3f | %.3f | %.3f |\n", r.title, o, bi, o/bi)
	}
	for _, m := range []struct{ ours, builtin, title string }{
		{"rpm", "dnf", "cold first task: rpm_exact (installs the binary) vs first dnf"},
		{"svc", "systemd", "cold first task: systemd_lifecycle (installs the binary) vs first systemd_service"},
	} {
		o, bi := seg["cold|ours-"+m.ours+"|1"], seg["cold|builtin-"+m.builtin+"|1"]
		if bi > 0 {
			fmt.Printf("| %s | %.3f | %.3f | %.3f |\n", m.title, o, bi, o/bi)
		}
	}
	fmt.Println()
	fmt.Println("| module | binary size (bytes) | direct converged run on the target, median of", b.direct, "(ms) |")
	fmt.Println("|---|---:|---:|")
	for _, m := range modules.Names() {
		fi, err := os.Stat(filepath.Join(b.coll, "ansible_collections/richt/services/bin", m))
		size := int64(0)
		if err == nil {
			size = fi.Size()
		}
		d := "—"
		if v, ok := direct[m]; ok {
			d = fmt.Sprintf("%.1f", v)
		}
		fmt.Printf("| %s | %d | %s |\n", m, size, d)
	}
}
