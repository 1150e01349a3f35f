package rpmexact

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/richt/services/pkg/atomicfile"
	"github.com/richt/services/pkg/statedir"
)

// DefaultQueryMemoDir is where remembered rpm answers live on a target. It is a cache:
// removing it at any time only costs the next run one rpm query.
const DefaultQueryMemoDir = "/var/cache/richt/rpm-query"

// Settle is how old every file of a key must be, relative to the start of the query, before
// the answer is remembered, where the files' timestamps are whole seconds (as on a file
// system without room for nanoseconds): a write in the same second as an earlier one could
// leave the ctime unchanged, and once a file is older than this any later write gives it a
// different ctime. Where every timestamp of the key carries nanoseconds, the clock that
// stamps them advances every kernel tick and the rule is two ticks (settleFor).
const Settle = 2 * time.Second

// settleFor is how old the files of k must be: two ticks of the clock file timestamps come
// from (the kernel's coarse clock, 1-10 ms) where every timestamp of k carries nanoseconds,
// Settle otherwise (and when the tick cannot be read). A file written after the query began
// is stamped at most one tick before that moment, so it is stamped later than any file that
// was older than that, and its identity differs.
func settleFor(k memoKey) time.Duration {
	if !k.fine {
		return Settle
	}
	if tick, ok := coarseTick(); ok && tick <= Settle/2 {
		return 2 * tick
	}
	return Settle
}

// settled says why an answer read from the files of k by a query that began at queried
// cannot be trusted later, or nil when it can.
func settled(k memoKey, queried time.Time) error {
	need := settleFor(k)
	if !k.newest.Before(queried.Add(-need)) {
		return fmt.Errorf("a file of the key changed at %s, less than %s before the query", k.newest.Format(time.RFC3339Nano), need)
	}
	return nil
}

// QueryMemo remembers the rpm query answer for a package name while every file that answer
// depends on is unchanged: the RPM database (sqlite backend: the database file and its
// write-ahead log; the -shm index is derived from the log and written by every reader, so it
// is left out), the rpm executable, and rpm's configuration that could point it at another
// database. Each file is named by device, inode, size, mode, mtime and ctime; any write or
// replacement changes the ctime, which user space cannot set back (the log is the
// exception, see key). A converged run then needs no rpm process at all (about 15 ms of
// the 25 ms a converged run otherwise costs).
//
// Only answers from the sqlite backend (rpm 4.16 and later, as on EL9 and EL10) are
// remembered: the files of the older bdb and ndb backends are not modelled here.
type QueryMemo struct {
	// Dir holds one record per package name.
	Dir string
	// Config lists rpm's configuration files and directories (a directory counts with
	// each entry in it) and patterns of rpm's macro path (addPattern).
	Config []string
	// ListingDir holds the listing of every installed package a transaction read after
	// DNF, for the next transaction (listingmemo.go); empty: no listing is remembered.
	ListingDir string
}

// DefaultQueryMemo is the memo of this host, for the effective user's configuration: every
// file rpm 4.16 to 4.20 reads its macros and rpmrc from (rpm --showrc, "Macro path"), in
// the configuration directory RPM_CONFIGDIR names as rpm does. Every target's platform
// macros and every vendor's directory are in the key, not only those of this host's
// %{_target} and rpm's build vendor: a change to another one costs one rpm query.
func DefaultQueryMemo() *QueryMemo {
	confdir := os.Getenv("RPM_CONFIGDIR")
	if !filepath.IsAbs(confdir) {
		confdir = "/usr/lib/rpm"
	}
	config := []string{"/etc/rpm", "/etc/rpm/*/macros", "/etc/rpmrc"}
	for _, p := range []string{"macros", "rpmrc", "macros.d", "platform/*/macros", "fileattrs", "*/macros", "*/rpmrc"} {
		config = append(config, filepath.Join(confdir, p))
	}
	if home, err := os.UserHomeDir(); err == nil && filepath.IsAbs(home) {
		config = append(config, filepath.Join(home, ".rpmmacros"), filepath.Join(home, ".rpmrc"), filepath.Join(home, ".config/rpm"))
	}
	return &QueryMemo{Dir: DefaultQueryMemoDir, Config: config, ListingDir: DefaultListingDir}
}

