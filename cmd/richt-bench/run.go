package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/richt/services/testenv"
	"github.com/richt/services/testenv/fixtures"
)

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
	// libraries is the libraries row's result (nil: not run).
	libraries *librariesBench
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
	// demoBroken: the rollback row's build that installs but cannot start.
	pkgs := []testenv.Package{fixtures.DemoPackage("1.0"), fixtures.DemoPackage("2.0"), fixtures.DemoBroken("3.0")}
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
	b.log("rows on one target: cold, packages, service, drop-in reload, upgrade/downgrade, package sets, config, role, service task, rollback (Mitogen: %v)", b.mitogen)
	// A play that fails is reported with its rows marked failed; the other rows still run.
	ts = append(ts, b.playRows(rowsPlay{name: "cold", hosts: "one", forks: 1}, coldPlay(root))...)
	for _, rp := range append(singlePlays(c.rounds, c.mitogen), configPlay(root, "config", c.rounds, c.mitogen), rolePlay(c.rounds, c.mitogen), servicePlay(c.rounds, c.mitogen)) {
		ts = append(ts, b.playRows(rp, rp.plays(root))...)
	}
	// Both sides of the rollback row fail on purpose half-way: rollbackTimings keeps only
	// the failures that count.
	rb := rollbackPlay(c.rounds, c.mitogen)
	ts = append(ts, rollbackTimings(b.playRows(rb, rb.plays(root)))...)
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
	// The libraries row runs on a target of its own while the others are paused.
	if libs, err := b.librariesRow(ctx, root); err != nil {
		b.log("FAILED libraries: %v", err)
		b.failed = append(b.failed, "libraries")
	} else {
		b.libraries = libs
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
	// AWX's job path on every target, one execution node against two (ee.go).
	ts = append(ts, b.eeRows(ctx, root)...)
	// -only without "direct" is work on some rows: the direct runs (and the settle before
	// them, up to two minutes) are left out.
	if !b.selected("direct") {
		return b.report(ts, nil, around)
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

func repoRoot() (string, error) {
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}").Output()
	if err != nil {
		return "", fmt.Errorf("find the module root (run from the repository): %w", err)
	}
	return strings.TrimSpace(string(out)), nil
}
