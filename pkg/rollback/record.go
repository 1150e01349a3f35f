// Package rollback keeps what a service run with `rollback: true` needs to put the last
// good state back, and puts it back: the builds its packages had (kept on the host as RPM
// files, Keeper), the files it is about to write as they were (contents, mode, owner, or
// that they did not exist), in a record written before the first change (Store).
//
// The record is the run's promise that the old state can come back. It is written once,
// before any change, and removed when the run ends well (the new state, proved) or when a
// rollback has put the old state back and proved it. A run killed at any moment leaves it:
// the next run of the service keeps the record's older entries (the last good state is the
// one before the first unfinished run, not the half-changed one between), moves forward
// again, and puts the record's state back if that fails too. So the host ends all new and
// proved, or all old and proved, never in a mix left behind.
package rollback

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"syscall"

	"github.com/richt/services/pkg/atomicfile"
	"github.com/richt/services/pkg/statedir"
)

// DefaultDir is where the records and the saved files are kept: root-only, beside the
// other state of the modules.
const DefaultDir = "/var/lib/richt/rollback"

// The phases of a record.
const (
	// PhaseChanging: the run that wrote the record is moving forward (or was killed doing
	// so).
	PhaseChanging = "changing"
	// PhaseRestoring: a rollback is putting the record's state back (or was killed doing
	// so).
	PhaseRestoring = "restoring"
)

// Record is the state a service run puts back when its change fails.
type Record struct {
	Service string `json:"service"`
	Phase   string `json:"phase"`
	// Packages are the packages the run moves, with the builds they had.
	Packages []Package `json:"packages"`
	// Files are the files the run may write, as they were.
	Files []File `json:"files"`
}

// Package is one package's state before the change.
type Package struct {
	Name string `json:"name"`
	// Before are its installed builds (NAME-EPOCH:VERSION-RELEASE.ARCH); empty: the
	// package was not installed, and a rollback removes it.
	Before []string `json:"before"`
}

// File is one file's state before the change.
type File struct {
	Path string `json:"path"`
	// Existed: the file was there; a rollback of a file that was not removes it.
	Existed bool        `json:"existed"`
	Mode    os.FileMode `json:"mode,omitempty"`
	UID     int         `json:"uid"`
	GID     int         `json:"gid"`
	// Saved is the saved content's file name in the record's directory.
	Saved string `json:"saved,omitempty"`
	// Sensitive: its content is never shown (a diff of the rollback leaves it out).
	Sensitive bool `json:"sensitive,omitempty"`
	// UnitFile: the file is in a unit directory; moving it needs a manager reload.
	UnitFile bool `json:"unit_file,omitempty"`
}

// Store keeps the records under Dir ("" is DefaultDir).
type Store struct {
	Dir string
}

func (s Store) dir() string {
	if s.Dir == "" {
		return DefaultDir
	}
	return s.Dir
}

var unsafeChars = regexp.MustCompile(`[^A-Za-z0-9_.-]+`)

// Key names a service's record (and its lock) on disk: readable, and unique whatever
// the name holds.
func Key(service string) string { return key(service) }

func key(service string) string {
	sum := sha256.Sum256([]byte(service))
	readable := unsafeChars.ReplaceAllString(service, "_")
	if len(readable) > 40 {
		readable = readable[:40]
	}
	return readable + "-" + hex.EncodeToString(sum[:6])
}

// RecordPath is the service's record file.
func (s Store) RecordPath(service string) string {
	return filepath.Join(s.dir(), key(service)+".json")
}

// savedDir holds the saved contents of a service's files.
func (s Store) savedDir(service string) string {
	return filepath.Join(s.dir(), key(service)+".d")
}

// ScriptPath is where a rollback writes its DNF script (in the record's directory).
func (s Store) ScriptPath(service string) string {
	return filepath.Join(s.savedDir(service), "restore.dnf")
}

// Load reads the service's record; nil when there is none.
func (s Store) Load(service string) (*Record, error) {
	if err := statedir.Check(s.dir()); err != nil {
		return nil, err
	}
	data, err := os.ReadFile(s.RecordPath(service))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read the rollback record of %q: %w", service, err)
	}
	var rec Record
	if err := json.Unmarshal(data, &rec); err != nil {
		return nil, fmt.Errorf("read the rollback record of %q (%s): %w", service, s.RecordPath(service), err)
	}
	return &rec, nil
}

// Exists reports whether the service has a record, or saved contents a run killed while
// it began one left without a record.
func (s Store) Exists(service string) bool {
	for _, p := range []string{s.RecordPath(service), s.savedDir(service)} {
		if _, err := os.Lstat(p); err == nil {
			return true
		}
	}
	return false
}