// queryRecord is one remembered answer.
type queryRecord struct {
	// Version is queryVersion: a record another format wrote is not an answer.
	Version     int      `json:"version"`
	Database    Database `json:"database"`
	Key         string   `json:"key"`
	NEVRAs      []string `json:"nevras"`
	InstallOnly bool     `json:"installonly,omitempty"`
}

// queryVersion is the record format: 2 remembers whether the builds are installonly.
const queryVersion = 2

// Lookup returns the remembered answer for name when every file in its key is unchanged.
// Anything else (no record, a record not owned by root or this user, a changed file, an
// unreadable record) means "ask rpm".
func (m *QueryMemo) Lookup(name string) (Installed, bool) {
	data, ok := m.read(name)
	if !ok {
		return Installed{}, false
	}
	var rec queryRecord
	if err := json.Unmarshal(data, &rec); err != nil || rec.Key == "" || rec.Version != queryVersion {
		return Installed{}, false
	}
	key, err := m.key(rec.Database)
	if err != nil || key.text != rec.Key {
		return Installed{}, false
	}
	return Installed{NEVRAs: rec.NEVRAs, InstallOnly: rec.InstallOnly}, true
}

// Record remembers an answer that rpm gave from db in a query started at queried. It does
// nothing (and says why) when the backend is not sqlite or when a file of the key changed
// too shortly before the query (settled): its identity could then still match a later
// version.
func (m *QueryMemo) Record(name string, inst Installed, db Database, queried time.Time) error {
	key, err := m.trustedKey(db, queried)
	if err != nil {
		return err
	}
	data, err := json.Marshal(queryRecord{Version: queryVersion, Database: db, Key: key.text, NEVRAs: inst.NEVRAs, InstallOnly: inst.InstallOnly})
	if err != nil {
		return fmt.Errorf("encode rpm query record: %w", err)
	}
	if err := os.MkdirAll(m.Dir, 0o755); err != nil {
		return fmt.Errorf("create %s: %w", m.Dir, err)
	}
	return atomicfile.Write(m.path(name), data, atomicfile.Options{Mode: 0o644, UID: -1, GID: -1})
}

func (m *QueryMemo) path(name string) string { return filepath.Join(m.Dir, name+".json") }

// read returns the record of name if root or this user owns it.
func (m *QueryMemo) read(name string) ([]byte, bool) {
	// A record in a directory someone else can write could have been swapped with
	// another name's: only records and a directory nobody else controls are answers.
	data, err := statedir.ReadRecord(m.Dir, filepath.Base(m.path(name)))
	return data, err == nil
}

// trustedKey is the key of an answer read from db by a query that began at queried, or why
// that answer must not be remembered.
func (m *QueryMemo) trustedKey(db Database, queried time.Time) (memoKey, error) {
	if db.Backend != "sqlite" || !filepath.IsAbs(db.Path) {
		return memoKey{}, fmt.Errorf("not remembered: rpm database %q with backend %q", db.Path, db.Backend)
	}
	key, err := m.key(db)
	if err != nil {
		return memoKey{}, fmt.Errorf("not remembered: %w", err)
	}
	if err := settled(key, queried); err != nil {
		return memoKey{}, fmt.Errorf("not remembered: %w", err)
	}
	return key, nil
}

// memoKey names every file an answer from the RPM database depends on.
type memoKey struct {
	text string
	// newest is the latest of the timestamps that a write of one of the files moves.
	newest time.Time
	// fine: every such timestamp carries nanoseconds.
	fine bool
}

// key names every file the answer from db depends on.
func (m *QueryMemo) key(db Database) (memoKey, error) {
	var b strings.Builder
	k := memoKey{fine: true}
	add := func(path, id string, stamp time.Time) {
		fmt.Fprintf(&b, "%s\t%s\n", path, id)
		if stamp.IsZero() { // absent: its appearance changes the id
			return
		}
		if stamp.After(k.newest) {
			k.newest = stamp
		}
		k.fine = k.fine && stamp.Nanosecond() != 0
	}
	id, ctime, err := executableIdentity("rpm")
	if err != nil {
		return memoKey{}, err
	}
	add("rpm", id, ctime)
	fmt.Fprintf(&b, "env RPM_CONFIGDIR=%q\n", os.Getenv("RPM_CONFIGDIR"))
	// SQLite running as root hands the write-ahead log to the database's owner with
	// fchown every time it opens it, readers included, which moves its ctime; so the log
	// is named by what a write changes (size, mtime, inode), and its mtime must be settled.
	wal, err := fileIdentity(filepath.Join(db.Path, "rpmdb.sqlite-wal"))
	if err != nil {
		return memoKey{}, err
	}
	add(filepath.Join(db.Path, "rpmdb.sqlite-wal"), wal.content, wal.mtime)
	for _, p := range append([]string{filepath.Join(db.Path, "rpmdb.sqlite")}, m.Config...) {
		if err := addConfig(p, add); err != nil {
			return memoKey{}, err
		}
	}
	k.text = b.String()
	return k, nil
}

