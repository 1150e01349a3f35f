package main

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/richt/services/testenv"
)

// An EL server's RPM database holds 500-1,500 packages with full headers; the targets'
// holds a few dozen Debian-registered ones. The EL-sized rows run on the first target after
// n generated packages of files files each are registered in its database with
// `rpm -i --justdb` (headers only, nothing written under /usr), so rpm's queries and our
// snapshots around DNF cost there what they cost users. They are unregistered afterwards:
// the scale rows and the direct runs keep the small database of the earlier runs.

// elDir is where the generated packages sit on the first target.
const elDir = "/srv/richt-repos/elsize"

// buildELSized makes n noarch packages (elsizeNNNN) of files small files each with one
// rpmbuild run, into dir/noarch.
func buildELSized(dir string, n, files int) error {
	var spec strings.Builder
	spec.WriteString("Name: elsize\nVersion: 1.0\nRelease: 1\nSummary: generated\nLicense: MIT\nBuildArch: noarch\nAutoReqProv: no\n%description\ngenerated\n")
	for i := 0; i < n; i++ {
		fmt.Fprintf(&spec, "%%package -n elsize%04d\nSummary: generated %d\nAutoReqProv: no\n%%description -n elsize%04d\ngenerated package %d of an EL-sized RPM database\n", i, i, i, i)
	}
	fmt.Fprintf(&spec, "%%install\nfor i in $(seq -f %%04g 0 %d); do d=%%{buildroot}/usr/share/elsize/$i; mkdir -p $d; for j in $(seq -f %%03g 1 %d); do echo $i-$j > $d/f$j; done; done\n", n-1, files)
	// The main package has no files and is not built; each subpackage owns its directory.
	for i := 0; i < n; i++ {
		fmt.Fprintf(&spec, "%%files -n elsize%04d\n/usr/share/elsize/%04d\n", i, i)
	}
	// No install-time post-processing (brp scripts, build-id links): the files are text and
	// only their headers matter.
	return rpmbuildSpec(dir, "elsize", spec.String(), "__spec_install_post %{nil}", "_build_id_links none")
}

// dnfTimer stands first in PATH for `dnf` during the around-DNF runs: DNF 4's own entry
// point (so rpm_exact's quick version check reads it as DNF 4) that appends, on exit, the
// seconds since its process started (from /proc/self/stat, 10 ms ticks) to a log. The
// built-in dnf module imports DNF and never runs the command.
const dnfTimer = `#!/usr/bin/python3
# richt-bench: DNF 4 (dnf.cli) with its process time logged
import atexit, os, time
def _log():
    with open('/proc/self/stat') as f:
        start = int(f.read().rsplit(')', 1)[1].split()[19])
    up = time.clock_gettime(time.CLOCK_BOOTTIME)
    with open('/var/log/richt-bench-dnf.log', 'a') as f:
        f.write('%.3f\n' % (up - start / os.sysconf('SC_CLK_TCK')))
atexit.register(_log)
import sys
from dnf.cli import main
main.user_main(sys.argv[1:], exit_code=True)
`

// aroundDNF is what a transaction costs besides DNF's own process, from direct runs.
type aroundDNF struct {
	Packages     int     `json:"packages"`      // in the RPM database during the runs
	Transactions int     `json:"transactions"`  // rpm_exact runs that moved the pin
	ModuleMs     float64 `json:"module_ms"`     // median wall time of such a run
	DNFMs        float64 `json:"dnf_ms"`        // median wall time of DNF's process in it
	AroundMs     float64 `json:"around_ms"`     // median of (run − DNF) per transaction
	DNFProcesses int     `json:"dnf_processes"` // DNF processes the runs started in all
}

