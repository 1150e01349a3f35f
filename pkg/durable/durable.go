// Package durable keeps the facts that must survive a failed or interrupted run on the
// target itself, under /var/lib/richt: that systemd's manager needs a daemon-reload, and
// which reactions are still due for which unit.
package durable

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/richt/services/pkg/atomicfile"
	"github.com/richt/services/pkg/lock"
	"github.com/richt/services/pkg/stamp"
	"github.com/richt/services/pkg/statedir"
)

// DefaultDir is where the store lives on a target.
const DefaultDir = "/var/lib/richt"

const syncDueFile = "manager-sync-due"

// Store is the durable store rooted at Dir; LockDir holds the lock that serializes changes
// to its host-wide records (package lock's default when empty).
type Store struct {
	Dir     string
	LockDir string
}

// Default is the store on this host.
func Default() *Store { return &Store{Dir: DefaultDir, LockDir: lock.Dir()} }

func (s *Store) lockDir() string {
	if s.LockDir != "" {
		return s.LockDir
	}
	return lock.Dir()
}

// SyncEntry is one reason a daemon-reload is due. Each writer adds its own entry and a
// reader clears only the entries it saw before it reloaded, so a change recorded while
// the manager was being reloaded is never cleared with the others.
type SyncEntry struct {
	ID     string    `json:"id"`
	Reason string    `json:"reason"`
	Since  time.Time `json:"since"`
	// Placed, when the writer can tell, is when every unit file the change added or
	// replaced was in place and none was removed (systemd's clock): a manager reload that
	// began after it (a package scriptlet's daemon-reload) has loaded the change, so the
	// entry asks for no second one. nil: only a reload after the entry serves it.
	Placed *stamp.Stamp `json:"placed,omitempty"`
}

// Sync is what a reader saw of the manager-sync record.
type Sync struct {
	Entries []SyncEntry
}

// Due reports whether a daemon-reload is due.
func (s Sync) Due() bool { return len(s.Entries) > 0 }

// LoadedBy splits the record by a manager load that began at loaded (systemd's clock):
// the entries whose change it has loaded (Placed before it, on its boot), and the rest,
// which still ask for a reload.
func (s Sync) LoadedBy(loaded stamp.Stamp) (served, due Sync) {
	for _, e := range s.Entries {
		if e.Placed != nil && !loaded.IsZero() && e.Placed.BootID == loaded.BootID && e.Placed.Mono < loaded.Mono {
			served.Entries = append(served.Entries, e)
		} else {
			due.Entries = append(due.Entries, e)
		}
	}
	return served, due
}

// Reasons are the entries' reasons, oldest first.
func (s Sync) Reasons() []string {
	out := make([]string, 0, len(s.Entries))
	for _, e := range s.Entries {
		out = append(out, e.Reason)
	}
	return out
}

type syncRecord struct {
	Entries []SyncEntry `json:"entries"`
}

// corruptEntry stands for a record that could not be read: a reload cannot be ruled out,
// so it is due until a reader that saw it has reloaded.
const corruptEntry = "unreadable-record"

// readSync reads the record. A record that cannot be read or parsed is not "nothing due":
// it reads as one entry that asks for a reload and names the file.
func (s *Store) readSync() (syncRecord, error) {
	if err := statedir.Check(s.Dir); err != nil {
		return syncRecord{}, err
	}
	path := filepath.Join(s.Dir, syncDueFile)
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return syncRecord{}, nil
	}
	var rec syncRecord
	if err == nil {
		err = json.Unmarshal(data, &rec)
	}
	if err != nil {
		return syncRecord{Entries: []SyncEntry{{ID: corruptEntry, Since: time.Now().UTC(),
			Reason: fmt.Sprintf("the record %s could not be read (%v), so a daemon-reload cannot be ruled out", path, err)}}}, nil
	}
	return rec, nil
}

