package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/richt/services/ee"
)

// The execution-environment rows: the demo role on every target through AWX's
// job path (ansible-runner transmit | worker in the EE's container | process), once with
// one execution node (one worker for all targets, forks = all) and once with two (two
// workers started together, half the inventory each, forks = half). A changed run (a new
// level: the drop-in changes and the service reloads) and a no-op re-run per round.
//
// Part of the default run, as the issue asks; -only ee runs them alone (after the setup).
// They add some 3-5 minutes, and a cold build of the image some 2 more (ee.Ensure reuses
// an image of the same content, so only the first run after a change pays it).

// eeModes are the rows' execution-node counts.
var eeModes = []struct {
	id    string
	nodes int
}{{"1node", 1}, {"2nodes", 2}}

const sideEE = "ee"

// eeRows measures the rows; a failure is logged and marks them failed, as playRows does.
func (b *bench) eeRows(ctx context.Context, root string) []timing {
	if !b.selected("ee") {
		return nil
	}
	ts, err := b.eeJobs(ctx, root)
	if err != nil {
		b.log("FAILED ee: %v", err)
		b.failed = append(b.failed, "ee")
	}
	return ts
}

// eeTiming is one row's round from its nodes' jobs, which all ran: a job that ran and
// failed (a host failed or was unreachable) marks the row's round failed, as a play's
// ignored failure does, and the other rows still run; a job whose pipeline broke is an
// error.
func eeTiming(row string, round int, seconds float64, results []ee.Result, errs []error) (timing, error) {
	t := timing{Segment: fmt.Sprintf("%s|%s|%d", row, sideEE, round), Task: "job", Seconds: seconds}
	for k := range results {
		if errs[k] != nil {
			return timing{}, fmt.Errorf("%s round %d node %d: %w", row, round, k, errs[k])
		}
		if results[k].Status != "successful" && t.Failed == nil {
			msg := fmt.Sprintf("node %d: job %s (rc %d): %s", k, results[k].Status, results[k].RC, tailLines(results[k].Stdout(), 5))
			t.Failed = &msg
		}
	}
	return t, nil
}

