package rpmexact

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/richt/services/pkg/atomicfile"
	"github.com/richt/services/pkg/statedir"
)

// A transaction is framed by two listings of every installed package (snapshot.go). On an
// EL server's database (about 1,000 packages) each takes 25-35 ms, and the listing one
// transaction reads after DNF is what the next one would read before DNF, as long as nobody
// wrote the database in between. So the supervisor remembers its after-listing under the
// same key as the query memo's answers (the database files, rpm and its configuration) and
// the next transaction's supervisor uses it while that key is unchanged.

// DefaultListingDir is where the listing is remembered on a target; like the query memo it
// is a cache, and removing it costs the next transaction one listing.
const DefaultListingDir = "/var/cache/richt/rpm-listing"

const listingFile = "listing.json"

// listingVersion is the record format.
const listingVersion = 1

type listingRecord struct {
	Version  int                 `json:"version"`
	Database Database            `json:"database"`
	Key      string              `json:"key"`
	Packages map[string][]string `json:"packages"`
}

// LookupListing returns the remembered listing of every installed package, and the
// database it was read from, when the files it was read from are unchanged; anything else
// (no record, an untrusted or unreadable one, a changed file, no ListingDir) means "ask
// rpm".
func (m *QueryMemo) LookupListing() (map[string][]string, Database, bool) {
	if m == nil || m.ListingDir == "" {
		return nil, Database{}, false
	}
	data, err := statedir.ReadRecord(m.ListingDir, listingFile)
	if err != nil {
		return nil, Database{}, false
	}
	var rec listingRecord
	if err := json.Unmarshal(data, &rec); err != nil || rec.Version != listingVersion || rec.Key == "" || rec.Packages == nil {
		return nil, Database{}, false
	}
	key, err := m.key(rec.Database)
	if err != nil || key.text != rec.Key {
		return nil, Database{}, false
	}
	return rec.Packages, rec.Database, true
}

// RecordListing remembers a listing rpm read from db in a run that began at listed, under
// the query memo's rules (sqlite only, every file of the key settled before listed); it
// says why when it does not. A record no longer true is removed first, so a failure to write
// the new one leaves no stale one behind.
func (m *QueryMemo) RecordListing(pkgs map[string][]string, db Database, listed time.Time) error {
	if m == nil || m.ListingDir == "" {
		return nil
	}
	path := filepath.Join(m.ListingDir, listingFile)
	if err := os.Remove(path); err != nil && !os.IsNotExist(err) {
		return fmt.Errorf("remove the old listing %s: %w", path, err)
	}
	key, err := m.trustedKey(db, listed)
	if err != nil {
		return err
	}
	data, err := json.Marshal(listingRecord{Version: listingVersion, Database: db, Key: key.text, Packages: pkgs})
	if err != nil {
		return fmt.Errorf("encode the package listing: %w", err)
	}
	if err := os.MkdirAll(m.ListingDir, 0o755); err != nil {
		return fmt.Errorf("create %s: %w", m.ListingDir, err)
	}
	return atomicfile.Write(path, data, atomicfile.Options{Mode: 0o644, UID: -1, GID: -1})
}

// settleBeforeListing waits, at most two ticks of the clock file timestamps come from, until
// the database files are old enough for a listing that begins now to be remembered: DNF's
// last write can come within a tick of its exit. Where timestamps are whole seconds (Settle)
// it does not wait.
func (m *QueryMemo) settleBeforeListing(db Database) {
	if m == nil || m.ListingDir == "" || db.Backend != "sqlite" {
		return
	}
	key, err := m.key(db)
	if err != nil || !key.fine {
		return
	}
	need := settleFor(key)
	if wait := time.Until(key.newest.Add(need + time.Millisecond)); wait > 0 && wait <= need+time.Millisecond {
		time.Sleep(wait)
	}
}
