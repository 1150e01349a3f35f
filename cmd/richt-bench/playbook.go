package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

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
