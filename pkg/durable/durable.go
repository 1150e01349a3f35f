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
	"github.com/richt/services/pkg/reaction"
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
}

// Sync is what a reader saw of the manager-sync record.
type Sync struct {
	Entries []SyncEntry
}

// Due reports whether a daemon-reload is due.
func (s Sync) Due() bool { return len(s.Entries) > 0 }

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

// MarkManagerSyncDue records that systemd's manager must be reloaded before the next
// decision about any unit, and returns the entry's id. A daemon-reload is host-wide, so
// the record is one per host, with one entry per writer.
func (s *Store) MarkManagerSyncDue(ctx context.Context, reason string) (string, error) {
	now := time.Now().UTC()
	id := fmt.Sprintf("%d-%d", now.UnixNano(), os.Getpid())
	err := s.withSync(ctx, func(r syncRecord) syncRecord {
		r.Entries = append(r.Entries, SyncEntry{ID: id, Reason: oneLine(reason), Since: now})
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

// Pending is a reaction that was due for a unit and has not been verified yet.
type Pending struct {
	Reaction string    `json:"reaction"`
	Triggers []string  `json:"triggers,omitempty"`
	Since    time.Time `json:"since"`
	// At is in systemd's clock and never earlier than the last change the record covers:
	// a unit that became active after it has loaded everything the reaction is for. Owed
	// keeps the rule.
	At stamp.Stamp `json:"at"`
	// ReloadAt, on a restart record only, is when a change that owes a reload was made
	// after At (a drop-in written after a package transaction whose scriptlet may have
	// restarted the unit): an activation after At serves the restart, the reload only one
	// after ReloadAt. Without it, stamping the whole record again for the reload turned the
	// restart the scriptlet had served into a second one.
	ReloadAt *stamp.Stamp `json:"reload_at,omitempty"`
}

// Owed is the record of a reaction of kind owed to a unit whose record is earlier (nil:
// none): restart beats reload, due since earlier's Since or now, with triggers, stamped
// at; a reload owed on top of a restart keeps the restart's stamp and is stamped in
// ReloadAt.
//
// The stamping rule, for every writer: a record is written ahead of the change it stands
// for (a run killed before the change leaves a conservative record), and stamped again
// with Owed after each change it covers, before anything that could serve it (the next
// step, the job), so that an activation between the first stamp and a later change
// (a package scriptlet's restart before a drop-in is written) never counts as serving
// that change. A change that never happened is withdrawn by its writer instead.
func Owed(earlier *Pending, kind reaction.Kind, triggers []string, at stamp.Stamp) Pending {
	if earlier == nil {
		return Pending{Reaction: string(kind), Triggers: triggers, Since: time.Now().UTC(), At: at}
	}
	if reaction.Kind(earlier.Reaction) == reaction.Restart && kind == reaction.Reload {
		return Pending{Reaction: earlier.Reaction, Triggers: triggers, Since: earlier.Since, At: earlier.At, ReloadAt: &at}
	}
	return Pending{Reaction: string(reaction.Stronger(kind, reaction.Kind(earlier.Reaction))), Triggers: triggers, Since: earlier.Since, At: at}
}

// Activation is what a writer observed of a unit's latest activation, to tell which part
// of the unit's pending record that activation served (Pending.Unserved).
type Activation struct {
	Now       stamp.Stamp // systemd's clock when the unit was observed
	Running   bool
	EnterMono uint64 // the unit's ActiveEnterTimestampMonotonic
}

// Merge is the one rule for recording an obligation of kind on top of the record a unit
// has (earlier; nil: none): every writer of pending records (systemd_lifecycle, the
// service module) goes through it.
//
// seen is what the writer observed of the unit's latest activation. With it, the part of
// earlier that activation served is dropped first (a served record is done: SPEC 4, "do
// not do it twice"), so the new record is due since now and says only what is owed. nil
// means the writer has not observed the unit (the service module records before any
// step, without asking systemd): then earlier is kept whole, which loses nothing and
// serves nothing twice, because Owed keeps each part's stamp and the next observer's
// Unserved still tells what was served; only `since` and the kind reported at writing
// may say more than is owed.
func Merge(earlier *Pending, seen *Activation, kind reaction.Kind, triggers []string, at stamp.Stamp) Pending {
	if earlier != nil && seen != nil {
		earlier = earlier.Unserved(seen.Now, seen.Running, seen.EnterMono)
	}
	return Owed(earlier, kind, triggers, at)
}

// Unserved is what of the record the unit's latest activation, observed now, has not
// served: nil when all of it (a restart by a run that was killed after sending it, by a
// package scriptlet, by hand, that came after every change the record covers), a reload
// stamped ReloadAt when only the restart, and the record itself when nothing.
func (p Pending) Unserved(now stamp.Stamp, running bool, activeEnterMono uint64) *Pending {
	if !running || !p.At.ActiveSince(now, activeEnterMono) {
		return &p
	}
	if p.ReloadAt != nil && !p.ReloadAt.ActiveSince(now, activeEnterMono) {
		return &Pending{Reaction: string(reaction.Reload), Triggers: p.Triggers, Since: p.Since, At: *p.ReloadAt}
	}
	return nil
}

// ServedBy reports whether the unit's latest activation, observed now, served the whole
// record (Unserved is nil).
func (p Pending) ServedBy(now stamp.Stamp, running bool, activeEnterMono uint64) bool {
	return p.Unserved(now, running, activeEnterMono) == nil
}

func pendingRel(unit string) string { return filepath.Join("pending", unit+".json") }

func (s *Store) pendingPath(unit string) string { return filepath.Join(s.Dir, pendingRel(unit)) }

// SetPending records a reaction as due before it is attempted, so a failure, a timeout
// or a stopped play leaves it for the next run. unit must be a validated unit name.
func (s *Store) SetPending(unit string, p Pending) error {
	data, err := json.Marshal(p)
	if err != nil {
		return fmt.Errorf("encode pending reaction: %w", err)
	}
	if err := s.write(pendingRel(unit), data); err != nil {
		return fmt.Errorf("record pending %s of %s: %w", p.Reaction, unit, err)
	}
	return nil
}

// GetPending returns the pending reaction of unit, or nil.
//
// A record that cannot be read or holds no known reaction is an error naming the file,
// never "nothing due": which reaction was due cannot be known, and guessing would either
// lose a restart or turn a reload into a restart.
func (s *Store) GetPending(unit string) (*Pending, error) {
	for _, dir := range []string{s.Dir, filepath.Dir(s.pendingPath(unit))} {
		if err := statedir.Check(dir); err != nil {
			return nil, err
		}
	}
	path := s.pendingPath(unit)
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("the pending reaction record of %s, %s, cannot be read: %w; a restart or reload may be due: carry it out by hand (systemctl restart %s) and remove the file", unit, path, err, unit)
	}
	var p Pending
	err = json.Unmarshal(data, &p)
	if err == nil && p.Reaction != "restart" && p.Reaction != "reload" {
		err = fmt.Errorf("unknown reaction %q", p.Reaction)
	}
	if err != nil {
		return nil, fmt.Errorf("the pending reaction record of %s, %s, is corrupt (%v); a restart or reload was due: carry it out by hand (systemctl restart %s) and remove the file", unit, path, err, unit)
	}
	return &p, nil
}

// ClearPending removes the pending reaction of unit after it was verified.
func (s *Store) ClearPending(unit string) error {
	if err := atomicfile.Remove(s.pendingPath(unit)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("clear pending reaction of %s: %w", unit, err)
	}
	return nil
}

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
