// Command richt-bench measures the collection against Ansible's built-in modules in one run
// (`make bench`): the same targets, SSH with pipelining on, the sides alternating round by
// round after a warm-up round: ours and the built-ins under Ansible's default strategy, and
// both again under Mitogen's mitogen_linear strategy when Debian's ansible-mitogen is
// installed. Then the demo role on 1, 8 and 24 targets at once (time per host), the cold
// (first) task cost, and direct on-target runs of each module and its built-in counterpart
// (time and peak RSS). It prints Markdown tables with the ratios (ours ÷ built-in) and the
// targets they are held to, and writes them, the raw figures (JSON) and a plot (PNG) to
// -out. docs/benchmarks.md explains the rows and holds the latest recorded run.
//
//	richt-bench [-rounds 5] [-scale 1,8,24] [-scale-rounds 2] [-bulk 2000] [-direct 100] [-out build/bench]
package main

import (
	"context"
	_ "embed"
	"encoding/json"
	"errors"
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

	"github.com/richt/services/testenv"
	"github.com/richt/services/testenv/fixtures"
)

//go:embed timing.py
var timingCallback []byte

type config struct {
	rounds, scaleRounds, bulk, direct int
	elPackages, elFiles               int
	scale                             []int
	keep, mitogen                     bool
	ansiblePlaybook, only, out        string
}

func main() {
	var c config
	flag.IntVar(&c.rounds, "rounds", 5, "measured rounds per row (after one warm-up round)")
	flag.IntVar(&c.scaleRounds, "scale-rounds", 2, "measured rounds per scale row (the set-up converge is their warm-up)")
	scale := flag.String("scale", "1,8,24", "target counts of the scale rows (forks = targets)")
	flag.IntVar(&c.bulk, "bulk", 2000, "packages in the generated large repository")
	flag.IntVar(&c.direct, "direct", 100, "direct on-target runs per module")
	flag.IntVar(&c.elPackages, "el", 1000, "packages registered (rpm --justdb) in the first target's RPM database for the EL-sized rows; 0: no such rows")
	flag.IntVar(&c.elFiles, "el-files", 100, "files in each of those packages")
	flag.BoolVar(&c.keep, "keep", false, "keep the work directory and the targets")
	flag.StringVar(&c.ansiblePlaybook, "ansible-playbook", "ansible-playbook", "the controller to measure with (for example /opt/richt/ansible-core-2.19/bin/ansible-playbook)")
	flag.StringVar(&c.only, "only", "", "comma-separated plays to run (for work on the bench itself; the report then has gaps)")
	flag.StringVar(&c.out, "out", "build/bench", "directory for the report (bench.md), the raw figures (bench.json) and the plot (benchmarks.png)")
	flag.BoolVar(&c.mitogen, "mitogen", true, "also measure under Mitogen's mitogen_linear strategy (when "+testenv.MitogenStrategyPlugins+" exists)")
	flag.Parse()
	for _, f := range strings.Split(*scale, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			fmt.Fprintf(os.Stderr, "richt-bench: -scale: %q is not a positive number of targets\n", f)
			os.Exit(2)
		}
		c.scale = append(c.scale, n)
	}
	sort.Ints(c.scale)
	if _, err := os.Stat(testenv.MitogenStrategyPlugins); c.mitogen && err != nil {
		fmt.Fprintf(os.Stderr, "richt-bench: no Mitogen rows: %v (bash .ci/setup-host installs ansible-mitogen)\n", err)
		c.mitogen = false
	}
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
	paused                bool // every target but the first is paused (pauseOthers)
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
	elsize := ""
	if c.elPackages > 0 {
		elsize = filepath.Join(b.work, "elsize")
		b.log("generating %d packages of %d files for the EL-sized RPM database", c.elPackages, c.elFiles)
		if err := buildELSized(elsize, c.elPackages, c.elFiles); err != nil {
			return err
		}
	}
	// Every target started is removed on every way out, a failed start included.
	if !c.keep {
		defer func() {
			_ = b.pauseOthers(context.Background(), false) // a paused container cannot be stopped
			for _, t := range b.targets {
				if t != nil {
					_ = t.Terminate(context.Background())
				}
			}
		}()
	}
	if err := b.start(ctx, fixtureDir, bulk, elsize); err != nil {
		return err
	}
	if err := b.setup(root); err != nil {
		return err
	}

	b.log("converge: the demo role on %d targets", len(b.targets))
	// At most 8 converges from clean at once: 24 DNF transactions and health probes at once
	// on two cores could outlast the role's 20 s deadline per action.
	if _, err := b.play("setup", "all", min(8, len(b.targets)), setupPlay(root)); err != nil {
		return err
	}
	var ts []timing
	// The other targets are paused while the rows on one target run: their daemons and
	// timers would otherwise share the two cores with the side being timed.
	if err := b.pauseOthers(ctx, true); err != nil {
		return err
	}
	b.log("rows on one target: cold, packages, service, drop-in reload, upgrade/downgrade, package sets, role (Mitogen: %v)", b.mitogen)
	// A play that fails is reported with its rows marked failed; the other rows still run.
	ts = append(ts, b.playRows(rowsPlay{name: "cold", hosts: "one", forks: 1}, coldPlay(root))...)
	for _, rp := range append(singlePlays(c.rounds, c.mitogen), rolePlay(c.rounds, c.mitogen), servicePlay(c.rounds, c.mitogen)) {
		ts = append(ts, b.playRows(rp, rp.plays(root))...)
	}
	var around *aroundDNF
	if elsize != "" {
		b.log("rows on an EL-sized RPM database: converged package, upgrade/downgrade, role; time around DNF")
		// A failure here costs its rows only (reported as failed), not the run.
		el, a, err := b.elSized(ctx, root)
		if err != nil {
			b.log("FAILED el-sized: %v", err)
			b.failed = append(b.failed, "el-sized")
		}
		ts, around = append(ts, el...), a
	}
	if err := b.pauseOthers(ctx, false); err != nil {
		return err
	}
	// Resumed after some 25 minutes frozen, the other targets run at once whatever came due
	// meanwhile (timers): the first scale row (1 target) took 2-3x the same play's time in
	// the role row while that load lasted. The scale rows start once it is gone.
	b.settle("scale rows")
	for _, n := range c.scale {
		b.log("scale: the demo role no-op and changed on %d targets, forks %d", n, n)
		rp := scalePlay(n, c.scaleRounds)
		ts = append(ts, b.playRows(rp, rp.plays(root))...)
	}
	// Direct runs measure the modules on a machine that is otherwise idle: the other
	// targets are not needed any more.
	for _, t := range b.targets[1:] {
		_ = t.Terminate(ctx)
	}
	// The direct runs time converged runs: whatever the rows left (with -only, any state),
	// the first target is converged again first.
	if _, err := b.play("reconverge", "one", 1, setupPlay(root)); err != nil {
		return err
	}
	b.settle("direct runs")
	direct, err := b.directRuns(ctx, root)
	if err != nil {
		return err
	}
	return b.report(ts, direct, around)
}

