package override

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"reflect"
	"strings"
	"time"

	"github.com/richt/services/pkg/atomicfile"
	"github.com/richt/services/pkg/contract"
	"github.com/richt/services/pkg/lock"
	"github.com/richt/services/pkg/safefile"
	"github.com/richt/services/pkg/stamp"
	"github.com/richt/services/pkg/systemd"
	"github.com/richt/services/pkg/timeout"
)

// Apply carries out a plan made by Plan (in this run, or earlier: the service module
// plans every step before it applies any) and returns the run's result.
//
// It takes the unit's lock, which serializes the runs for the unit (this module's and
// systemd_lifecycle's), and reads the file again under it: a plan made before the lock can
// be stale when another run wrote the file in between. Then it decides again from the file
// as it is now, under the lock, and carries that plan out; the result's `plan` is the plan
// carried out. Re-deciding rather than failing keeps what two runs racing for one file did
// before plans could be held: the later one sees the earlier one's file. The read is one
// lstat and one small read per directory and file, and when nothing moved (every run that
// is not racing another) the plan carried out is exactly the one given.
func (d Deps) Apply(ctx context.Context, p Plan) (*Result, error) {
	w := p.Want
	if d.Lock != nil {
		release, err := d.Lock(ctx, lock.Unit(w.Unit))
		if err != nil {
			res := &Result{Unit: w.Unit, Path: w.Path, State: stateOf(w), Operation: OpNone}
			return res, fmt.Errorf("another run for %s did not finish within the timeout of %s: %w", w.Unit, p.Timeout, err)
		}
		defer release()
	}
	now, err := Observe(d.Root, w.Path)
	if err != nil {
		return p.Result(), err
	}
	if !reflect.DeepEqual(now, p.File) {
		again, err := Decide(w, now)
		again.Warnings, again.Timeout = p.Warnings, p.Timeout
		if err != nil {
			return again.Result(), err
		}
		p = again
	}
	res := p.Result()
	if err := d.carry(ctx, p, res); err != nil {
		return res, err
	}
	d.addCapability(res, p, false)
	return res, nil
}

// carry carries out the plan's steps in order. res holds what the plan reports; when a
// step fails, carry corrects it to what happened: a file that was not replaced or removed
// is no change (and the reload recorded for it is withdrawn), while a file that moved
// stays a change whose reload stays due.
func (d Deps) carry(ctx context.Context, plan Plan, res *Result) error {
	w, f := plan.Want, plan.File
	full := d.full(w.Path)
	recorded := ""
	unchanged := func(err error) error {
		res.Changed, res.UnitFilesChanged, res.DaemonReload = false, false, contract.ReloadNone
		if recorded != "" {
			// The deadline may have passed: withdrawing gets a short one of its own.
			rctx, cancel := timeout.Cleanup(context.Background())
			defer cancel()
			if rerr := d.Sync.RemoveManagerSyncEntry(rctx, recorded); rerr != nil {
				return fmt.Errorf("%w (and withdrawing the manager reload recorded for it failed: %v)", err, rerr)
			}
		}
		return err
	}
	for _, step := range plan.Steps {
		switch step {
		case StepSecureDir:
			if err := secureDir(d.full(path.Dir(w.Path))); err != nil {
				res.Changed = false
				return err
			}
		case StepRemoveStale:
			if _, err := atomicfile.RemoveStale(full); err != nil {
				return unchanged(err)
			}
		case StepRecordReload:
			id, err := d.Sync.MarkManagerSyncDue(ctx, "unit_override "+w.Path+" changed")
			if err != nil {
				return unchanged(fmt.Errorf("%s not changed: recording the manager reload it needs failed: %w", w.Path, err))
			}
			recorded = id
		case StepWrite:
			if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
				return unchanged(fmt.Errorf("create %s: %w", filepath.Dir(full), err))
			}
			if err := atomicfile.Write(full, w.Content, atomicfile.Options{Mode: w.Mode, UID: w.UID, GID: w.GID}); err != nil {
				if errors.Is(err, atomicfile.ErrNotReplaced) {
					return unchanged(err)
				}
				res.Stamp(time.Now())
				return fmt.Errorf("%w (the manager reload stays due)", err)
			}
		case StepAttributes:
			if err := setAttributes(full, w, f); err != nil {
				return err
			}
		case StepRemove:
			if err := atomicfile.Remove(full); err != nil {
				if _, serr := os.Lstat(full); serr == nil {
					return unchanged(err)
				}
				res.Stamp(time.Now())
				return fmt.Errorf("%w (the manager reload stays due)", err)
			}
			// A drop-in directory this module emptied goes too; the unit directory stays.
			if dir := filepath.Dir(full); strings.HasSuffix(dir, ".d") {
				if entries, err := os.ReadDir(dir); err == nil && len(entries) == 0 {
					if err := os.Remove(dir); err != nil {
						res.Stamp(time.Now())
						return fmt.Errorf("remove empty %s: %w (the manager reload stays due)", dir, err)
					}
				}
			}
		case StepDaemonReload:
			res.Stamp(time.Now())
			if err := d.reloadManager(ctx, w.Path); err != nil {
				res.DaemonReload = contract.ReloadNeeded
				return err
			}
		}
	}
	if res.Changed {
		res.Stamp(time.Now())
		if at, err := stamp.Now(); err == nil && moved(plan.Steps) {
			// Read under the unit's lock, after the move: every run for the unit that
			// reloads or restarts it after this moment holds the lock after it, and has
			// the manager reload this change recorded (record-reload) done first. So a
			// verified reload sent later has the file loaded (lifecycle's served reload).
			res.Placed(at)
		}
	}
	return nil
}

// moved reports whether the steps replace or remove the file (not only its attributes).
func moved(steps []Step) bool {
	for _, s := range steps {
		if s == StepWrite || s == StepRemove {
			return true
		}
	}
	return false
}

// secureDir takes the write bits of group and others off a drop-in directory (first, so
// no moment is looser) and gives it to root.
func secureDir(dir string) error {
	fi, err := os.Stat(dir)
	if err != nil {
		return fmt.Errorf("secure %s: %w", dir, err)
	}
	if err := os.Chmod(dir, fi.Mode().Perm()&^0o022); err != nil {
		return fmt.Errorf("secure %s: %w", dir, err)
	}
	if err := os.Chown(dir, 0, 0); err != nil {
		return fmt.Errorf("secure %s: %w", dir, err)
	}
	return nil
}

// setAttributes tightens the mode before changing the owner, so no moment is looser than
// both, then sets the final mode.
func setAttributes(full string, w Want, f File) error {
	if err := safefile.Chown(full, w.Mode&f.Mode, w.UID, w.GID); err != nil {
		return err
	}
	return safefile.Chmod(full, w.Mode)
}

// reloadManager reloads systemd's manager through systemctl. The reload this change owes
// was recorded before the file moved, so a failed reload leaves it due for the next
// systemd_lifecycle run; a successful one settles every entry seen before it, that one
// included.
func (d Deps) reloadManager(ctx context.Context, p string) error {
	err := systemd.ReloadSeen(ctx, systemd.Systemctl{Runner: d.Runner}, d.Sync)
	if err != nil && errors.Is(err, systemd.ErrReload) {
		return fmt.Errorf("%s was written but systemctl daemon-reload failed (recorded as due for the next systemd_lifecycle run): %w", p, err)
	}
	return err
}