func (b *bench) eeJobs(ctx context.Context, root string) ([]timing, error) {
	dir := filepath.Join(b.work, "ee")
	b.log("ee: the collection's tarball and the execution environment")
	if out, err := exec.CommandContext(ctx, "make", "-C", root, "collection", "BUILD="+filepath.Join(dir, "coll")).CombinedOutput(); err != nil {
		return nil, fmt.Errorf("make collection: %w\n%s", err, tailLines(string(out), 30))
	}
	tarballs, _ := filepath.Glob(filepath.Join(dir, "coll", "richt-services-*.tar.gz"))
	if len(tarballs) != 1 {
		return nil, fmt.Errorf("make collection left %d tarballs", len(tarballs))
	}
	img, err := ee.Ensure(ctx, ee.Options{Definition: filepath.Join(root, "execution-environment.yml"), Collection: tarballs[0], Log: os.Stderr})
	if err != nil {
		return nil, err
	}
	b.log("ee: %s, %d MB (built: %v, %.0f s)", img.Tag, img.Size/1e6, img.Built, img.BuildTime.Seconds())

	access, err := b.targets[0].SSH(ctx)
	if err != nil {
		return nil, err
	}
	key, err := os.ReadFile(access.KeyFile)
	if err != nil {
		return nil, fmt.Errorf("ssh key: %w", err)
	}
	vars, err := os.ReadFile(filepath.Join(root, "playbooks/vars/demo_service.yml"))
	if err != nil {
		return nil, err
	}
	// The demo role as the setup converged it; the level comes from the job's extra vars.
	demo, _ := json.MarshalIndent([]map[string]any{{
		"name": "richt-bench ee", "hosts": "all", "gather_facts": false,
		"vars":       map[string]any{"demo_version": demoV1},
		"vars_files": []string{"vars/demo_service.yml"},
		"tasks":      []task{role()},
	}}, "", "  ")
	project := map[string][]byte{"demo.yml": demo, "vars/demo_service.yml": vars}
	// inventory of the targets [from, to).
	inventory := func(from, to int) (map[string]any, error) {
		hosts := map[string]any{}
		for i := from; i < to; i++ {
			a, err := b.targets[i].SSH(ctx)
			if err != nil {
				return nil, err
			}
			v := a.HostVars()
			delete(v, "ansible_ssh_private_key_file") // env/ssh_key, as a machine credential
			v["ansible_python_interpreter"] = "/usr/bin/python3"
			hosts[fmt.Sprintf("t%d", i)] = v
		}
		return map[string]any{"all": map[string]any{"hosts": hosts}}, nil
	}
	n := len(b.targets)
	job := func(name string, from, to int, level string) (ee.Job, error) {
		inv, err := inventory(from, to)
		if err != nil {
			return ee.Job{}, err
		}
		jd := filepath.Join(dir, name)
		d := ee.DataDir{Project: project, Inventory: inv, SSHKey: key, ExtraVars: map[string]any{"demo_level": level},
			Cmdline: fmt.Sprintf("--forks %d", to-from),
			EnvVars: map[string]string{"ANSIBLE_PIPELINING": "1", "ANSIBLE_HOST_KEY_CHECKING": "False", "ANSIBLE_NOCOLOR": "1"}}
		if err := d.Write(filepath.Join(jd, "private")); err != nil {
			return ee.Job{}, err
		}
		return ee.Job{Image: img.Tag, Dir: filepath.Join(jd, "private"), Out: filepath.Join(jd, "out"), Playbook: "demo.yml", Ident: name}, nil
	}
	// run starts the mode's workers together and times them until the last one ends.
	run := func(mode string, nodes int, row string, round int, level string) (timing, error) {
		jobs := make([]ee.Job, nodes)
		for k := range jobs {
			var err error
			if jobs[k], err = job(fmt.Sprintf("%s-%d-node%d", row, round, k), k*n/nodes, (k+1)*n/nodes, level); err != nil {
				return timing{}, err
			}
		}
		results, errs := make([]ee.Result, nodes), make([]error, nodes)
		start := time.Now()
		var wg sync.WaitGroup
		for k := range jobs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				results[k], errs[k] = jobs[k].Run(ctx)
			}()
		}
		wg.Wait()
		t, err := eeTiming(row, round, time.Since(start).Seconds(), results, errs)
		if err != nil {
			return timing{}, err
		}
		if t.Failed != nil {
			b.log("FAILED %s (%s, round %d): %s", row, mode, round, *t.Failed)
		}
		b.log("%s (%s, round %d): %.1f s", row, mode, round, t.Seconds)
		return t, nil
	}
	var ts []timing
	for r := 1; r <= b.scaleRounds; r++ {
		for _, m := range eeModes {
			level := fmt.Sprintf("ee%s%d", m.id, r)
			for _, kind := range []string{"change", "noop"} {
				t, err := run(m.id, m.nodes, "ee-"+kind+"-"+m.id, r, level)
				if err != nil {
					return ts, err
				}
				ts = append(ts, t)
			}
		}
	}
	return ts, nil
}

// writeEE writes the execution-environment rows, when the run measured them.
func writeEE(w io.Writer, res results, scale []int) {
	found := false
	for k := range res.Sides {
		found = found || strings.HasPrefix(k, "ee-")
	}
	if !found || len(scale) == 0 {
		return
	}
	n := scale[len(scale)-1]
	fmt.Fprintln(w)
	fmt.Fprintf(w, "AWX's job path (ansible-runner transmit | worker in the execution environment | process), the demo role on %d targets: one execution node (forks %d) against two started together (half the inventory each, forks %d); time per host = median wall time ÷ %d:\n", n, n, n/2, n)
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| run | one node (s) | one node per host (s) | two nodes (s) | two nodes per host (s) | two ÷ one |")
	fmt.Fprintln(w, "|---|---:|---:|---:|---:|---:|")
	for _, kind := range []struct{ id, title string }{{"change", "changed (new level, reload)"}, {"noop", "no-op"}} {
		one, two := res.Sides["ee-"+kind.id+"-1node|"+sideEE], res.Sides["ee-"+kind.id+"-2nodes|"+sideEE]
		per := func(s side) string {
			if !s.ok() {
				return timeCell(s)
			}
			return fmt.Sprintf("%.3f", s.Median/float64(n))
		}
		cell, _, _ := ratioCell(two, one, 0)
		fmt.Fprintf(w, "| %s | %s | %s | %s | %s | %s |\n", kind.title, timeCell(one), per(one), timeCell(two), per(two), cell)
	}
}
