package main

import (
	"encoding/json"
	"fmt"
	"github.com/richt/services/cmd/richt-bench/plot"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/richt/services/modules"
)

// side is one side of a row: its median over the measured rounds, or why it has none.
type side struct {
	Median float64 `json:"median_s"`
	Rounds int     `json:"rounds"`
	Failed string  `json:"failed,omitempty"` // a measured round's failure (the play ignored it)
}

// ok reports whether the side has a time.
func (s side) ok() bool { return s.Failed == "" && s.Rounds > 0 }

// sides gathers every (row, side) of the timings: task times summed per round, the
// median over the measured rounds (round 0 is a warm-up), and the first failure seen.
func sides(ts []timing) map[[2]string]side {
	type key struct{ row, side, round string }
	sum := map[key]float64{}
	failed := map[[2]string]string{}
	for _, t := range ts {
		p := strings.Split(t.Segment, "|")
		if len(p) != 3 || p[0] == "ignore" {
			continue
		}
		sum[key{p[0], p[1], p[2]}] += t.Seconds
		if t.Failed != nil && p[2] != "0" {
			k := [2]string{p[0], p[1]}
			if failed[k] == "" {
				failed[k] = t.Task + ": " + *t.Failed
			}
		}
	}
	rounds := map[[2]string][]float64{}
	for k, v := range sum {
		if k.round != "0" {
			rounds[[2]string{k.row, k.side}] = append(rounds[[2]string{k.row, k.side}], v)
		}
	}
	out := map[[2]string]side{}
	for k, v := range rounds {
		out[k] = side{Median: median(v), Rounds: len(v), Failed: failed[k]}
	}
	return out
}

// row is one measured row and the ratio target it is held to (0: none).
type row struct {
	id, title string
	target    float64
	// mitogenTarget is the target of ours (default strategy) ÷ built-ins under Mitogen.
	mitogenTarget float64
}

// rows are the single-target rows, in report order. Targets: docs/benchmarks.md. The
// Mitogen target of ours (default strategy) ÷ built-ins under Mitogen is 1 for every row
// (the built-ins under Mitogen never beat ours), 0.3 where an earlier stop set it lower.
var rows = []row{
	{"floor", "floor: a task with nothing to do (raw true vs ping)", 0, 0},
	{"pkg-fixtures", "converged exact package, fixture repository (rpm_exact vs dnf)", 0.35, 0.3},
	{"pkg-bulk", "converged exact package, +2,000-package repository (rpm_exact vs dnf)", 0.25, 0.3},
	{"upgrade", "upgrade 1.0 → 2.0 (rpm_exact vs dnf)", 1, 1},
	{"downgrade", "downgrade 2.0 → 1.0 (rpm_exact vs dnf allow_downgrade)", 1, 1},
	{"set-noop", "converged set of 3 pinned packages (rpm_exact packages vs dnf name list)", 1, 0.3},
	{"set-upgrade", "upgrade a set of 3 pinned packages 1.0 → 2.0 (rpm_exact packages vs dnf name list)", 1, 1},
	{"set-downgrade", "downgrade the set 2.0 → 1.0 (rpm_exact packages vs dnf name list, allow_downgrade)", 1, 1},
	{"svc", "converged service (systemd_lifecycle vs systemd_service)", 0.4, 0.3},
	{"dropin", "drop-in change + reload (unit_override + reload_on vs copy + handler)", 0.5, 1},
	{"config", "config change + reload (one service task with configs vs template + handler)", 0.35, 1},
	{"role-converge", "demo role converge from clean (role vs built-in play)", 0.35, 1},
	{"role-noop", "demo role no-op re-run (role vs built-in play)", 0.15, 0.3},
	{"service-converge", "demo service converge from clean (service module task vs built-in play)", 0.35, 1},
	{"service-noop", "demo service no-op re-run (service module task vs built-in play)", 0.15, 0.3},
	{"rollback", "failing upgrade until the old build serves again (service task with rollback vs block/rescue: dnf, systemd, wait_for)", 0.5, 1},
	{"pkg-el", "EL-sized RPM database: converged exact package (rpm_exact vs dnf)", 0.35, 0.3},
	{"upgrade-el", "EL-sized RPM database: upgrade 1.0 → 2.0 (rpm_exact vs dnf)", 0.9, 1},
	{"downgrade-el", "EL-sized RPM database: downgrade 2.0 → 1.0 (rpm_exact vs dnf allow_downgrade)", 1, 1},
	{"role-converge-el", "EL-sized RPM database: demo role converge from clean", 0.35, 1},
	{"role-noop-el", "EL-sized RPM database: demo role no-op re-run", 0.15, 0.3},
	{"config-el", "EL-sized RPM database: config change + reload (service task vs template + handler)", 0.35, 1},
}

