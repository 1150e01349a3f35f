package rpmexact

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/richt/services/pkg/runner"
	"github.com/richt/services/pkg/stamp"
)

// A transaction moves more than it was asked to: DNF's solver upgrades a package that
// requires the pinned one, pulls in dependencies, removes dependents. So every transaction
// is framed by two snapshots of the whole host, and what differs is reported, asked for or
// not.

// Snapshot is what a transaction can change that later tasks must know about.
type Snapshot struct {
	// Packages maps every installed package name to its builds (NEVRAs, sorted).
	Packages map[string][]string
	// Units fingerprints every entry of systemd's unit directories (and of their
	// .d/.wants/.requires subdirectories).
	Units map[string]string
	// Database is where the packages were read from (empty when rpm did not say).
	Database Database
	// Listed says where Packages came from: ListedRPM or ListedMemo.
	Listed string
}

// Where a snapshot's packages came from.
const (
	// ListedRPM: rpm listed them.
	ListedRPM = "rpm"
	// ListedMemo: the listing the previous transaction read after DNF, with the database
	// files unchanged since (listingmemo.go).
	ListedMemo = "remembered"
)

// Move is one package a transaction installed, upgraded, downgraded or removed.
type Move struct {
	Name   string   `json:"name"`
	Before []string `json:"before"`
	After  []string `json:"after"`
	// Requested: the task named this package; false for what DNF moved on its own.
	Requested bool `json:"requested"`
}

// allPackagesArgv names the database (dbLine) and lists every installed build, one line
// each. Without --nodigest --nosignature rpm checks every header's digest as it reads it
// (the database's integrity is DNF's and rpm's business, not a listing's): on 1,000
// installed packages of 100 files that was 60-70 ms a listing against 21-22 ms
// (docs/benchmarks.md).
var allPackagesArgv = []string{"rpm", "--eval", dbLine, "-qa", "--nodigest", "--nosignature", "--qf", "%{NAME}\t%{EPOCHNUM}:%{VERSION}-%{RELEASE}.%{ARCH}\n"}

// TakeSnapshot reads every installed package from the RPM database and fingerprints the
// unit directories (systemd's, when dirs is nil).
func TakeSnapshot(ctx context.Context, r runner.Runner, dirs []string) (Snapshot, error) {
	res, err := r.Run(ctx, allPackagesArgv...)
	if err != nil {
		return Snapshot{}, fmt.Errorf("list installed packages: %w", err)
	}
	if res.ExitCode != 0 {
		return Snapshot{}, fmt.Errorf("list installed packages: rpm exited %d: %s", res.ExitCode, res.Output())
	}
	db, rest := cutDBLine(res.Stdout)
	pkgs, err := parseAll(rest)
	if err != nil {
		return Snapshot{}, err
	}
	return Snapshot{Packages: pkgs, Units: fingerprintUnits(dirs), Database: db, Listed: ListedRPM}, nil
}

// before is the snapshot a transaction's changes are read against: the packages the
// previous transaction listed after DNF while the database is the same files, else rpm's
// listing; the unit directories are always read now.
func (st settler) before(ctx context.Context) (Snapshot, error) {
	if pkgs, db, ok := st.Listings.LookupListing(); ok {
		return Snapshot{Packages: pkgs, Units: fingerprintUnits(st.UnitDirs), Database: db, Listed: ListedMemo}, nil
	}
	return TakeSnapshot(ctx, st.Runner, st.UnitDirs)
}

// after is TakeSnapshot once DNF has ended, remembered for the next transaction when the
// database files allow it (db is where the packages were last read from).
func (st settler) after(ctx context.Context, db Database) (Snapshot, error) {
	st.Listings.settleBeforeListing(db)
	listed := time.Now()
	s, err := TakeSnapshot(ctx, st.Runner, st.UnitDirs)
	if err != nil {
		return s, err
	}
	// Only a shortcut for the next transaction: when it cannot be remembered, that one lists.
	_ = st.Listings.RecordListing(s.Packages, s.Database, listed)
	return s, nil
}

// parseAll reads allPackagesArgv's answer.
func parseAll(out string) (map[string][]string, error) {
	pkgs := map[string][]string{}
	for _, line := range strings.Split(out, "\n") {
		if line == "" {
			continue
		}
		name, evra, ok := strings.Cut(line, "\t")
		if !ok || name == "" || evra == "" || strings.Contains(evra, "\t") {
			return nil, fmt.Errorf("list installed packages: malformed line %q", line)
		}
		pkgs[name] = append(pkgs[name], name+"-"+evra)
	}
	for _, l := range pkgs {
		sort.Strings(l)
	}
	return pkgs, nil
}