// pauseOthers pauses (or resumes) every target but the first with docker pause, which
// freezes their processes.
func (b *bench) pauseOthers(ctx context.Context, pause bool) error {
	if pause == b.paused {
		return nil
	}
	var ids []string
	for _, t := range b.targets[min(1, len(b.targets)):] {
		if t != nil {
			ids = append(ids, t.ID())
		}
	}
	b.paused = pause
	return setPaused(ids, pause, func(verb, id string) error {
		out, err := exec.CommandContext(ctx, "docker", verb, id).CombinedOutput()
		if err != nil {
			return fmt.Errorf("%w: %s", err, strings.TrimSpace(string(out)))
		}
		return nil
	})
}

// setPaused runs docker pause (or unpause) for every container, going on past a failure:
// a pause that fails part-way has still frozen some containers, and the way out must
// then resume each of them (a paused container cannot be stopped), so the caller counts
// the targets as paused as soon as it asked.
func setPaused(ids []string, pause bool, docker func(verb, id string) error) error {
	verb := "unpause"
	if pause {
		verb = "pause"
	}
	var errs []error
	for _, id := range ids {
		if err := docker(verb, id); err != nil {
			errs = append(errs, fmt.Errorf("docker %s %s: %w", verb, id, err))
		}
	}
	return errors.Join(errs...)
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
	if err := rpmbuildSpec(dir, "bulk", spec.String()); err != nil {
		return err
	}
	if out, err := exec.Command("createrepo_c", "-q", dir).CombinedOutput(); err != nil {
		return fmt.Errorf("createrepo_c bulk: %w\n%s", err, out)
	}
	return nil
}