// ourMitogenTarget is the target of ours under Mitogen ÷ built-ins under Mitogen.
const ourMitogenTarget = 0.6

// scaleTargets are the targets of ours ÷ built-ins on 8 and more targets (no-op and
// changed), and growthTarget the largest growth of the time per host from 8 targets to the
// most.
var scaleTargets = map[string]float64{"noop": 0.20, "change": 0.25}

const growthTarget = 1.5

// aroundTarget is the target of a transaction's time besides DNF's own process (ms), on the
// EL-sized RPM database; serviceDirectTarget that of a converged direct run of the service
// module (ms).
const aroundTarget, serviceDirectTarget = 100.0, 40.0

// results is what a run measured, as bench.json holds it.
type results struct {
	Date, Ansible, Image string
	Rounds, ScaleRounds  int
	Mitogen              bool
	Sides                map[string]side // "row|side"
	Direct               []direct
	AroundDNF            *aroundDNF      `json:",omitempty"`
	Libraries            *librariesBench `json:",omitempty"`
	Sizes                map[string]int64
	FailedPlays          []string
}

func (b *bench) report(ts []timing, dir []direct, around *aroundDNF) error {
	sd := sides(ts)
	ver, _ := exec.Command(b.ansiblePlaybook, "--version").Output()
	res := results{Date: time.Now().UTC().Format("2006-01-02"), Ansible: strings.SplitN(string(ver), "\n", 2)[0], Image: b.targets[0].Image,
		Rounds: b.rounds, ScaleRounds: b.scaleRounds, Mitogen: b.mitogen, Sides: map[string]side{}, Direct: dir, AroundDNF: around, Libraries: b.libraries, Sizes: map[string]int64{}, FailedPlays: b.failed}
	for k, v := range sd {
		res.Sides[k[0]+"|"+k[1]] = v
	}
	for _, m := range modules.Names() {
		// bin/x86_64/NAME: the build the bench's targets (this host's kernel) run, one
		// multi-call binary that every module's size names.
		if fi, err := os.Stat(filepath.Join(b.coll, "ansible_collections/richt/services/bin/x86_64", m)); err == nil {
			res.Sizes[m] = fi.Size()
		}
	}
	if err := os.MkdirAll(b.out, 0o755); err != nil {
		return fmt.Errorf("report directory: %w", err)
	}
	var md strings.Builder
	bars, points := writeReport(&md, res, b.scale)
	fmt.Print(md.String())
	data, _ := json.MarshalIndent(res, "", "  ")
	for name, content := range map[string][]byte{"bench.md": []byte(md.String()), "bench.json": data} {
		if err := os.WriteFile(filepath.Join(b.out, name), content, 0o644); err != nil {
			return fmt.Errorf("report: %w", err)
		}
	}
	title := fmt.Sprintf("richt-bench %s: ours / built-in, median wall time (lower is better); %s; %s", res.Date, res.Ansible, res.Image)
	if err := plot.Write(filepath.Join(b.out, "benchmarks.png"), title, bars, points); err != nil {
		return err
	}
	b.log("report, figures and plot in %s", b.out)
	if len(b.failed) > 0 {
		return fmt.Errorf("plays failed: %s (their rows say n/a)", strings.Join(b.failed, ", "))
	}
	return nil
}

// meets is the verdict on value against a target it must not exceed.
func meets(value, target float64) string {
	if value > target {
		return "**no**"
	}
	return "yes"
}

// ratioCell is ours ÷ theirs with the target's verdict, or why there is none.
func ratioCell(ours, theirs side, target float64) (string, float64, string) {
	switch {
	case !theirs.ok() && theirs.Failed != "":
		return "— (built-in fails)", -1, "fails"
	case !ours.ok() && ours.Failed != "":
		return "— (ours fails)", -1, "fails"
	case !ours.ok() || !theirs.ok() || theirs.Median == 0:
		return "n/a", -1, "n/a"
	}
	r := ours.Median / theirs.Median
	verdict := ""
	if target > 0 {
		verdict = fmt.Sprintf("≤ %.2f: %s", target, meets(r, target))
	}
	return fmt.Sprintf("%.3f", r), r, verdict
}

func timeCell(s side) string {
	switch {
	case s.Failed != "":
		return "fails"
	case s.Rounds == 0:
		return "n/a"
	}
	return fmt.Sprintf("%.3f", s.Median)
}

