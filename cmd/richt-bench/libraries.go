package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/richt/services/testenv"
	"github.com/richt/services/testenv/fixtures"
)

// The libraries row (docs/libraries.md): on a target of its own that carries Debian's
// dnf-plugins-core, a few hundred processes in some forty services, some of which map a
// file an update replaced, it times finding them our way (cmd/richt-stale: every
// service's control group, /proc/PID/maps, rpm -qf for the stale files) against
// `dnf needs-restarting -s`, round by round alternating, and compares the services each
// names. The fixtures are chosen where the two ways may differ by design (ours reads the
// mappings, needs-restarting compares package install times with process start times):
//
//	fixa, fixfork (worker), fixstuck   map libfix, replaced by its upgrade
//	same                               maps libsame, whose upgrade has the very same bytes
//	hand                               maps a library no package owns, replaced by hand
//	fillerNN                           ten sleeps each, nothing replaced
const (
	libFillers      = 36
	libFillerProcs  = 10
	librariesTarget = 0.2 // ours ÷ needs-restarting, at most
)

// librariesBench is the row's result.
type librariesBench struct {
	Processes  int      `json:"processes"`
	Rounds     int      `json:"rounds"`
	OursMs     float64  `json:"ours_ms"`
	TheirsMs   float64  `json:"theirs_ms"`
	Ratio      float64  `json:"ratio"`
	Ours       []string `json:"ours"`
	Theirs     []string `json:"theirs"`
	OnlyOurs   []string `json:"only_ours"`
	OnlyTheirs []string `json:"only_theirs"`
	Image      string   `json:"image"`
}

// libSame is a library package whose file is the same bytes at every version.
func libSame(version string) (testenv.Package, error) {
	p, err := fixtures.LibFix("1.0")
	if err != nil {
		return p, err
	}
	p.Name, p.Version = "libsame", version
	p.Files = map[string]testenv.File{"/usr/lib/richt/libsame.so.1": p.Files[fixtures.LibFixPath]}
	return p, nil
}

// librariesSetup starts the services on the target, then replaces the libraries.
const librariesSetup = `set -e
# Debian's dnf-plugins-core enables the local plugin, whose _dnf_local repository checks
# GPG keys the fixtures do not have; EL ships it apart (python3-dnf-plugin-local), off.
printf '[main]\nenabled=0\n' > /etc/dnf/plugins/local.conf
dnf -q -y install-nevra libfix-0:1.0-1.noarch libsame-0:1.0-1.noarch
cp /usr/lib/richt/libsame.so.1 /usr/local/lib/libhand.so.1
u=/etc/systemd/system
pre() { printf '[Service]\nExecStart=/usr/bin/env LD_PRELOAD=%s /bin/sleep infinity\n%s' "$1" "$2"; }
pre /usr/lib/richt/libfix.so.1 > $u/fixa.service
printf '[Unit]\nRefuseManualStop=yes\n' > $u/fixstuck.service; pre /usr/lib/richt/libfix.so.1 >> $u/fixstuck.service
pre /usr/lib/richt/libsame.so.1 > $u/same.service
pre /usr/local/lib/libhand.so.1 > $u/hand.service
printf '[Service]\nType=forking\nPIDFile=/run/fixfork.pid\nExecStart=/bin/sh -c %s\n' "'(LD_PRELOAD=/usr/lib/richt/libfix.so.1 /bin/sleep infinity & exec /bin/sleep infinity) & echo \$\$! > /run/fixfork.pid'" > $u/fixfork.service
units="fixa fixstuck same hand fixfork"
js=$(seq -s ' ' 1 PROCS)
for i in $(seq -w 1 FILLERS); do
  printf '[Service]\nExecStart=/bin/sh -c "for j in %s; do /bin/sleep infinity & done; wait"\n' "$js" > $u/filler$i.service
  units="$units filler$i"
done
systemctl daemon-reload
systemctl start $units
# needs-restarting compares a package's install time with a process's start, in seconds.
sleep 2
dnf -q -y install-nevra libfix-0:2.0-1.noarch libsame-0:2.0-1.noarch
cp /usr/local/lib/libhand.so.1 /usr/local/lib/libhand.so.1.new && printf 'by hand\n' >> /usr/local/lib/libhand.so.1.new
mv /usr/local/lib/libhand.so.1.new /usr/local/lib/libhand.so.1
ps -e --no-headers | wc -l
`

// librariesTimes times both sides ROUNDS times, alternating, in milliseconds.
const librariesTimes = `set -e
ms() { echo $(( (${2/./} - ${1/./}) / 1000 )); }
for i in $(seq ROUNDS); do
  s=$EPOCHREALTIME; /usr/local/bin/richt-stale > /root/ours.txt; e=$EPOCHREALTIME; echo "ours $(ms $s $e)"
  s=$EPOCHREALTIME; dnf -q needs-restarting -s > /root/theirs.txt 2>/root/theirs.err; e=$EPOCHREALTIME; echo "theirs $(ms $s $e)"
done
sed 's/^/ourline /' /root/ours.txt
sed 's/^/theirline /' /root/theirs.txt
`