// fingerprintUnits names each entry of the unit directories (systemd's, when dirs is nil)
// by what any write or
// replacement changes (inode, size, mode, mtime, link target). A file DNF replaces with
// the same content still counts as changed: a spare daemon-reload is harmless, a missed
// one is not. Unreadable directories fingerprint as themselves with the error.
func fingerprintUnits(dirs []string) map[string]string {
	if dirs == nil {
		dirs = unitDirs
	}
	fp := map[string]string{}
	var walk func(dir string, depth int)
	walk = func(dir string, depth int) {
		entries, err := os.ReadDir(dir)
		if err != nil {
			if !os.IsNotExist(err) {
				fp[dir] = "unreadable: " + err.Error()
			}
			return
		}
		for _, e := range entries {
			p := filepath.Join(dir, e.Name())
			fi, err := os.Lstat(p)
			if err != nil {
				continue // gone meanwhile
			}
			id := fmt.Sprintf("%o %d %d", fi.Mode(), fi.Size(), fi.ModTime().UnixNano())
			if st, ok := fi.Sys().(*syscall.Stat_t); ok {
				id += fmt.Sprintf(" %d:%d", st.Dev, st.Ino)
			}
			if fi.Mode()&os.ModeSymlink != 0 {
				target, _ := os.Readlink(p)
				id += " -> " + target
			}
			fp[p] = id
			if fi.IsDir() && depth == 0 {
				walk(p, 1) // foo.service.d/, multi-user.target.wants/
			}
		}
	}
	for _, d := range dirs {
		walk(d, 0)
	}
	return fp
}

// movesBetween lists every package whose builds differ, by name.
func movesBetween(before, after Snapshot, requested []string) []Move {
	names := map[string]bool{}
	for n := range before.Packages {
		names[n] = true
	}
	for n := range after.Packages {
		names[n] = true
	}
	var moves []Move
	for n := range names {
		b, a := before.Packages[n], after.Packages[n]
		if slices.Equal(b, a) {
			continue
		}
		moves = append(moves, Move{Name: n, Before: nonNil(b), After: nonNil(a), Requested: slices.Contains(requested, n)})
	}
	sort.Slice(moves, func(i, j int) bool { return moves[i].Name < moves[j].Name })
	return moves
}

// unitsDiffer reports whether any entry of the unit directories was added, replaced or
// removed.
func unitsDiffer(a, b map[string]string) bool {
	if len(a) != len(b) {
		return true
	}
	for p, id := range a {
		if b[p] != id {
			return true
		}
	}
	return false
}

// added are the builds a transaction put on the host.
func added(moves []Move) []string {
	var out []string
	for _, m := range moves {
		for _, n := range m.After {
			if !slices.Contains(m.Before, n) {
				out = append(out, n)
			}
		}
	}
	return out
}

// filesPlaced is the moment by which the files of the builds were all in place, in
// systemd's clock: the newest inode change among their regular files and symlinks (rpm
// creates each file when it installs it), carried from the wall clock to the monotonic one.
// A unit that became active after it runs with the files. Directories are left out: a
// later package adding to a shared directory would move them. A build without files gives
// the zero stamp.
func filesPlaced(ctx context.Context, r runner.Runner, nevras []string) (stamp.Stamp, error) {
	if len(nevras) == 0 {
		return stamp.Stamp{}, nil
	}
	res, err := r.Run(ctx, append([]string{"rpm", "-q", "--qf", "[%{FILENAMES}\n]", "--"}, nevras...)...)
	if err != nil {
		return stamp.Stamp{}, fmt.Errorf("list files of %s: %w", strings.Join(nevras, ", "), err)
	}
	if res.ExitCode != 0 {
		return stamp.Stamp{}, fmt.Errorf("list files of %s: rpm exited %d: %s", strings.Join(nevras, ", "), res.ExitCode, res.Output())
	}
	var newest time.Time
	for _, p := range strings.Split(res.Stdout, "\n") {
		if !strings.HasPrefix(p, "/") {
			continue
		}
		fi, err := os.Lstat(p)
		if err != nil || fi.IsDir() {
			continue // %ghost files need not exist
		}
		st, ok := fi.Sys().(*syscall.Stat_t)
		if !ok {
			continue
		}
		if c := time.Unix(st.Ctim.Unix()); c.After(newest) {
			newest = c
		}
	}
	if newest.IsZero() {
		return stamp.Stamp{}, nil
	}
	return stamp.At(newest)
}