// writeReport writes the Markdown tables and returns the plot's bars and points.
func writeReport(w io.Writer, res results, scale []int) ([]plot.Bar, []plot.Point) {
	get := func(row, s string) side { return res.Sides[row+"|"+s] }
	var bars []plot.Bar
	bar := func(group, label string, r, target float64, verdict string) {
		b := plot.Bar{Group: group, Label: label, Ratio: r, Target: target}
		if r < 0 {
			b.Note = verdict
		}
		bars = append(bars, b)
	}
	short := func(title string) string {
		if i := strings.Index(title, " ("); i > 0 {
			return title[:i]
		}
		return title
	}
	fmt.Fprintf(w, "\nricht-bench %s · %s · targets: %s · SSH, pipelining on · %d measured rounds after 1 warm-up (scale rows: %d rounds after the set-up converge)\n\n",
		res.Date, res.Ansible, res.Image, res.Rounds, res.ScaleRounds)

	fmt.Fprintln(w, "Default strategy (linear), one target:")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| row | ours (median s) | built-in (median s) | ours ÷ built-in | target |")
	fmt.Fprintln(w, "|---|---:|---:|---:|---|")
	for _, r := range rows {
		o, t := get(r.id, sideOurs), get(r.id, sideBuiltin)
		cell, ratio, verdict := ratioCell(o, t, r.target)
		fmt.Fprintf(w, "| %s | %s | %s | %s | %s |\n", r.title, timeCell(o), timeCell(t), cell, verdict)
		if r.id != "floor" {
			bar("default strategy, one target", short(r.title), ratio, r.target, verdict)
		}
	}
	for _, m := range []struct{ ours, builtin, title string }{
		{"ours-rpm", "builtin-dnf", "cold first task: rpm_exact (installs the binary) vs first dnf"},
		{"ours-svc", "builtin-systemd", "cold first task: systemd_lifecycle (installs the binary) vs first systemd_service"},
	} {
		o, t := res.Sides["cold|"+m.ours], res.Sides["cold|"+m.builtin]
		// The cold play has one round, round 1.
		cell, ratio, verdict := ratioCell(o, t, 1)
		fmt.Fprintf(w, "| %s | %s | %s | %s | %s |\n", m.title, timeCell(o), timeCell(t), cell, verdict)
		bar("default strategy, one target", short(m.title), ratio, 1, verdict)
	}

	if res.Mitogen {
		fmt.Fprintln(w)
		fmt.Fprintln(w, "Against Mitogen (mitogen_linear, ansible-mitogen 0.3.3), one target:")
		fmt.Fprintln(w)
		fmt.Fprintln(w, "| row | built-in under Mitogen (s) | ours, default strategy (s) | ours ÷ built-in under Mitogen | target | ours under Mitogen (s) | ours under Mitogen ÷ built-in under Mitogen | target |")
		fmt.Fprintln(w, "|---|---:|---:|---:|---|---:|---:|---|")
		var failures []string
		for _, r := range rows {
			t, o, om := get(r.id, sideBuiltinMitogen), get(r.id, sideOurs), get(r.id, sideOursMitogen)
			c1, r1, v1 := ratioCell(o, t, r.mitogenTarget)
			mt := ourMitogenTarget
			if r.id == "floor" {
				mt = 0 // the floor explains the other rows; it has no target of its own
			}
			c2, r2, v2 := ratioCell(om, t, mt)
			fmt.Fprintf(w, "| %s | %s | %s | %s | %s | %s | %s | %s |\n", r.title, timeCell(t), timeCell(o), c1, v1, timeCell(om), c2, v2)
			if r.id != "floor" {
				bar("ours (default strategy) / built-ins under Mitogen", short(r.title), r1, r.mitogenTarget, failNote(t, v1))
				bar("ours under Mitogen / built-ins under Mitogen", short(r.title), r2, ourMitogenTarget, failNote(t, v2))
			}
			for _, s := range []struct {
				name string
				side side
			}{{"built-in", t}, {"ours", om}} {
				if s.side.Failed != "" {
					failures = append(failures, fmt.Sprintf("- %s, %s under Mitogen: %s", r.id, s.name, s.side.Failed))
				}
			}
		}
		if len(failures) > 0 {
			fmt.Fprintln(w)
			fmt.Fprintln(w, "Failures under Mitogen (first failed task of the measured rounds):")
			fmt.Fprintln(w)
			for _, f := range failures {
				fmt.Fprintln(w, f)
			}
		}
	}

	var points []plot.Point
	if len(scale) > 0 {
		fmt.Fprintln(w)
		fmt.Fprintln(w, "Scale: the demo role on N targets at once, forks = N (time per host = median run ÷ N):")
		fmt.Fprintln(w)
		fmt.Fprintln(w, "| targets | run | ours (s) | ours per host (s) | built-in (s) | built-in per host (s) | ours ÷ built-in | target |")
		fmt.Fprintln(w, "|---:|---|---:|---:|---:|---:|---:|---|")
		perHost := map[string]map[int]float64{}
		for _, kind := range []struct{ id, title string }{{"noop", "no-op"}, {"change", "changed (new level, reload)"}} {
			for _, n := range scale {
				id := fmt.Sprintf("scale-%s-%d", kind.id, n)
				o, t := get(id, sideOurs), get(id, sideBuiltin)
				target := 1.0
				if n >= 8 {
					target = scaleTargets[kind.id]
				}
				cell, ratio, verdict := ratioCell(o, t, target)
				per := func(s side) string {
					if !s.ok() {
						return timeCell(s)
					}
					return fmt.Sprintf("%.3f", s.Median/float64(n))
				}
				fmt.Fprintf(w, "| %d | %s | %s | %s | %s | %s | %s | %s |\n", n, kind.title, timeCell(o), per(o), timeCell(t), per(t), cell, verdict)
				bar("scale: the demo role on N targets (forks = N)", fmt.Sprintf("%s, %d targets", kind.title, n), ratio, target, verdict)
				for _, s := range []struct {
					name string
					side side
				}{{"ours", o}, {"built-in", t}} {
					if s.side.ok() {
						series := s.name + " " + map[string]string{"noop": "no-op", "change": "changed"}[kind.id]
						if perHost[series] == nil {
							perHost[series] = map[int]float64{}
						}
						perHost[series][n] = s.side.Median / float64(n)
						points = append(points, plot.Point{Series: series, Hosts: n, SecondsPerHost: s.side.Median / float64(n)})
					}
				}
			}
		}
		if len(scale) > 1 {
			from, to := 8, scale[len(scale)-1]
			if scale[0] > from || to <= from {
				from = scale[len(scale)-2]
			}
			fmt.Fprintln(w)
			fmt.Fprintf(w, "Growth of the time per host from %d to %d targets (target ≤ %.1f×):", from, to, growthTarget)
			var names []string
			for n := range perHost {
				names = append(names, n)
			}
			sort.Strings(names)
			for _, n := range names {
				a, b := perHost[n][from], perHost[n][to]
				if a > 0 && b > 0 {
					mark := ""
					if b/a > growthTarget {
						mark = " (**over**)"
					}
					fmt.Fprintf(w, " %s %.2f×%s;", n, b/a, mark)
				}
			}
			fmt.Fprintln(w)
		}
	}

	writeEE(w, res, scale)

	fmt.Fprintln(w)
	fmt.Fprintln(w, "Direct converged runs on the target, no Ansible (ours: the cached binary; built-in: its AnsiballZ payload run by python3):")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| module | binary size (bytes) | median run (ms) | peak RSS (MiB) |")
	fmt.Fprintln(w, "|---|---:|---:|---:|")
	byName := map[string]direct{}
	for _, d := range res.Direct {
		byName[d.Module] = d
	}
	for _, c := range directCases {
		for _, m := range []string{c.ours, c.builtin} {
			if m == "" {
				continue
			}
			size := "—"
			if v, ok := res.Sizes[m]; ok {
				size = fmt.Sprint(v)
			}
			d := byName[m]
			name := m
			if m == c.builtin {
				name = "built-in " + m
			}
			fmt.Fprintf(w, "| %s | %s | %.1f | %.1f |\n", name, size, d.Ms, float64(d.RSSKiB)/1024)
		}
	}
	for _, m := range modules.Names() {
		if _, ok := byName[m]; !ok {
			fmt.Fprintf(w, "| %s | %d | — | — |\n", m, res.Sizes[m])
		}
	}
	if d, ok := byName["service"]; ok && d.Ms > 0 {
		fmt.Fprintf(w, "\nThe demo service converged, one direct run of the service module: %.1f ms (target ≤ %.0f ms: %s).\n", d.Ms, serviceDirectTarget, meets(d.Ms, serviceDirectTarget))
	}
	if a := res.AroundDNF; a != nil {
		fmt.Fprintf(w, "\nTime around DNF on the EL-sized RPM database (%d packages): %d transactions by rpm_exact run directly, median run %.0f ms, of it DNF's process %.0f ms; median per transaction besides DNF: %.0f ms (target ≤ %.0f ms: %s).\n",
			a.Packages, a.Transactions, a.ModuleMs, a.DNFMs, a.AroundMs, aroundTarget, meets(a.AroundMs, aroundTarget))
	}
	if res.Libraries != nil {
		writeLibraries(w, res.Libraries)
	}
	if len(res.FailedPlays) > 0 {
		fmt.Fprintf(w, "\nPlays that failed (their rows say n/a): %s\n", strings.Join(res.FailedPlays, ", "))
	}
	return bars, points
}

// failNote is the plot's note for a bar without a ratio.
func failNote(builtin side, verdict string) string {
	if builtin.Failed != "" {
		return "built-in fails under Mitogen"
	}
	return verdict
}

// median is the middle value of v (the mean of the two middle ones for an even count), 0
// for none.
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