func (b *bench) librariesRow(ctx context.Context, root string) (*librariesBench, error) {
	if !b.selected("libraries") {
		return nil, nil
	}
	b.log("libraries: a target with dnf-plugins-core, %d services, ours against dnf needs-restarting -s", libFillers+5)
	bin := filepath.Join(b.work, "richt-stale")
	build := exec.Command("go", "build", "-trimpath", "-o", bin, "./cmd/richt-stale")
	build.Dir, build.Env = root, append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("build richt-stale: %w\n%s", err, out)
	}
	var pkgs []testenv.Package
	for _, v := range []string{"1.0", "2.0"} {
		fix, err := fixtures.LibFix(v)
		if err != nil {
			return nil, err
		}
		same, err := libSame(v)
		if err != nil {
			return nil, err
		}
		pkgs = append(pkgs, fix, same)
	}
	repo := filepath.Join(b.work, "libraries")
	if err := testenv.BuildRepoDir(repo, pkgs...); err != nil {
		return nil, err
	}
	t, err := testenv.StartContext(ctx, testenv.WithPackages("dnf-plugins-core"), testenv.WithLabel("org.richt.bench", "1"), testenv.WithReadyTimeout(3*time.Minute))
	if err != nil {
		return nil, fmt.Errorf("start the libraries target: %w", err)
	}
	if !b.keep {
		defer t.Terminate(context.Background())
	}
	if err := t.AddRepo(ctx, "libraries", repo); err != nil {
		return nil, err
	}
	if err := t.CopyFile(ctx, bin, "/usr/local/bin/richt-stale", 0o755); err != nil {
		return nil, err
	}
	setup := strings.NewReplacer("FILLERS", strconv.Itoa(libFillers), "PROCS", strconv.Itoa(libFillerProcs)).Replace(librariesSetup)
	out, err := t.Exec(ctx, "bash", "-c", setup)
	if err != nil || out.ExitCode != 0 {
		return nil, fmt.Errorf("libraries set-up: %v %s %s", err, out.Stdout, out.Stderr)
	}
	res := &librariesBench{Rounds: b.rounds, Image: t.Image}
	// The count is the script's last line (DNF prints what it did before it, even with -q).
	lines := strings.Split(strings.TrimSpace(out.Stdout), "\n")
	res.Processes, _ = strconv.Atoi(strings.TrimSpace(lines[len(lines)-1]))
	// One round first, not counted: DNF's caches and the page cache warm for both sides.
	for _, rounds := range []int{1, b.rounds} {
		if out, err = t.Exec(ctx, "bash", "-c", strings.ReplaceAll(librariesTimes, "ROUNDS", strconv.Itoa(rounds))); err != nil || out.ExitCode != 0 {
			return nil, fmt.Errorf("libraries rounds: %v %s %s", err, out.Stdout, out.Stderr)
		}
	}
	var ours, theirs []float64
	for _, l := range strings.Split(strings.TrimSpace(out.Stdout), "\n") {
		kind, rest, _ := strings.Cut(l, " ")
		switch kind {
		case "ours", "theirs":
			v, _ := strconv.ParseFloat(rest, 64)
			if kind == "ours" {
				ours = append(ours, v)
			} else {
				theirs = append(theirs, v)
			}
		case "ourline":
			unit, _, _ := strings.Cut(rest, ":")
			res.Ours = append(res.Ours, unit)
		case "theirline":
			res.Theirs = append(res.Theirs, strings.TrimSpace(rest))
		}
	}
	res.OursMs, res.TheirsMs = median(ours), median(theirs)
	if res.TheirsMs > 0 {
		res.Ratio = res.OursMs / res.TheirsMs
	}
	slices.Sort(res.Ours)
	slices.Sort(res.Theirs)
	for _, u := range res.Ours {
		if !slices.Contains(res.Theirs, u) {
			res.OnlyOurs = append(res.OnlyOurs, u)
		}
	}
	for _, u := range res.Theirs {
		if !slices.Contains(res.Ours, u) {
			res.OnlyTheirs = append(res.OnlyTheirs, u)
		}
	}
	b.log("libraries: %d processes, ours %.0f ms, needs-restarting %.0f ms, ratio %.3f; only ours %v, only theirs %v",
		res.Processes, res.OursMs, res.TheirsMs, res.Ratio, res.OnlyOurs, res.OnlyTheirs)
	return res, nil
}

// writeLibraries is the row's paragraph of the report.
func writeLibraries(w interface{ Write([]byte) (int, error) }, l *librariesBench) {
	fmt.Fprintf(w, "\nStale libraries (%s, %d processes, %d rounds): finding the services whose processes map replaced files, ours (richt-stale) median %.0f ms, `dnf needs-restarting -s` %.0f ms; ours ÷ theirs %.3f (target ≤ %.2f: %s). Both name: %s; only ours: %s; only needs-restarting: %s.\n",
		l.Image, l.Processes, l.Rounds, l.OursMs, l.TheirsMs, l.Ratio, librariesTarget, meets(l.Ratio, librariesTarget),
		list(intersect(l.Ours, l.Theirs)), list(l.OnlyOurs), list(l.OnlyTheirs))
}

func intersect(a, b []string) []string {
	var out []string
	for _, x := range a {
		if slices.Contains(b, x) {
			out = append(out, x)
		}
	}
	return out
}

func list(l []string) string {
	if len(l) == 0 {
		return "none"
	}
	return strings.Join(l, ", ")
}
