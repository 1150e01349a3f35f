package durable

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/richt/services/pkg/atomicfile"
	"github.com/richt/services/pkg/reaction"
	"github.com/richt/services/pkg/stamp"
	"github.com/richt/services/pkg/statedir"
)

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
	// Unreadable, on a record of reaction Unknown, is why its file could not be read as a
	// record of this version (damaged, or written by another version).
	Unreadable string `json:"unreadable,omitempty"`
	// Reported: a run has failed once because the record cannot be carried out as
	// recorded (systemd_lifecycle decides that; docs/reliability.md, "a debt that can be
	// paid"); later runs warn instead of failing, until a restart clears it.
	Reported bool `json:"reported,omitempty"`
	// Path is the record's file as GetPending read it, for messages; not stored.
	Path string `json:"-"`
}

// Unknown is the reaction of a record this version cannot read: which reaction was due
// cannot be known, so none is carried out from it; a restart (which serves every
// reaction) clears it.
const Unknown = "unknown"

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
//
// A record of reaction Unknown stays as it is under a reload (a reload does not serve
// what may have been a restart) and becomes a plain restart record under a restart.
func Owed(earlier *Pending, kind reaction.Kind, triggers []string, at stamp.Stamp) Pending {
	if earlier == nil {
		return Pending{Reaction: string(kind), Triggers: triggers, Since: time.Now().UTC(), At: at}
	}
	if earlier.Reaction == Unknown {
		if kind == reaction.Restart {
			return Pending{Reaction: string(kind), Triggers: triggers, Since: earlier.Since, At: at}
		}
		return *earlier
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
// A file that holds no record this version can read (it does not parse, or names no
// known reaction) is never "nothing due": it reads as a record of reaction Unknown that
// says why (Unreadable), since guessing would either lose a restart or turn a reload into
// a restart. A file that cannot be read at all is an error naming it.
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
	p, err := parsePending(data)
	if err != nil {
		since := modTime(path)
		// Stamped when the file was written: an activation after that (a restart by hand)
		// served whatever it said.
		at, _ := stamp.At(since)
		p = Pending{Reaction: Unknown, Unreadable: fmt.Sprintf("it is not a record this version can read (%v)", err), Since: since, At: at}
	}
	p.Path = path
	return &p, nil
}

// parsePending reads a stored record strictly: a known reaction, and Unknown only with
// the reason it was written for.
func parsePending(data []byte) (Pending, error) {
	var p Pending
	if err := json.Unmarshal(data, &p); err != nil {
		return p, err
	}
	switch p.Reaction {
	case string(reaction.Restart), string(reaction.Reload):
	case Unknown:
		if p.Unreadable == "" {
			return p, fmt.Errorf("reaction %q without the reason it is unknown", p.Reaction)
		}
	default:
		return p, fmt.Errorf("unknown reaction %q", p.Reaction)
	}
	return p, nil
}

// modTime is when the file was last written, as far as it can be told (the time an
// unreadable record was due since).
func modTime(path string) time.Time {
	if fi, err := os.Stat(path); err == nil {
		return fi.ModTime().UTC()
	}
	return time.Now().UTC()
}

// ClearPending removes the pending reaction of unit after it was verified.
func (s *Store) ClearPending(unit string) error {
	if err := atomicfile.Remove(s.pendingPath(unit)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("clear pending reaction of %s: %w", unit, err)
	}
	return nil
}
