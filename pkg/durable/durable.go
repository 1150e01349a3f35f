// Package durable keeps the facts that must survive a failed or interrupted run on the
// target itself, under /var/lib/richt: that systemd's manager needs a daemon-reload, and
// which reactions are still due for which unit.
package durable

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/richt/services/pkg/atomicfile"
)

// DefaultDir is where the store lives on a target.
const DefaultDir = "/var/lib/richt"

const syncDueFile = "manager-sync-due"

// Store is the durable store rooted at Dir.
type Store struct{ Dir string }

// Default is the store on this host.
func Default() *Store { return &Store{Dir: DefaultDir} }

// MarkManagerSyncDue records that systemd's manager must be reloaded before the next
// decision about any unit. A daemon-reload is host-wide, so there is one record per host;
// the reason of the latest writer is kept for messages.
func (s *Store) MarkManagerSyncDue(reason string) error {
	line := fmt.Sprintf("%s %s\n", time.Now().UTC().Format(time.RFC3339), oneLine(reason))
	if err := s.write(syncDueFile, []byte(line)); err != nil {
		return fmt.Errorf("record manager sync due: %w", err)
	}
	return nil
}

// write replaces one record of the store atomically (0644), creating its directory:
// a reader sees the old record or the new one, never a part.
func (s *Store) write(rel string, data []byte) error {
	path := filepath.Join(s.Dir, rel)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("create durable store %s: %w", filepath.Dir(path), err)
	}
	return atomicfile.Write(path, data, atomicfile.Options{Mode: 0o644, UID: -1, GID: -1})
}

// ManagerSyncDue reports whether a manager sync is recorded, and why.
func (s *Store) ManagerSyncDue() (bool, string, error) {
	data, err := os.ReadFile(filepath.Join(s.Dir, syncDueFile))
	if errors.Is(err, os.ErrNotExist) {
		return false, "", nil
	}
	if err != nil {
		return false, "", fmt.Errorf("read manager sync record: %w", err)
	}
	return true, strings.TrimSpace(string(data)), nil
}

// ClearManagerSync removes the record after a daemon-reload succeeded.
func (s *Store) ClearManagerSync() error {
	if err := atomicfile.Remove(filepath.Join(s.Dir, syncDueFile)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("clear manager sync record: %w", err)
	}
	return nil
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// Pending is a reaction that was due for a unit and has not been verified yet.
type Pending struct {
	Reaction string    `json:"reaction"`
	Triggers []string  `json:"triggers,omitempty"`
	Since    time.Time `json:"since"`
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
func (s *Store) GetPending(unit string) (*Pending, error) {
	data, err := os.ReadFile(s.pendingPath(unit))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read pending reaction of %s: %w", unit, err)
	}
	var p Pending
	if err := json.Unmarshal(data, &p); err != nil {
		return nil, fmt.Errorf("pending reaction record %s is corrupt (remove it to discard the reaction): %w", s.pendingPath(unit), err)
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
	if data, err := os.ReadFile(filepath.Join(s.Dir, managerCheckFile)); err == nil {
		if json.Unmarshal(data, &rec) != nil {
			return nil
		}
	}
	return rec
}