// withSync runs f on the record under the host-wide records lock and writes back what f
// returns (removing the file when no entry is left).
func (s *Store) withSync(ctx context.Context, f func(syncRecord) syncRecord) error {
	l, err := lock.Acquire(ctx, s.lockDir(), lock.Records)
	if err != nil {
		return err
	}
	defer l.Release()
	rec, err := s.readSync()
	if err != nil {
		return err
	}
	rec = f(rec)
	path := filepath.Join(s.Dir, syncDueFile)
	if fi, err := os.Lstat(path); err == nil && !fi.Mode().IsRegular() {
		return fmt.Errorf("%s is not a regular file (%s) and cannot be replaced; remove it", path, fi.Mode().Type())
	}
	if len(rec.Entries) == 0 {
		if err := atomicfile.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
		return nil
	}
	data, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	return s.write(syncDueFile, data)
}

// StepRecordReload is the name a reported plan gives the step that records a manager
// reload as due (MarkManagerSyncDue) before a unit file moves. unit_override, rpm_exact and
// the service's configs write the same record, so they report it under this one name.
const StepRecordReload = "record-reload-due"

// MarkManagerSyncDue records that systemd's manager must be reloaded before the next
// decision about any unit, and returns the entry's id. A daemon-reload is host-wide, so
// the record is one per host, with one entry per writer.
func (s *Store) MarkManagerSyncDue(ctx context.Context, reason string) (string, error) {
	return s.MarkManagerSyncPlaced(ctx, reason, stamp.Stamp{})
}

// MarkManagerSyncPlaced is MarkManagerSyncDue for a change whose unit files were all in
// place at placed (SyncEntry.Placed; a zero stamp: not known).
func (s *Store) MarkManagerSyncPlaced(ctx context.Context, reason string, placed stamp.Stamp) (string, error) {
	now := time.Now().UTC()
	id := fmt.Sprintf("%d-%d", now.UnixNano(), os.Getpid())
	entry := SyncEntry{ID: id, Reason: oneLine(reason), Since: now}
	if !placed.IsZero() {
		entry.Placed = &placed
	}
	err := s.withSync(ctx, func(r syncRecord) syncRecord {
		r.Entries = append(r.Entries, entry)
		return r
	})
	if err != nil {
		return "", fmt.Errorf("record manager sync due: %w", err)
	}
	return id, nil
}

// ManagerSync reads the record; clear what it returned with ClearManagerSync once the
// manager has been reloaded. Reading takes no lock: records are replaced atomically.
func (s *Store) ManagerSync() (Sync, error) {
	rec, err := s.readSync()
	if err != nil {
		return Sync{}, fmt.Errorf("read manager sync record: %w", err)
	}
	return Sync{Entries: rec.Entries}, nil
}

// ClearManagerSync removes the entries a reader saw before it reloaded the manager;
// entries added since stay due.
func (s *Store) ClearManagerSync(ctx context.Context, seen Sync) error {
	if !seen.Due() {
		return nil
	}
	ids := map[string]bool{}
	for _, e := range seen.Entries {
		ids[e.ID] = true
	}
	if err := s.withSync(ctx, func(r syncRecord) syncRecord { return syncRecord{Entries: keep(r.Entries, ids)} }); err != nil {
		return fmt.Errorf("clear manager sync record: %w", err)
	}
	return nil
}

// RemoveManagerSyncEntry withdraws one entry its writer no longer needs (rpm_exact's entry
// written ahead of a transaction that turned out not to touch unit files).
func (s *Store) RemoveManagerSyncEntry(ctx context.Context, id string) error {
	return s.ClearManagerSync(ctx, Sync{Entries: []SyncEntry{{ID: id}}})
}

func keep(entries []SyncEntry, drop map[string]bool) []SyncEntry {
	var out []SyncEntry
	for _, e := range entries {
		if !drop[e.ID] {
			out = append(out, e)
		}
	}
	return out
}