// elSized registers the generated packages in the first target's RPM database, runs the
// EL-sized rows and the around-DNF runs, and unregisters them.
func (b *bench) elSized(ctx context.Context, root string) ([]timing, *aroundDNF, error) {
	plays := append(elPlays(b.rounds, b.mitogen), configPlay(root, "config-el", b.rounds, b.mitogen))
	wanted := b.selected("around-dnf")
	for _, rp := range plays {
		wanted = wanted || b.selected(rp.name)
	}
	if !wanted { // -only left nothing to run on it: no registering
		return nil, nil, nil
	}
	t := b.targets[0]
	register := `rpm -i --justdb --nodeps --noscripts --notriggers --nosignature --nodigest ` + elDir + `/noarch/*.rpm && rpm -qa | wc -l`
	out, err := t.Exec(ctx, "sh", "-c", register)
	if err != nil || out.ExitCode != 0 {
		return nil, nil, fmt.Errorf("register the EL-sized packages: %v %s %s", err, out.Stdout, out.Stderr)
	}
	n, _ := strconv.Atoi(strings.TrimSpace(out.Stdout))
	b.log("EL-sized RPM database: %d packages", n)
	defer func() {
		out, err := t.Exec(context.Background(), "sh", "-c", `rpm -e --justdb --nodeps --noscripts --notriggers $(rpm -qa 'elsize*') && rm -f /usr/local/sbin/dnf`)
		if err != nil || out.ExitCode != 0 {
			b.log("unregister the EL-sized packages: %v %s", err, out.Stderr)
		}
	}()
	var ts []timing
	for _, rp := range plays {
		ts = append(ts, b.playRows(rp, rp.plays(root))...)
	}
	if !b.selected("around-dnf") {
		return ts, nil, nil
	}
	a, err := b.aroundDNF(ctx, t, 10)
	if err != nil {
		return ts, nil, err
	}
	a.Packages = n
	return ts, a, nil
}

// aroundDNF times rounds upgrades and downgrades of the demo package by the cached rpm_exact
// binary, with DNF's own process timed by dnfTimer.
func (b *bench) aroundDNF(ctx context.Context, t *testenv.Target, rounds int) (*aroundDNF, error) {
	if err := t.WriteFile(ctx, "/usr/local/sbin/dnf", []byte(dnfTimer), 0o755); err != nil {
		return nil, err
	}
	script := `set -e
bin=$(ls /root/.cache/richt.services/richt-modules-"$(uname -m)"-* | grep -v '\.ok$')
run() { printf '{"name":"demo","version":"%s"}' "$1" > /root/bench-around.json; "$bin" rpm_exact - < /root/bench-around.json; }
run ` + demoV1 + ` | grep -q '"failed"' && exit 1
rm -f /var/log/richt-bench-dnf.log
for i in $(seq ` + strconv.Itoa(rounds) + `); do
  for v in ` + demoV2 + ` ` + demoV1 + `; do
    s=$EPOCHREALTIME; out=$(run $v); e=$EPOCHREALTIME
    case "$out" in *'"changed":true'*) echo "run ${s/./} ${e/./}";; *) echo "unchanged: $out" >&2; exit 1;; esac
  done
done
sed 's/^/dnf /' /var/log/richt-bench-dnf.log`
	out, err := t.Exec(ctx, "bash", "-c", script)
	if err != nil || out.ExitCode != 0 {
		return nil, fmt.Errorf("around-DNF runs: %v %s %s", err, out.Stdout, out.Stderr)
	}
	var runs, dnfs []float64
	for _, l := range strings.Split(strings.TrimSpace(out.Stdout), "\n") {
		f := strings.Fields(l)
		switch {
		case len(f) == 3 && f[0] == "run":
			s, _ := strconv.ParseInt(f[1], 10, 64)
			e, _ := strconv.ParseInt(f[2], 10, 64)
			runs = append(runs, float64(e-s)/1000)
		case len(f) == 2 && f[0] == "dnf":
			v, _ := strconv.ParseFloat(f[1], 64)
			dnfs = append(dnfs, v*1000)
		}
	}
	if len(runs) == 0 || len(dnfs) != len(runs) {
		// One DNF process per transaction is what makes the difference meaningful.
		return nil, fmt.Errorf("around-DNF runs: %d transactions started %d DNF processes:\n%s", len(runs), len(dnfs), out.Stdout)
	}
	around := make([]float64, len(runs))
	for i := range runs {
		around[i] = runs[i] - dnfs[i]
	}
	return &aroundDNF{Transactions: len(runs), ModuleMs: median(runs), DNFMs: median(dnfs), AroundMs: median(around), DNFProcesses: len(dnfs)}, nil
}