// addConfig adds one entry of QueryMemo.Config to a key: a file, a directory with each
// entry in it, or a pattern (addPattern).
func addConfig(p string, add func(path, id string, stamp time.Time)) error {
	if strings.ContainsAny(p, "*?[") {
		return addPattern(filepath.Clean(p), add)
	}
	f, err := fileIdentity(p)
	if err != nil {
		return err
	}
	add(p, f.id, f.ctime)
	if !f.dir {
		return nil
	}
	entries, err := os.ReadDir(p) // sorted by name
	if err != nil {
		return fmt.Errorf("list %s: %w", p, err)
	}
	for _, e := range entries {
		n := filepath.Join(p, e.Name())
		f, err := fileIdentity(n)
		if err != nil {
			return err
		}
		add(n, f.id, f.ctime)
	}
	return nil
}

// addPattern adds what a pattern of rpm's macro path (/usr/lib/rpm/platform/*/macros,
// /etc/rpm/*/macros) names: every file it matches and every directory listed to match it,
// so that a match appearing or going changes a listed directory (its entries) and one
// edited changes itself. A part without a wildcard is added whether it exists or not
// ("absent"): its appearance changes the key.
func addPattern(pattern string, add func(path, id string, stamp time.Time)) error {
	parts := strings.Split(strings.TrimPrefix(pattern, "/"), "/")
	dir := "/"
	for len(parts) > 0 && !strings.ContainsAny(parts[0], "*?[") {
		dir = filepath.Join(dir, parts[0])
		parts = parts[1:]
	}
	f, err := fileIdentity(dir)
	if err != nil {
		return err
	}
	add(dir, f.id, f.ctime)
	if !f.dir || len(parts) == 0 {
		return nil
	}
	return addMatches(dir, parts, add)
}

// addMatches adds what parts match below dir, a directory already in the key.
func addMatches(dir string, parts []string, add func(path, id string, stamp time.Time)) error {
	part, rest := parts[0], parts[1:]
	var names []string
	isDir := map[string]bool{}
	if strings.ContainsAny(part, "*?[") {
		entries, err := os.ReadDir(dir) // sorted by name
		if err != nil {
			return fmt.Errorf("list %s: %w", dir, err)
		}
		for _, e := range entries {
			ok, err := filepath.Match(part, e.Name())
			if err != nil {
				return fmt.Errorf("rpm configuration pattern %s: %w", filepath.Join(dir, part), err)
			}
			// Only a directory can hold what the rest names: regular files are skipped
			// unread (a configuration directory holds many scripts).
			if ok && (len(rest) == 0 || !e.Type().IsRegular()) {
				names = append(names, e.Name())
				isDir[e.Name()] = e.IsDir()
			}
		}
	} else {
		names = []string{part}
	}
	for _, n := range names {
		p := filepath.Join(dir, n)
		// A file that exists as the last part is enough on its own (an edit, a replacement
		// or its removal changes its identity): sixty platform directories then cost one
		// stat each. Where it is absent, its directory stands for its appearance.
		if isDir[n] && len(rest) == 1 && !strings.ContainsAny(rest[0], "*?[") {
			leaf := filepath.Join(p, rest[0])
			if f, err := fileIdentity(leaf); err == nil && f.id != "absent" {
				add(leaf, f.id, f.ctime)
				continue
			}
		}
		f, err := fileIdentity(p)
		if err != nil {
			return err
		}
		if len(rest) > 0 && !f.dir {
			continue // only a directory can hold what the rest names
		}
		add(p, f.id, f.ctime)
		if len(rest) > 0 {
			if err := addMatches(p, rest, add); err != nil {
				return err
			}
		}
	}
	return nil
}