// Merge is the record a run writes when an earlier one is still there: the earlier
// entries stay (they are the state before the first unfinished run), the new run's adds
// what the earlier did not hold.
func Merge(earlier *Record, now Record) Record {
	if earlier == nil {
		return now
	}
	out := *earlier
	out.Packages = slices.Clone(earlier.Packages)
	out.Files = slices.Clone(earlier.Files)
	for _, p := range now.Packages {
		if !slices.ContainsFunc(out.Packages, func(q Package) bool { return q.Name == p.Name }) {
			out.Packages = append(out.Packages, p)
		}
	}
	for _, f := range now.Files {
		if !slices.ContainsFunc(out.Files, func(g File) bool { return g.Path == f.Path }) {
			out.Files = append(out.Files, f)
		}
	}
	return out
}

// Observe is a file as it is now, for a record: a missing file did not exist; content is
// nil then. It is read through one descriptor opened without following a link and without
// blocking, and its attributes are that descriptor's: whoever can write the file's
// directory (a config's may be its daemon's user) can put a link or a FIFO at the path at
// any moment, and root must never save what such a link points at (the record's content
// is what a failed change writes back as the file).
func Observe(path string) (File, []byte, error) {
	fh, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0)
	if errors.Is(err, os.ErrNotExist) {
		return File{Path: path}, nil, nil
	}
	if errors.Is(err, syscall.ELOOP) {
		return File{}, nil, fmt.Errorf("%s is a symbolic link: a rollback could not put it back, and it is not followed", path)
	}
	if err != nil {
		return File{}, nil, fmt.Errorf("open %s for the rollback record without following a link: %w", path, err)
	}
	defer fh.Close()
	fi, err := fh.Stat()
	if err != nil {
		return File{}, nil, fmt.Errorf("inspect %s for the rollback record: %w", path, err)
	}
	if !fi.Mode().IsRegular() {
		return File{}, nil, fmt.Errorf("%s is not a regular file (%s): a rollback could not put it back", path, fi.Mode().Type())
	}
	observing(path)
	data, err := io.ReadAll(fh)
	if err != nil {
		return File{}, nil, fmt.Errorf("read %s for the rollback record: %w", path, err)
	}
	uid, gid := owner(fi)
	return File{Path: path, Existed: true, Mode: fi.Mode().Perm() | fi.Mode()&(os.ModeSetuid|os.ModeSetgid|os.ModeSticky), UID: uid, GID: gid}, data, nil
}

// observing runs between Observe's inspection of a file and its read: tests swap the path
// there.
var observing = func(string) {}

// Begin writes the record before the run's first change: the saved contents first, then
// the record that names them (one atomic write), so a record never names a content that
// is not there. contents are the files' contents by path (a file that did not exist has
// none). A file the earlier record holds keeps its saved content.
func (s Store) Begin(rec Record, contents map[string][]byte) error {
	if err := statedir.Ensure(s.dir(), 0o700); err != nil {
		return fmt.Errorf("rollback record: %w", err)
	}
	sd := s.savedDir(rec.Service)
	if err := statedir.Ensure(sd, 0o700); err != nil {
		return fmt.Errorf("rollback record: %w", err)
	}
	for i, f := range rec.Files {
		if !f.Existed || f.Saved != "" {
			continue
		}
		name := fmt.Sprintf("%d-%s", i, key(f.Path))
		if err := atomicfile.Write(filepath.Join(sd, name), contents[f.Path], atomicfile.Options{Mode: 0o600, UID: -1, GID: -1}); err != nil {
			return fmt.Errorf("save %s for a rollback: %w", f.Path, err)
		}
		rec.Files[i].Saved = name
	}
	return s.write(rec)
}

// SetPhase records the phase the service's record is in.
func (s Store) SetPhase(rec *Record, phase string) error {
	rec.Phase = phase
	return s.write(*rec)
}

func (s Store) write(rec Record) error {
	data, err := json.MarshalIndent(rec, "", "  ")
	if err != nil {
		return fmt.Errorf("encode the rollback record of %q: %w", rec.Service, err)
	}
	if err := atomicfile.Write(s.RecordPath(rec.Service), append(data, '\n'), atomicfile.Options{Mode: 0o600, UID: -1, GID: -1}); err != nil {
		return fmt.Errorf("write the rollback record of %q: %w", rec.Service, err)
	}
	return nil
}

// Saved is a file's saved content.
func (s Store) Saved(rec *Record, f File) ([]byte, error) {
	data, err := os.ReadFile(filepath.Join(s.savedDir(rec.Service), f.Saved))
	if err != nil {
		return nil, fmt.Errorf("read the saved content of %s: %w", f.Path, err)
	}
	return data, nil
}

// Done removes the service's record, then its saved contents: the record first, so a
// kill between leaves saved contents no record names (removed by the next Done), never a
// record without them.
func (s Store) Done(service string) error {
	if err := os.Remove(s.RecordPath(service)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("remove the rollback record of %q: %w", service, err)
	}
	if err := os.RemoveAll(s.savedDir(service)); err != nil {
		return fmt.Errorf("remove the saved files of %q: %w", service, err)
	}
	return nil
}
