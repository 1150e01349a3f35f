package safefile

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"syscall"

	"github.com/richt/services/pkg/filemode"
)

// Dir is one directory a file lives in, as Lstat or Stat found it.
type Dir struct {
	// Path is the directory as the caller names it (on the target, not below a test root).
	Path   string
	Exists bool
	// Link: Path is a symbolic link. Lstat reads nothing more; Stat reads what it leads to.
	Link bool
	// Mode, UID and GID are those of the directory (of what a link leads to, for Stat).
	Mode     os.FileMode
	UID, GID int
}

// Insecure says why the directory lets someone other than root change what it holds
// (replace, rename or remove its files), or "".
func (d Dir) Insecure() string {
	var why []string
	if d.UID != 0 {
		why = append(why, fmt.Sprintf("owned by uid %d", d.UID))
	}
	if d.Mode&0o022 != 0 {
		why = append(why, fmt.Sprintf("writable by group or others (mode %04o)", filemode.Unix(d.Mode)))
	}
	return strings.Join(why, " and ")
}

// Untrusted says why the directory lets someone other than root and uid (a config's
// owner) change what it holds, or "". It is the rule for a config's directories, not for
// a unit file's (Insecure): a daemon's own directory may be its user's (Debian's
// /etc/redis is redis:redis 2770, EL's redis:root 0750), and what its user can change
// there it can change in the config itself. Group write is accepted for group root, and
// for the config's group gid only in a directory its non-root owner uid owns (Debian's):
// in root's directory the group could replace a config root owns and a root daemon reads,
// the escalation CheckMode refuses as g+w on the file itself. Others never: a directory
// writable by others is untrusted with the sticky bit too, which keeps them from
// replacing files but not from adding them.
func (d Dir) Untrusted(uid, gid int) string {
	var why []string
	if d.UID != 0 && d.UID != uid {
		why = append(why, fmt.Sprintf("owned by uid %d", d.UID))
	}
	if d.Mode&0o020 != 0 && d.GID != 0 {
		switch {
		case d.GID != gid:
			why = append(why, fmt.Sprintf("writable by group gid %d", d.GID))
		case uid == 0 || d.UID != uid:
			why = append(why, fmt.Sprintf("writable by group gid %d, which only a directory the config's non-root owner owns may be", d.GID))
		}
	}
	if d.Mode&0o002 != 0 {
		others := "writable by others"
		if d.Mode&os.ModeSticky != 0 {
			others += " (the sticky bit does not keep them from adding files)"
		}
		why = append(why, others)
	}
	return strings.Join(why, " and ")
}

// DirOf is the directory fi describes (found by Stat or through an open descriptor),
// named name.
func DirOf(name string, fi os.FileInfo) Dir {
	d := Dir{Path: name, Exists: true, Mode: Perm(fi)}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		d.UID, d.GID = int(st.Uid), int(st.Gid)
	}
	return d
}

// Lstat observes the directory full (named name in messages) without following a link:
// missing is no error (Exists false), a link is reported as one (Link) and not read.
func Lstat(full, name string) (Dir, error) { return observeDir(full, name, false) }

// Stat is Lstat that follows a link and reads the directory it leads to.
func Stat(full, name string) (Dir, error) { return observeDir(full, name, true) }

func observeDir(full, name string, follow bool) (Dir, error) {
	d := Dir{Path: name}
	li, err := os.Lstat(full)
	if errors.Is(err, os.ErrNotExist) {
		return d, nil
	}
	if err != nil {
		return d, fmt.Errorf("inspect %s: %w", name, err)
	}
	if li.Mode()&os.ModeSymlink != 0 {
		d.Link = true
		if !follow {
			return d, nil
		}
	}
	fi, err := os.Stat(full)
	if err != nil {
		return d, fmt.Errorf("inspect %s: %w", name, err)
	}
	if !fi.IsDir() {
		return d, fmt.Errorf("%s exists and is not a directory (%s); remove it", name, fi.Mode().Type())
	}
	link := d.Link
	d = DirOf(name, fi)
	d.Link = link
	return d, nil
}

// Perm is a file's permission bits with the setuid, setgid and sticky bits, as a mode
// parameter states them.
func Perm(fi os.FileInfo) os.FileMode {
	return fi.Mode().Perm() | fi.Mode()&(os.ModeSetuid|os.ModeSetgid|os.ModeSticky)
}
