// Package atomicfile replaces files so that a reader or a crash sees the old content or the
// new, never a mix, and the file never exists with looser permissions than requested.
package atomicfile

import (
	"fmt"
	"os"
	"path/filepath"
)

// Options are the final attributes of the file. They are applied to the temporary file
// before any content is written, so the content is never readable by others when Mode
// forbids it.
type Options struct {
	Mode os.FileMode
	UID  int // -1 keeps the creating process's owner
	GID  int // -1 keeps the creating process's group
}

// Write replaces path with data: temporary file in the same directory (created 0600, then
// chowned and chmodded to the final attributes while still empty), written, synced,
// renamed over path, and the directory synced so the rename itself is durable.
func Write(path string, data []byte, o Options) (err error) {
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".richt-*")
	if err != nil {
		return fmt.Errorf("create temporary file in %s: %w", dir, err)
	}
	tmpName := tmp.Name()
	defer func() {
		if err != nil {
			_ = tmp.Close()
			_ = os.Remove(tmpName)
		}
	}()
	if o.UID >= 0 || o.GID >= 0 {
		if err := tmp.Chown(o.UID, o.GID); err != nil {
			return fmt.Errorf("set owner of %s: %w", tmpName, err)
		}
	}
	// Chmod after chown: chown may clear set-id bits.
	if err := tmp.Chmod(o.Mode); err != nil {
		return fmt.Errorf("set mode of %s: %w", tmpName, err)
	}
	if _, err := tmp.Write(data); err != nil {
		return fmt.Errorf("write %s: %w", tmpName, err)
	}
	if err := tmp.Sync(); err != nil {
		return fmt.Errorf("sync %s: %w", tmpName, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("close %s: %w", tmpName, err)
	}
	if err := os.Rename(tmpName, path); err != nil {
		return fmt.Errorf("rename %s to %s: %w", tmpName, path, err)
	}
	return SyncDir(dir)
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
