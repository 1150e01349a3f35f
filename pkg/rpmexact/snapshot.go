package rpmexact

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/richt/services/pkg/runner"
	"github.com/richt/services/pkg/stamp"
	"golang.org/x/sys/unix"
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
	// The unit directories are read while rpm lists: neither waits for the other, and
	// both are taken within one window that no transaction overlaps.
	units := make(chan map[string]string, 1)
	go func() { units <- fingerprintUnits(dirs) }()
	res, err := r.Run(ctx, allPackagesArgv...)
	fp := <-units
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
	return Snapshot{Packages: pkgs, Units: fp, Database: db, Listed: ListedRPM}, nil
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

// after is TakeSnapshot once DNF has ended (db is where the packages were last read from).
// remember keeps it for the next transaction when the database files allow it; it runs
// in the background, and the caller waits for it (<-remembered) before it ends.
func (st settler) after(ctx context.Context, db Database) (_ Snapshot, remembered <-chan struct{}, _ error) {
	done := make(chan struct{})
	st.Listings.settleBeforeListing(db)
	listed := time.Now()
	s, err := TakeSnapshot(ctx, st.Runner, st.UnitDirs)
	if err != nil {
		close(done)
		return s, done, err
	}
	// Only a shortcut for the next transaction: when it cannot be remembered, that one
	// lists. Written while the caller reads what the transaction placed.
	go func() {
		defer close(done)
		_ = st.Listings.RecordListing(s.Packages, s.Database, listed)
	}()
	return s, done, nil
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

// unitsPlaced is when every entry of the unit directories that a transaction added or
// replaced was in place, in systemd's clock: the newest inode change time among them, one
// coarse clock tick on (as filesPlaced). Zero when that cannot be told: an entry was
// removed (when it went leaves no trace), a directory could not be read, or an entry
// cannot be examined now. A manager reload that began after it has loaded the
// transaction's unit files, including what a scriptlet wrote before that reload.
func unitsPlaced(before, after map[string]string, lstat func(string) (os.FileInfo, error)) stamp.Stamp {
	var newest time.Time
	for p, id := range before {
		if _, ok := after[p]; !ok || strings.HasPrefix(id, "unreadable: ") {
			return stamp.Stamp{}
		}
	}
	for p, id := range after {
		if before[p] == id {
			continue
		}
		if strings.HasPrefix(id, "unreadable: ") {
			return stamp.Stamp{}
		}
		fi, err := lstat(p)
		if err != nil {
			return stamp.Stamp{}
		}
		st, ok := fi.Sys().(*syscall.Stat_t)
		if !ok {
			return stamp.Stamp{}
		}
		if c := time.Unix(st.Ctim.Unix()); c.After(newest) {
			newest = c
		}
	}
	if newest.IsZero() {
		return stamp.Stamp{}
	}
	tick, ok := coarseTick()
	if !ok {
		tick = 10 * time.Millisecond
	}
	s, err := stamp.At(newest.Add(tick))
	if err != nil {
		return stamp.Stamp{}
	}
	return s
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

// filesQuery lists, for every file of the queried builds, rpm's flags for it, the
// modification time rpm gives it when it writes it, and its path.
const filesQuery = "[%{FILEFLAGS}\t%{FILEMTIMES}\t%{FILENAMES}\n]"

// rpmfileGhost is RPMFILE_GHOST among a file's flags: rpm owns the path but never writes it.
const rpmfileGhost = 1 << 6

// filesPlaced is the moment by which the files of the builds were all in place, in
// systemd's clock: the newest inode change among the files rpm wrote, plus one tick of the
// clock file times come from, carried from the wall clock to the monotonic one. A unit
// that became active after it runs with the files (reaction.RestartServed).
//
// Only what rpm wrote counts, so that nothing the restarted service does moves the moment
// past its own start (which would repeat the restart a scriptlet already did): %ghost
// files (rpm never writes them; the service often does: logs, PID files), and files whose
// modification time is no longer the one rpm set (nanoseconds zero, seconds from the
// header), which someone wrote after rpm placed them. Directories are left out too: a later
// package adding to a shared directory would move them. A build without such files gives
// the zero stamp, and so a restart.
//
// The tick settles the one ambiguous window one way: file times come from the kernel's
// coarse clock, up to one tick behind, so a start within a tick after the last write could
// have come before it. Such a start does not count as having seen the files, and the
// restart is carried out again rather than possibly lost.
func filesPlaced(ctx context.Context, r runner.Runner, nevras []string) (stamp.Stamp, error) {
	if len(nevras) == 0 {
		return stamp.Stamp{}, nil
	}
	res, err := r.Run(ctx, append([]string{"rpm", "-q", "--qf", filesQuery, "--"}, nevras...)...)
	if err != nil {
		return stamp.Stamp{}, fmt.Errorf("list files of %s: %w", strings.Join(nevras, ", "), err)
	}
	if res.ExitCode != 0 {
		return stamp.Stamp{}, fmt.Errorf("list files of %s: rpm exited %d: %s", strings.Join(nevras, ", "), res.ExitCode, res.Output())
	}
	newest, err := newestPlaced(res.Stdout, os.Lstat)
	if err != nil || newest.IsZero() {
		return stamp.Stamp{}, err
	}
	tick, ok := coarseTick()
	if !ok {
		tick = 10 * time.Millisecond // the longest tick Linux configures (HZ=100)
	}
	return stamp.At(newest.Add(tick))
}

// newestPlaced is the newest inode change time among the files of a filesQuery listing
// that rpm wrote and nobody wrote since (see filesPlaced); zero when there is none.
func newestPlaced(listing string, lstat func(string) (os.FileInfo, error)) (time.Time, error) {
	var newest time.Time
	for _, line := range strings.Split(listing, "\n") {
		if line == "" {
			continue
		}
		fields := strings.SplitN(line, "\t", 3)
		if len(fields) != 3 || !strings.HasPrefix(fields[2], "/") {
			return time.Time{}, fmt.Errorf("rpm listed %q, expected FLAGS<TAB>MTIME<TAB>PATH", line)
		}
		flags, err1 := strconv.ParseUint(fields[0], 10, 32)
		mtime, err2 := strconv.ParseInt(fields[1], 10, 64)
		if err1 != nil || err2 != nil {
			return time.Time{}, fmt.Errorf("rpm listed %q, expected numeric flags and modification time", line)
		}
		if flags&rpmfileGhost != 0 {
			continue
		}
		fi, err := lstat(fields[2])
		if err != nil || fi.IsDir() {
			continue // removed since, or replaced by a directory: not what rpm placed
		}
		st, ok := fi.Sys().(*syscall.Stat_t)
		if !ok || st.Mtim.Sec != mtime || st.Mtim.Nsec != 0 {
			continue // written after rpm placed it
		}
		if c := time.Unix(st.Ctim.Unix()); c.After(newest) {
			newest = c
		}
	}
	return newest, nil
}

// coarseTick is one tick of the kernel's coarse real-time clock, which file times come
// from (1-10 ms); ok is false where it cannot be read.
func coarseTick() (tick time.Duration, ok bool) {
	var ts unix.Timespec
	if err := unix.ClockGetres(unix.CLOCK_REALTIME_COARSE, &ts); err != nil || ts.Nano() <= 0 {
		return 0, false
	}
	return time.Duration(ts.Nano()), true
}
