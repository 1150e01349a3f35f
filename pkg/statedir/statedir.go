// Package statedir creates and checks the directories the modules keep state and locks in.
// A record in a directory that another user can write could be planted or removed by
// that user (a skipped daemon-reload, a forgotten restart), so such a directory is refused
// instead of trusted.
package statedir

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
)

// ErrInsecure is returned (wrapped) for a directory that another user owns or can write.
var ErrInsecure = errors.New("insecure state directory")

// Ensure creates dir with mode (and missing parents with 0755) and checks that dir is a
// real directory owned by the running user (root on a target) that neither group nor
// others can write.
func Ensure(dir string, mode os.FileMode) error {
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		return fmt.Errorf("create %s: %w", filepath.Dir(dir), err)
	}
	if err := os.Mkdir(dir, mode); err != nil && !errors.Is(err, os.ErrExist) {
		return fmt.Errorf("create %s: %w", dir, err)
	}
	return Check(dir)
}

// Check verifies an existing directory as Ensure does; a missing one is fine (nothing is
// recorded there yet).
func Check(dir string) error {
	fi, err := os.Lstat(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("inspect %s: %w", dir, err)
	}
	if !fi.IsDir() {
		return fmt.Errorf("%w: %s is not a directory (%s); remove it", ErrInsecure, dir, fi.Mode().Type())
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return fmt.Errorf("inspect %s: no owner information", dir)
	}
	if uid := os.Geteuid(); int(st.Uid) != uid {
		return fmt.Errorf("%w: %s is owned by uid %d, not by uid %d that runs the module; its records cannot be trusted (chown %d %s, or remove it)", ErrInsecure, dir, st.Uid, uid, uid, dir)
	}
	if fi.Mode().Perm()&0o022 != 0 {
		return fmt.Errorf("%w: %s has mode %04o, writable by group or others; its records cannot be trusted (chmod go-w %s)", ErrInsecure, dir, fi.Mode().Perm(), dir)
	}
	return nil
}

// CheckFile verifies a record the modules read as an instruction: a regular file (not a
// link) owned by the running user that neither group nor others can write.
func CheckFile(path string) error {
	fi, err := os.Lstat(path)
	if err != nil {
		return fmt.Errorf("inspect %s: %w", path, err)
	}
	return checkRecord(path, fi, false)
}

// checkRecord checks a record's file information: regular, owned by the running user (or
// by root, with rootToo), not writable by group or others.
func checkRecord(path string, fi os.FileInfo, rootToo bool) error {
	st, ok := fi.Sys().(*syscall.Stat_t)
	uid := os.Geteuid()
	switch {
	case !fi.Mode().IsRegular():
		return fmt.Errorf("%w: %s is not a regular file (%s)", ErrInsecure, path, fi.Mode().Type())
	case !ok:
		return fmt.Errorf("inspect %s: no owner information", path)
	case int(st.Uid) != uid && !(rootToo && st.Uid == 0):
		return fmt.Errorf("%w: %s is owned by uid %d, not by uid %d that runs the module", ErrInsecure, path, st.Uid, uid)
	case fi.Mode().Perm()&0o022 != 0:
		return fmt.Errorf("%w: %s has mode %04o, writable by group or others", ErrInsecure, path, fi.Mode().Perm())
	}
	return nil
}

// CheckExisting is Check for a directory that must exist.
func CheckExisting(dir string) error {
	if _, err := os.Lstat(dir); err != nil {
		return fmt.Errorf("inspect %s: %w", dir, err)
	}
	return Check(dir)
}

// ReadRecord reads the record name in dir when dir passes Check and the record is a
// regular file (not a link) that the running user or root owns and neither group nor
// others can write. A missing record is os.ErrNotExist; anything else that fails wraps
// ErrInsecure or says what failed.
func ReadRecord(dir, name string) ([]byte, error) {
	if err := Check(dir); err != nil {
		return nil, err
	}
	path := filepath.Join(dir, name)
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW, 0)
	if err != nil {
		if errors.Is(err, syscall.ELOOP) {
			return nil, fmt.Errorf("%w: %s is a symbolic link", ErrInsecure, path)
		}
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("inspect %s: %w", path, err)
	}
	if err := checkRecord(path, fi, true); err != nil {
		return nil, err
	}
	data := make([]byte, fi.Size())
	if _, err := f.ReadAt(data, 0); err != nil && fi.Size() > 0 {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	return data, nil
}

// CheckAncestors verifies every directory above dir, up to /: each owned by root or the
// running user, and any that group or others can write has the sticky bit (as /tmp has),
// so nobody else can rename or replace what lies below. A state directory in a path that
// someone else controls (a /tmp/richt-UID made first by another user) is then refused.
func CheckAncestors(dir string) error {
	uid := os.Geteuid()
	for p := filepath.Dir(filepath.Clean(dir)); ; p = filepath.Dir(p) {
		fi, err := os.Stat(p)
		if err != nil {
			return fmt.Errorf("inspect %s: %w", p, err)
		}
		st, ok := fi.Sys().(*syscall.Stat_t)
		if !ok {
			return fmt.Errorf("inspect %s: no owner information", p)
		}
		if st.Uid != 0 && int(st.Uid) != uid {
			return fmt.Errorf("%w: %s, above %s, is owned by uid %d, not by root or uid %d that runs the module", ErrInsecure, p, dir, st.Uid, uid)
		}
		if fi.Mode().Perm()&0o022 != 0 && fi.Mode()&os.ModeSticky == 0 {
			return fmt.Errorf("%w: %s, above %s, has mode %04o: group or others can replace what lies below it", ErrInsecure, p, dir, fi.Mode().Perm())
		}
		if p == "/" || p == "." {
			return nil
		}
	}
}
