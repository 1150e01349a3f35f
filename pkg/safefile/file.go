package safefile

import (
	"errors"
	"fmt"
	"io"
	"os"
	"syscall"
)

// File is a file's content and attributes: as ReadFile found it, or as a task wants it.
type File struct {
	Exists   bool
	Content  []byte
	Mode     os.FileMode
	UID, GID int
}

// ReadFile reads the regular file full; missing is no error (Exists false). Anything else
// at full (a link, a directory, a device) is an error naming it: nothing is read through
// it or written over it.
func ReadFile(full string) (File, error) {
	fi, err := os.Lstat(full)
	if errors.Is(err, os.ErrNotExist) {
		return File{}, nil
	}
	if err != nil {
		return File{}, fmt.Errorf("inspect %s: %w", full, err)
	}
	if !fi.Mode().IsRegular() {
		return File{}, fmt.Errorf("%s exists and is not a regular file (%s); remove it or choose another name", full, fi.Mode().Type())
	}
	// Read what was inspected: a link or a FIFO put at full since (by whoever can write
	// its directory: a config's may be its daemon's) is refused, not read or waited on.
	fh, err := os.OpenFile(full, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		return File{}, fmt.Errorf("read %s: %w", full, err)
	}
	defer fh.Close()
	if fi, err = fh.Stat(); err != nil {
		return File{}, fmt.Errorf("inspect %s: %w", full, err)
	}
	if !fi.Mode().IsRegular() {
		return File{}, fmt.Errorf("%s exists and is not a regular file (%s); remove it or choose another name", full, fi.Mode().Type())
	}
	data, err := io.ReadAll(fh)
	if err != nil {
		return File{}, fmt.Errorf("read %s: %w", full, err)
	}
	f := File{Exists: true, Content: data, Mode: Perm(fi)}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		f.UID, f.GID = int(st.Uid), int(st.Gid)
	}
	return f, nil
}

// Chown gives full to uid and gid after narrowing its mode to narrow (what both the old
// and the new mode allow), so no moment is looser than both; Chmod then sets the final
// mode (chown may also clear set-id bits).
func Chown(full string, narrow os.FileMode, uid, gid int) error {
	if err := Chmod(full, narrow); err != nil {
		return err
	}
	if err := os.Lchown(full, uid, gid); err != nil {
		return fmt.Errorf("set owner of %s: %w", full, err)
	}
	return nil
}

// Chmod sets full's mode.
func Chmod(full string, mode os.FileMode) error {
	if err := os.Chmod(full, mode); err != nil {
		return fmt.Errorf("set mode of %s: %w", full, err)
	}
	return nil
}
