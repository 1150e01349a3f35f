package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/richt/services/testenv"
	"github.com/richt/services/testenv/fixtures"
)

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