// write replaces one record of the store atomically (0644), creating its directory:
// a reader sees the old record or the new one, never a part.
func (s *Store) write(rel string, data []byte) error {
	path := filepath.Join(s.Dir, rel)
	if err := statedir.Ensure(s.Dir, 0o755); err != nil {
		return err
	}
	if dir := filepath.Dir(path); dir != s.Dir {
		if err := statedir.Ensure(dir, 0o755); err != nil {
			return err
		}
	}
	// Every record is written under the lock that guards it (records, the unit's, the
	// transaction lock), so a temporary file of this record is one a killed run left.
	if _, err := atomicfile.RemoveStale(path); err != nil {
		return err
	}
	return atomicfile.Write(path, data, atomicfile.Options{Mode: 0o644, UID: -1, GID: -1})
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

const managerCheckFile = "manager-check.json"

// managerCheck is the last accepted package-manager check: which executable it was (an
// identity such as path, size, mtime, ctime and inode) and the version it reported.
type managerCheck struct {
	Manager  string `json:"manager"`
	Identity string `json:"identity"`
	Version  string `json:"version"`
}

// ManagerChecked returns the version recorded for manager when its executable still has
// the given identity. Any mismatch or unreadable record means "check again".
func (s *Store) ManagerChecked(manager, identity string) (string, bool) {
	for _, r := range s.managerChecks() {
		if r.Manager == manager && r.Identity == identity && identity != "" {
			return r.Version, true
		}
	}
	return "", false
}

// RecordManagerCheck remembers an accepted check (one record per manager name).
func (s *Store) RecordManagerCheck(manager, identity, version string) error {
	out := []managerCheck{{Manager: manager, Identity: identity, Version: version}}
	for _, r := range s.managerChecks() {
		if r.Manager != manager {
			out = append(out, r)
		}
	}
	data, err := json.Marshal(out)
	if err != nil {
		return fmt.Errorf("encode manager check: %w", err)
	}
	if err := s.write(managerCheckFile, data); err != nil {
		return fmt.Errorf("record manager check: %w", err)
	}
	return nil
}

// managerChecks reads the recorded checks; a missing or corrupt record reads as none (the
// manager is then checked again and the record replaced).
func (s *Store) managerChecks() []managerCheck {
	var rec []managerCheck
	// Only a record nobody else can have written: a planted one would vouch for a
	// package manager that was never checked.
	if data, err := statedir.ReadRecord(s.Dir, managerCheckFile); err == nil {
		if json.Unmarshal(data, &rec) != nil {
			return nil
		}
	}
	return rec
}

// Reloaded is a unit's last verified reload: when its job was sent, in systemd's clock,
// and what it served. Every file placed before At was in place when the daemon was told
// to reload, so a reload owed for such a file was served by it; a run that waited for
// another run of the same unit finds its owed reload served so (lifecycle.Prepare).
type Reloaded struct {
	// At is systemd's clock just before the reload job was sent.
	At stamp.Stamp `json:"at"`
	// Invocation is the unit's InvocationID the reload kept.
	Invocation string `json:"invocation,omitempty"`
	// Triggers name what the reload was for, as the run's result does.
	Triggers []string `json:"triggers,omitempty"`
	// Time is the wall clock when the reload was proven, for people.
	Time time.Time `json:"time"`
}

func reloadedRel(unit string) string { return filepath.Join("reloaded", unit+".json") }

// SetReloaded records the unit's last verified reload, written once its proof passed.
// unit must be a validated unit name.
func (s *Store) SetReloaded(unit string, r Reloaded) error {
	data, err := json.Marshal(r)
	if err != nil {
		return fmt.Errorf("encode reload record: %w", err)
	}
	if err := s.write(reloadedRel(unit), data); err != nil {
		return fmt.Errorf("record the verified reload of %s: %w", unit, err)
	}
	return nil
}

// LastReload returns the unit's last verified reload, or nil. A record that is missing,
// cannot be read or parsed, or that someone else could have written reads as none: a
// record can only make an owed reload look served, so without a trusted one the reload
// is carried out (once more, at worst).
func (s *Store) LastReload(unit string) *Reloaded {
	dir := filepath.Join(s.Dir, "reloaded")
	if statedir.Check(s.Dir) != nil {
		return nil
	}
	data, err := statedir.ReadRecord(dir, unit+".json")
	if err != nil {
		return nil
	}
	var r Reloaded
	if json.Unmarshal(data, &r) != nil || r.At.IsZero() {
		return nil
	}
	return &r
}
