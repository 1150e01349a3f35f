package configfile

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path"
	"reflect"

	"github.com/richt/services/pkg/atomicfile"
	"github.com/richt/services/pkg/rootpath"
	"github.com/richt/services/pkg/stamp"
)

// ErrValidation is in the chain of the error of a write whose validator refused the new
// content (or could not run): the path was not replaced.
var ErrValidation = errors.New("validation failed")

// LockName is the name of the lock (package lock) runs writing the config at p share: a
// hash, since a path is no file name.
func LockName(p string) string {
	sum := sha256.Sum256([]byte(p))
	return "config-" + hex.EncodeToString(sum[:8])
}

// Apply carries out a plan made by Plan (in this run, or earlier: the service plans every
// step before it applies any) and returns what it did.
//
// Like unit_override's Apply, it reads the path again first (under Deps.Lock when given):
// when another run changed it since the plan, it decides again from the file as it is and
// carries that plan out, which the result reports. When nothing moved, the plan carried out
// is exactly the one given. An error leaves Changed saying whether the file moved; an
// error wrapping atomicfile.ErrNotReplaced says it did not.
func (d Deps) Apply(ctx context.Context, p Plan) (*Result, error) {
	w := p.Want
	if d.Lock != nil {
		release, err := d.Lock(ctx, LockName(w.Path))
		if err != nil {
			res := p.Result()
			res.Reset(false, nil)
			return res, fmt.Errorf("%s: another run writing it did not finish in time: %w", label(w.Name, w.Path), err)
		}
		defer release()
	}
	now, err := Observe(d.Root, w.Path)
	if err != nil {
		res := p.Result()
		res.Reset(false, res.Plan)
		return res, err
	}
	if !reflect.DeepEqual(now, p.File) {
		if p, err = Decide(w, now); err != nil {
			return p.Result(), err
		}
	}
	res := p.Result()
	res.Changed = false
	// What the result says of the contract follows what was done, also on a failure.
	defer func() { res.Reset(res.Changed, res.Plan) }()
	var place *dir
	if p.Changed() {
		// The directory as it is now, held open: every change goes through it.
		if place, err = openDir(d.Root, w, p.File); err != nil {
			return res, err
		}
		defer place.close()
	}
	full := rootpath.Join(d.Root, w.Path)
	for _, s := range p.Steps {
		if err := d.carry(ctx, p, s, full, place); err != nil {
			if moved(s, err, full) {
				res.Changed = true // replaced or removed, not yet durable
			}
			return res, fmt.Errorf("%s: %w", label(w.Name, w.Path), err)
		}
		if s != StepRemoveStale {
			res.Changed = true
		}
		if s == StepWrite || s == StepRemove {
			res.FilesPlaced = d.placed()
		}
	}
	return res, nil
}

// placed is the moment, right after a move, that the result reports as files_placed; nil
// when the clock cannot be read (a trigger that cannot say when is never taken as
// served).
func (d Deps) placed() *stamp.Stamp {
	now := d.Now
	if now == nil {
		now = stamp.Now
	}
	at, err := now()
	if err != nil {
		return nil
	}
	return &at
}

// moved reports whether step s, which failed with err, moved the file's content all the
// same: a write that renamed but could not sync the directory, a removal likewise.
func moved(s Step, err error, full string) bool {
	switch s {
	case StepWrite:
		return !errors.Is(err, atomicfile.ErrNotReplaced)
	case StepRemove:
		if errors.Is(err, atomicfile.ErrNotReplaced) {
			return false
		}
		_, serr := os.Lstat(full)
		return errors.Is(serr, os.ErrNotExist)
	}
	return false
}

// carry carries out one step of plan p: the stale files' removal on full, the path below
// Deps.Root; every change of the file through place, its directory held open.
func (d Deps) carry(ctx context.Context, p Plan, s Step, full string, place *dir) error {
	w := p.Want
	base := path.Base(w.Path)
	switch s {
	case StepRemoveStale:
		_, err := atomicfile.RemoveStale(full)
		return err
	case StepWrite:
		return d.write(ctx, w, place)
	case StepChown:
		return place.chown(base, w.Mode&p.File.Mode, w.UID, w.GID)
	case StepChmod:
		return place.chmod(base, w.Mode)
	case StepRemove:
		if err := d.beforeReplace(w.Path); err != nil {
			return err
		}
		return place.remove(base)
	}
	return fmt.Errorf("unknown step %q", s)
}

// write puts the content beside the path in a file root's alone (0600), has the validator
// check a copy of it in ValidateDir, and renames it into place once it is proven still the
// one written and still holding the content (the config's owner may write the directory
// and rename or replace the file, though not write to it). Only once the path is proven
// to hold it does the file get its final owner and mode, through its descriptor: before,
// the owner could have rewritten the validated bytes. Whatever fails before the rename
// removes the temporary file and leaves the path as it was.
func (d Deps) write(ctx context.Context, w Want, place *dir) (err error) {
	tmp, err := place.create(w)
	if err != nil {
		return fmt.Errorf("%s %w: %w", w.Path, atomicfile.ErrNotReplaced, err)
	}
	defer func() {
		if derr := tmp.discard(); derr != nil {
			err = fmt.Errorf("%w (and %w)", err, derr)
		}
	}()
	if len(w.Validate) > 0 {
		if err := d.validate(ctx, w); err != nil {
			return fmt.Errorf("%s %w: %w", w.Path, atomicfile.ErrNotReplaced, err)
		}
	}
	if err := d.beforeReplace(w.Path); err != nil {
		return err
	}
	return tmp.replace(w, d.renamed)
}

// beforeReplace runs Deps.BeforeReplace; its failure leaves p as it was.
func (d Deps) beforeReplace(p string) error {
	if d.BeforeReplace == nil {
		return nil
	}
	if err := d.BeforeReplace(); err != nil {
		return fmt.Errorf("%s %w: %w", p, atomicfile.ErrNotReplaced, err)
	}
	return nil
}
