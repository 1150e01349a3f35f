// Command richt-soak runs a random, seeded sequence of module runs on one real target with
// faults injected between and during them, and checks after every step that nothing is
// half-done and that every reaction owed was delivered exactly once (docs/reliability.md,
// "Soak"):
//
//	richt-soak [-for 10m] [-seed N] [-faults kind,...] [-modules BINARY]
//
// The steps: rpm_exact pins moving up and down (one package and a set), unit_override
// drop-ins changing, systemd_lifecycle with a restart_on, and the service module (with a
// sensitive drop-in); check mode mixed in. Beside demo, a second service, soakrb (its own
// package, unit and config, so demo's ledger never sees it), is run by the service module
// with rollback: true: to a good build and config, to a build whose unit cannot start,
// or to a config that moves the daemon away from its health probe (a banner on
// 127.0.0.1:18081). The faults: SIGKILL of the module during its run, SIGKILL of a
// transaction's supervisor, a stop of the caller's unit (the module run by a oneshot
// unit), two runs at once, a corrupt durable record, systemctl daemon-reexec during a
// run, a full disk under the drop-ins, a reboot of the target during a run (clean, or a
// power loss), SIGKILL of the module while soakrb's rollback record says restoring
// (kill-rollback), and a reload_on refused because demo.service lost its ExecReload= just
// before the step (refused-reload). A fault that needs a package transaction forces a step that moves a
// version (demo's or soakrb's), outside check mode; each fault records whether it landed
// (the process existed and was killed, the run was cut short or overlapped, the write met
// the full disk, the module read the corrupt record, the restart caught DNF at work, the
// kill met the rollback), and a kind that never landed fails the soak. A fault that ends
// a soakrb run where it lands is counted by the phase of the record it left: restoring
// (the kill landed during a rollback), changing (during the forward change), or none.
//
// After every step the service converges to what was last asked, and the soak checks: one
// build per package name and `dnf check` clean; no temporary file left; the unit's
// restarts and reloads, counted from a timeline the unit itself writes, against what the
// runs owed (none lost, none doubled, the last start on the installed version and the last
// reaction with the asked level); a converging run after a successful one changes nothing;
// a check-mode run changes nothing; the corrupt-record run's result; a refused run leaves
// the pending record as it was, and no run fails over a pending record it cannot carry
// out but the corrupt one; no secret in any
// output (diff on, every run's output and the journal read). For soakrb, after every step:
// all new or all old, and running — one build installed, either the one last asked for
// (only when it is good and its run succeeded) or the last good state before the failing
// change, never the broken build or the moved config; the config that belongs with that
// state; the unit active and enabled; the probe's address greeting with the installed
// build and config; no rollback record left. A run to a broken state must fail with
// rolled_back.healthy true and say the previous state is back and healthy; a run to a good
// one, or in check mode, must succeed. A run a fault did not kill must already hold that
// (a record allowed only when a result said its rollback failed); after any fault on a
// soakrb step the soak runs the step again, as a play would be, and that next run must
// restore it (up to five runs, while one refuses before any change). It prints the counts
// per fault kind (drawn and landed), soakrb's rollback steps, rollbacks and kills during a
// rollback, and, for a violation, the seed and the step; the same seed replays the same
// sequence. Not part of make test: `make soak` (SOAK_ARGS=-for 30m).
package main

import (
	"context"
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
	defer s.close()
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
	t *testenv.Target
	// tmp are the host's directories the soak made (the build, the module links, the
	// packages' repository), removed by close: every soak and every make test left three.
	tmp   []string
	rnd   *rand.Rand
	deck  faultDeck
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

	// rb is the rollback service's last good state: what it holds after the last step.
	rb  rbState
	rbc rbCounts
	// parsed are the results read during the current step.
	parsed []map[string]any
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
	s, err := newSoak(seed, bin)
	if err != nil {
		if prebuilt == "" {
			_ = os.RemoveAll(filepath.Dir(bin))
		}
		return nil, err
	}
	if prebuilt == "" {
		s.tmp = append(s.tmp, filepath.Dir(bin))
	}
	// What start made goes when it fails: the caller gets no soak to close.
	fail := func(err error) (*soak, error) {
		s.close()
		return nil, err
	}
	if s.t, err = testenv.StartContext(ctx, testenv.WithLabel("org.richt.soak", "1")); err != nil {
		return fail(err)
	}
	if err := s.setUpDemo(ctx); err != nil {
		return fail(err)
	}
	if err := s.setUpRollback(ctx); err != nil {
		return fail(err)
	}
	// The set-up's install and first start are owed by nothing the ledger tracks yet.
	s.led.take()
	return s, nil
}

// newSoak is a soak of seed with the module binary bin, before its target.
func newSoak(seed int64, bin string) (*soak, error) {
	s := &soak{rnd: rand.New(rand.NewSource(seed)), bins: map[string]string{}, drawn: map[string]int{}, landed: map[string]int{},
		rbc: rbCounts{steps: map[string]int{}}}
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
	s.tmp = append(s.tmp, dir)
	for _, m := range modules.Names() {
		p := filepath.Join(dir, m)
		if err := os.Symlink(bin, p); err != nil {
			s.removeTemp()
			return nil, err
		}
		s.bins[m] = p
	}
	return s, nil
}

// setUpDemo puts the demo service on the target: the timeline marker, the packages'
// repository, and the service converged at the first version and level.
func (s *soak) setUpDemo(ctx context.Context) error {
	if err := s.t.WriteFile(ctx, markerPath, []byte(marker), 0o755); err != nil {
		return fmt.Errorf("write the timeline marker: %w", err)
	}
	repo, err := os.MkdirTemp("", "richt-soak-repo-")
	if err != nil {
		return err
	}
	s.tmp = append(s.tmp, repo)
	var pkgs []testenv.Package
	for _, v := range pkgVersions {
		pkgs = append(pkgs, soakPackage(v))
	}
	for _, v := range append(slices.Clone(rbGood), rbBroken) {
		pkgs = append(pkgs, rbPackage(v))
	}
	if err := testenv.BuildRepoDir(repo, pkgs...); err != nil {
		return err
	}
	if err := s.t.AddRepo(ctx, "fixtures", repo); err != nil {
		return err
	}
	s.version, s.level = versions[0], levels[0]
	_, err = s.converge(ctx, "set-up")
	return err
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

// close removes the soak's target (when it has one) and its directories on the host.
func (s *soak) close() {
	if s.t != nil {
		_ = s.t.Terminate(context.Background())
	}
	s.removeTemp()
}

// removeTemp removes the soak's directories on the host.
func (s *soak) removeTemp() {
	for _, d := range s.tmp {
		_ = os.RemoveAll(d)
	}
	s.tmp = nil
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
