// Package atomicfile replaces files so that a reader or a crash sees the old content or the
// new, never a mix, and the file never exists with looser permissions than requested.
package atomicfile

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Options are the final attributes of the file. They are applied to the temporary file
// before any content is written, so the content is never readable by others when Mode
// forbids it.
type Options struct {
	Mode os.FileMode
	UID  int // -1 keeps the creating process's owner
	GID  int // -1 keeps the creating process's group
}

// ErrNotReplaced is in the chain of every Write error that left path as it was (the error
// came before the rename): errors.Is tells it from an error after the rename, when path
// holds the new content but the rename may not be durable yet.
var ErrNotReplaced = errors.New("not replaced (unchanged)")

// Write replaces path with data: temporary file in the same directory (created 0600, then
// chowned and chmodded to the final attributes while still empty), written, synced,
// renamed over path, and the directory synced so the rename itself is durable. An error
// before the rename says that path is unchanged, and names path first.
func Write(path string, data []byte, o Options) error {
	t, err := Create(path, data, o)
	if err != nil {
		return err
	}
	return t.Replace()
}

// Temp is the new content of a path, written and synced beside it with its final
// attributes but not yet in its place: what a caller checks (a validator) before it
// replaces the old content, or discards.
type Temp struct {
	path, name string
}

// Create is Write up to the rename: the temporary file, complete, under Write's name
// pattern (so a killed run's leftover is Stale). An error names path and wraps
// ErrNotReplaced; nothing is left behind.
func Create(path string, data []byte, o Options) (_ *Temp, err error) {
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, tempPrefix(path)+"*")
	if err != nil {
		return nil, fmt.Errorf("%s %w: create temporary file in %s: %w", path, ErrNotReplaced, dir, err)
	}
	tmpName := tmp.Name()
	defer func() {
		if err != nil {
			_ = tmp.Close()
			_ = os.Remove(tmpName)
			err = fmt.Errorf("%s %w: %w", path, ErrNotReplaced, err)
		}
	}()
	// The os errors below name the operation and the temporary file already
	// ("write /etc/.x.richt-1: no space left on device"); the deferred wrap names path.
	if o.UID >= 0 || o.GID >= 0 {
		if err := tmp.Chown(o.UID, o.GID); err != nil {
			return nil, fmt.Errorf("set owner: %w", err)
		}
	}
	// Chmod after chown: chown may clear set-id bits.
	if err := tmp.Chmod(o.Mode); err != nil {
		return nil, fmt.Errorf("set mode: %w", err)
	}
	if _, err := tmp.Write(data); err != nil {
		return nil, err
	}
	if err := tmp.Sync(); err != nil {
		return nil, err
	}
	if err := tmp.Close(); err != nil {
		return nil, err
	}
	return &Temp{path: path, name: tmpName}, nil
}

// Name is the temporary file's path.
func (t *Temp) Name() string { return t.name }

// Replace renames the temporary file over its path and syncs the directory. An error
// before the rename removes the temporary file and wraps ErrNotReplaced.
func (t *Temp) Replace() error {
	if err := os.Rename(t.name, t.path); err != nil {
		_ = os.Remove(t.name)
		return fmt.Errorf("%s %w: %w", t.path, ErrNotReplaced, err)
	}
	if err := SyncDir(filepath.Dir(t.path)); err != nil {
		// Replaced, but the rename may not survive a crash: not "unchanged".
		return fmt.Errorf("%s replaced, but %w", t.path, err)
	}
	return nil
}

// Discard removes the temporary file: path keeps its old content.
func (t *Temp) Discard() error {
	if err := os.Remove(t.name); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("remove temporary file %s: %w", t.name, err)
	}
	return nil
}

// TempPrefix is tempPrefix for a caller that creates the temporary file itself (through a
// directory it holds open), so that a killed run's leftover is Stale all the same.
func TempPrefix(path string) string { return tempPrefix(path) }

// tempPrefix is the start of the name of every temporary file Write creates for path;
// os.CreateTemp appends a random decimal number.
func tempPrefix(path string) string { return "." + filepath.Base(path) + ".richt-" }

// isTemp reports whether name (a base name) is one of Write's temporary files for path.
func isTemp(path, name string) bool {
	rest, ok := strings.CutPrefix(name, tempPrefix(path))
	if !ok || rest == "" {
		return false
	}
	for _, r := range rest {
		if r < '0' || r > '9' {
			return false
		}
	}
	return true
}

// RemoveStale deletes the temporary files an interrupted Write for path left behind (a
// SIGKILL or a crash between creating and renaming one) and returns their names. Only
// regular files whose name is exactly Write's pattern for path go; links are never
// followed. The caller must hold whatever serializes writers of path: a temporary file of
// a Write still running would be taken for stale. A missing directory is fine.
func RemoveStale(path string) ([]string, error) {
	return removeStale(path, true)
}

// Stale names the temporary files of path that a killed Write left behind, and changes
// nothing: what RemoveStale would remove.
func Stale(path string) ([]string, error) {
	return removeStale(path, false)
}

func removeStale(path string, remove bool) ([]string, error) {
	dir := filepath.Dir(path)
	entries, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("look for stale temporary files of %s: %w", path, err)
	}
	var removed []string
	for _, e := range entries {
		if !isTemp(path, e.Name()) {
			continue
		}
		p := filepath.Join(dir, e.Name())
		// Lstat, not the directory entry's type: some filesystems report no type.
		fi, err := os.Lstat(p)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return removed, fmt.Errorf("inspect stale temporary file %s: %w", p, err)
		}
		if !fi.Mode().IsRegular() {
			continue
		}
		if !remove {
			removed = append(removed, e.Name())
			continue
		}
		if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
			return removed, fmt.Errorf("remove stale temporary file %s: %w", p, err)
		}
		removed = append(removed, e.Name())
	}
	if len(removed) > 0 && remove {
		return removed, SyncDir(dir)
	}
	return removed, nil
}

// Remove deletes path (absent is fine) and syncs its directory.
func Remove(path string) error {
	if err := os.Remove(path); err != nil && !os.IsNotExist(err) {
		return fmt.Errorf("remove %s: %w", path, err)
	}
	return SyncDir(filepath.Dir(path))
}

// SyncDir makes renames and removals in dir durable.
func SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("open directory %s: %w", dir, err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("sync directory %s: %w", dir, err)
	}
	return nil
}