// rpmbuildSpec builds the binary packages of spec (named name.spec) into dir/ARCH, with
// each "MACRO VALUE" of defines, in a build tree beside dir that it removes afterwards.
func rpmbuildSpec(dir, name, spec string, defines ...string) error {
	top := dir + ".top"
	if err := os.MkdirAll(top, 0o755); err != nil {
		return err
	}
	defer os.RemoveAll(top)
	specPath := filepath.Join(top, name+".spec")
	if err := os.WriteFile(specPath, []byte(spec), 0o644); err != nil {
		return err
	}
	args := []string{"-bb", "--define", "_topdir " + top, "--define", "_rpmdir " + dir}
	for _, d := range defines {
		args = append(args, "--define", d)
	}
	if out, err := exec.Command("rpmbuild", append(args, specPath)...).CombinedOutput(); err != nil {
		return fmt.Errorf("rpmbuild %s: %w\n%s", name, err, tailLines(string(out), 20))
	}
	return nil
}

func (b *bench) start(ctx context.Context, fixtureDir, bulk, elsize string) error {
	n := b.scale[len(b.scale)-1]
	// Each systemd target holds several inotify instances; past the per-user limit their
	// systemd stalls in "initializing" and the start times out a minute later.
	if data, err := os.ReadFile("/proc/sys/fs/inotify/max_user_instances"); err == nil {
		if limit, err := strconv.Atoi(strings.TrimSpace(string(data))); err == nil && limit < 16*n {
			return fmt.Errorf("%d targets need fs.inotify.max_user_instances of at least %d, it is %d (bash .ci/setup-host raises it)", n, 16*n, limit)
		}
	}
	b.log("starting %d targets", n)
	b.targets = make([]*testenv.Target, n)
	errs := make([]error, n)
	// Four boots at a time: 24 systemd containers booting at once on two cores took over a
	// minute each (systemd-logind the last), past the ready timeout. The timeout is also
	// longer than testenv's default, for a slow spell of the machine.
	var wg sync.WaitGroup
	slots := make(chan struct{}, 4)
	for i := range b.targets {
		wg.Add(1)
		go func() {
			defer wg.Done()
			slots <- struct{}{}
			defer func() { <-slots }()
			t, err := testenv.StartContext(ctx, testenv.WithLabel("org.richt.bench", "1"), testenv.WithReadyTimeout(3*time.Minute))
			b.targets[i] = t
			if err == nil {
				err = t.CopyDir(ctx, fixtureDir, "/srv/richt-repos/fixtures")
			}
			if err == nil && i == 0 {
				err = t.CopyDir(ctx, bulk, "/srv/richt-repos/bulk")
			}
			if err == nil && i == 0 && elsize != "" {
				err = t.CopyDir(ctx, elsize, elDir)
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

// setup writes the inventory (group "one": the first target; "hN": the first N targets;
// "all": every target), the timing callback and the environment every ansible-playbook
// run gets.
func (b *bench) setup(root string) error {
	hosts := map[string]any{}
	children := map[string]any{}
	for _, n := range append([]int{1}, b.scale...) {
		g := map[string]any{}
		for i := 0; i < n; i++ {
			g[fmt.Sprintf("t%d", i)] = nil
		}
		children[fmt.Sprintf("h%d", n)] = map[string]any{"hosts": g}
	}
	children["one"] = children["h1"]
	for i, t := range b.targets {
		a, err := t.SSH(context.Background())
		if err != nil {
			return err
		}
		name := fmt.Sprintf("t%d", i)
		vars := a.HostVars()
		vars["ansible_python_interpreter"] = "/usr/bin/python3"
		hosts[name] = vars
	}
	inv := map[string]any{"all": map[string]any{"hosts": hosts, "children": children}}
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
	if b.mitogen {
		// Plays choose mitogen_linear with the strategy keyword; the default stays linear.
		b.env = append(b.env, "ANSIBLE_STRATEGY_PLUGINS="+testenv.MitogenStrategyPlugins)
	}
	return nil
}

// timing is one measured task.
type timing struct {
	Segment string  `json:"segment"`
	Task    string  `json:"task"`
	Seconds float64 `json:"seconds"`
	Failed  *string `json:"failed"` // the failure message of a task whose error the play ignored
}

// play writes the play (a list of plays as JSON, which is YAML) and runs it on hosts, with
// the bench's environment and, for this play only, extraEnv after it.
func (b *bench) play(name, hosts string, forks int, plays []map[string]any, extraEnv ...string) ([]timing, error) {
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
	cmd := exec.Command(b.ansiblePlaybook, "-i", b.inventory, "--forks", strconv.Itoa(forks), path)
	cmd.Env = append(append(append([]string(nil), b.env...), extraEnv...), "RICHT_BENCH_OUT="+out)
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
func (b *bench) playRows(rp rowsPlay, plays []map[string]any) []timing {
	if !b.selected(rp.name) {
		return nil
	}
	ts, err := b.play(rp.name, rp.hosts, rp.forks, plays)
	if err != nil {
		b.log("FAILED %s: %v", rp.name, err)
		b.failed = append(b.failed, rp.name)
		return nil
	}
	return ts
}

// selected: -only names the play (or measurement), or -only is not given.
func (b *bench) selected(name string) bool {
	return b.only == "" || strings.Contains(","+b.only+",", ","+name+",")
}

func tailLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// direct is one module's run on the target without Ansible.
type direct struct {
	Module string  `json:"module"`
	Ms     float64 `json:"ms"`      // median wall time of a converged run
	RSSKiB int64   `json:"rss_kib"` // median peak resident set of a run (the largest process of it)
}

// directCase is a converged run of one of our modules and of its built-in counterpart.
type directCase struct{ ours, args, builtin string }

var directCases = []directCase{
	{"rpm_exact", `{"name":"demo","version":"0:1.0-1.noarch"}`, "dnf"},
	{"systemd_lifecycle", `{"unit":"demo.service","state":"running","enabled":true}`, "systemd_service"},
	// The whole demo service as the role asks for it (health probe included); no built-in
	// does the same in one module.
	{"service", serviceArgs(), ""},
}

// serviceArgs are the demo role's arguments for the service module, converged by the set-up.
func serviceArgs() string {
	args := fixtures.DemoService(demoV1, "info")
	args["processes"] = []any{map[string]any{"unit": "demo.service", "enabled": true, "timeout": "20s",
		"health": map[string]any{"banner": "127.0.0.1:8080", "expect": "demo ready"}}}
	data, err := json.Marshal(args)
	if err != nil {
		panic(err)
	}
	return string(data)
}

// directRuns times converged runs on the first target without Ansible: our cached binaries
// (arguments on stdin from a file) and the built-ins' AnsiballZ payloads as Ansible leaves
// them with ANSIBLE_KEEP_REMOTE_FILES (arguments inside), timed by bash's $EPOCHREALTIME
// (no fork per sample). Our modules' samples are taken in alternating blocks, so a slow
// spell of the machine does not fall on one module's whole sample. Peak RSS comes from
// getrusage(RUSAGE_CHILDREN) in a Python parent: the largest process of the run (for
// rpm_exact that may be an rpm it starts; converged runs usually start none).
func (b *bench) directRuns(ctx context.Context, root string) ([]direct, error) {
	t := b.targets[0]
	payloads, err := b.builtinPayloads(ctx, root)
	if err != nil {
		return nil, err
	}
	const blocks = 4
	samples := map[string][]float64{}
	cmds := map[string]string{}
	for _, c := range directCases {
		// One multi-call build holds every module: BINARY NAME - runs NAME, as the fast path does.
		out, err := t.Exec(ctx, "bash", "-c", `ls /root/.cache/richt.services/richt-modules-"$(uname -m)"-* | grep -v '\.ok$'`)
		if err != nil || out.ExitCode != 0 {
			return nil, fmt.Errorf("cached build for %s: %v %s", c.ours, err, out.Stderr)
		}
		cmds[c.ours] = strings.TrimSpace(out.Stdout) + " " + c.ours + " - < /root/bench-args-" + c.ours + ".json"
		if out, err := t.Exec(ctx, "bash", "-c", `printf '%s' "$1" > /root/bench-args-`+c.ours+`.json`, "bash", c.args); err != nil || out.ExitCode != 0 {
			return nil, fmt.Errorf("arguments of %s: %v %s", c.ours, err, out.Stderr)
		}
		if c.builtin != "" {
			cmds[c.builtin] = "/usr/bin/python3 " + payloads[c.builtin]
		}
	}
	// A module whose runs fail is left out of the table (and logged), not the whole report.
	broken := map[string]bool{}
	for block := 0; block < blocks; block++ {
		for _, c := range directCases {
			if broken[c.ours] {
				continue
			}
			n := b.direct / blocks
			if block == blocks-1 {
				n = b.direct - n*(blocks-1)
			}
			ms, err := b.directBlock(ctx, t, c.ours, cmds[c.ours], n, block == 0)
			if err != nil {
				b.log("FAILED direct runs of %s: %v", c.ours, err)
				b.failed = append(b.failed, "direct "+c.ours)
				broken[c.ours] = true
				continue
			}
			samples[c.ours] = append(samples[c.ours], ms...)
		}
	}
	// The built-ins take most of a second each: ten runs tell their median well enough.
	for _, c := range directCases {
		if c.builtin == "" {
			continue
		}
		ms, err := b.directBlock(ctx, t, c.builtin, cmds[c.builtin], 10, true)
		if err != nil {
			return nil, err
		}
		samples[c.builtin] = ms
	}
	var res []direct
	for _, c := range directCases {
		for _, m := range []string{c.ours, c.builtin} {
			if m == "" || broken[m] {
				continue
			}
			rss, err := b.peakRSS(ctx, t, cmds[m])
			if err != nil {
				return nil, err
			}
			res = append(res, direct{Module: m, Ms: median(samples[m]), RSSKiB: rss})
		}
	}
	return res, nil
}

// builtinPayloads runs the built-in counterparts once with ANSIBLE_KEEP_REMOTE_FILES and
// pipelining off, and returns where each module's AnsiballZ payload was left on the target.
func (b *bench) builtinPayloads(ctx context.Context, root string) (map[string]string, error) {
	t := b.targets[0]
	if out, err := t.Exec(ctx, "rm", "-rf", "/root/.ansible/tmp"); err != nil || out.ExitCode != 0 {
		return nil, fmt.Errorf("empty the remote temporary directory: %v %s", err, out.Stderr)
	}
	_, err := b.play("payloads", "one", 1, []map[string]any{play(root, []task{ignore(), builtinPackage(nevraV1), builtinService()})},
		"ANSIBLE_KEEP_REMOTE_FILES=1", "ANSIBLE_PIPELINING=0")
	if err != nil {
		return nil, err
	}
	res := map[string]string{}
	for _, c := range directCases {
		if c.builtin == "" {
			continue
		}
		out, err := t.Exec(ctx, "bash", "-c", "ls /root/.ansible/tmp/ansible-tmp-*/AnsiballZ_"+c.builtin+".py | head -1")
		if err != nil || out.ExitCode != 0 || strings.TrimSpace(out.Stdout) == "" {
			return nil, fmt.Errorf("AnsiballZ payload of %s: %v %s %s", c.builtin, err, out.Stdout, out.Stderr)
		}
		res[c.builtin] = strings.TrimSpace(out.Stdout)
	}
	return res, nil
}

// directBlock runs one command n times (after a warm-up) and returns each run's time in ms.
// The first run must report a converged state.
func (b *bench) directBlock(ctx context.Context, t *testenv.Target, m, cmd string, n int, first bool) ([]float64, error) {
	warm := 3
	if first {
		warm = 10
	}
	if strings.HasPrefix(cmd, "/usr/bin/python3") {
		warm = 2 // a built-in takes most of a second
	}
	script := `set -e
run() { ` + cmd + `; }
run | grep -q '"changed": *false'
for i in $(seq ` + strconv.Itoa(warm) + `); do run >/dev/null; done # warm-up
for i in $(seq ` + strconv.Itoa(n) + `); do
  s=$EPOCHREALTIME; run >/dev/null; e=$EPOCHREALTIME
  echo "${s/./} ${e/./}"
done
run | grep -o '"observed":"[^"]*"' || true`
	out, err := t.Exec(ctx, "bash", "-c", script)
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

// peakRSS is the median over five runs of the largest resident set a run reached, in KiB.
func (b *bench) peakRSS(ctx context.Context, t *testenv.Target, cmd string) (int64, error) {
	const probe = `import resource, subprocess, sys
subprocess.run(sys.argv[1], shell=True, stdout=subprocess.DEVNULL, check=True)
print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)`
	var v []float64
	for i := 0; i < 5; i++ {
		out, err := t.Exec(ctx, "python3", "-c", probe, cmd)
		if err != nil || out.ExitCode != 0 {
			return 0, fmt.Errorf("peak RSS of %s: %v %s", cmd, err, out.Stderr)
		}
		kib, err := strconv.ParseInt(strings.TrimSpace(out.Stdout), 10, 64)
		if err != nil {
			return 0, fmt.Errorf("peak RSS of %s: %q: %w", cmd, out.Stdout, err)
		}
		v = append(v, float64(kib))
	}
	return int64(median(v)), nil
}

// settle waits until the machine is quiet (before the direct runs, after the other targets
// were removed; before the scale rows, after they were resumed): at least 15 s, then until
// the 1-minute load average is below 1 (at most 2 more minutes), and says what it was.
func (b *bench) settle(before string) {
	time.Sleep(15 * time.Second)
	waited := 15 * time.Second
	load := loadAverage()
	for load >= 1 && waited < 135*time.Second {
		time.Sleep(5 * time.Second)
		waited += 5 * time.Second
		load = loadAverage()
	}
	b.log("%s: 1-minute load average %.2f after %s", before, load, waited)
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
