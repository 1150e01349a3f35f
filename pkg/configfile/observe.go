package configfile

import (
	"errors"
	"fmt"
	"os"

	"github.com/richt/services/pkg/atomicfile"
	"github.com/richt/services/pkg/filemode"
	"github.com/richt/services/pkg/rootpath"
	"github.com/richt/services/pkg/safefile"
)

// File is the config's path as Observe found it; it reads, and changes nothing.
type File struct {
	safefile.File
	// Link: the path itself is a symbolic link (not read).
	Link bool
	// Stale are temporary files of this path that a killed run left behind.
	Stale []string
	// Dirs are the directories above the path, outermost first ("/" first), up to the
	// first that is a link or missing: nothing below one of those is looked at.
	Dirs []safefile.Dir
}

// Observe reads the config at p (absolute, clean) below root ("" or "/" for the real
// one), every directory above it (links not followed), and the temporary files a killed
// run left beside it; it changes nothing.
func Observe(root, p string) (File, error) {
	under := func(q string) string { return rootpath.Join(root, q) }
	var f File
	for _, dp := range ancestors(p) {
		d, err := safefile.Lstat(under(dp), dp)
		if err != nil {
			return f, err
		}
		f.Dirs = append(f.Dirs, d)
		if d.Link || !d.Exists {
			return f, nil
		}
	}
	full := under(p)
	li, err := os.Lstat(full)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return f, fmt.Errorf("inspect %s: %w", p, err)
	}
	if err == nil && li.Mode()&os.ModeSymlink != 0 {
		f.Link = true
		return f, nil
	}
	if f.Stale, err = atomicfile.Stale(full); err != nil {
		return f, err
	}
	if f.File, err = safefile.ReadFile(full); err != nil {
		return f, err
	}
	return f, nil
}

// ancestors are the directories above p, outermost first: /etc/a/b.conf → /, /etc, /etc/a.
func ancestors(p string) []string {
	out := []string{"/"}
	for i := 1; i < len(p); i++ {
		if p[i] == '/' {
			out = append(out, p[:i])
		}
	}
	return out
}

// refusal says why a plan for w cannot be carried out in the place f describes, or nil.
func refusal(w Want, f File) error {
	for _, d := range f.Dirs {
		switch {
		case d.Link:
			return linkErr(w, d.Path, "replace the link with a directory")
		case !d.Exists:
			if !w.Present {
				return nil // nothing below it to remove
			}
			return missingDirErr(w, d.Path)
		}
		if err := untrusted(w, f, d); err != nil {
			return err
		}
	}
	if f.Link {
		return linkErr(w, w.Path, "remove the link")
	}
	return nil
}

// linkErr refuses the link at p (the config's path or a directory above it).
func linkErr(w Want, p, fix string) error {
	return fmt.Errorf("%s: %s is a symbolic link: a config is never written or removed through a link; give the path it leads to, or %s; nothing was written", label(w.Name, w.Path), p, fix)
}

// missingDirErr refuses the missing directory p above a config that is wanted.
func missingDirErr(w Want, p string) error {
	return fmt.Errorf("%s: the directory %s does not exist; directories are not created for a config: install the package that owns it first, or create it in an earlier task; nothing was written", label(w.Name, w.Path), p)
}

// untrusted refuses a directory d above the config that someone other than root and the
// config's owner can write (safefile.Dir.Untrusted), or, for a UnitFile config, that
// anyone but root can write (safefile.Dir.Insecure, the unit files' rule), naming it, its owner
// and mode, and what is accepted. The ids trusted are the wanted ones; for a removal,
// which resolves none, the file's own, and a file that is not there trusts no directory
// it would need: there is nothing to remove.
func untrusted(w Want, f File, d safefile.Dir) error {
	uid, gid := w.UID, w.GID
	if !w.Present {
		if !f.Exists {
			return nil
		}
		uid, gid = f.UID, f.GID
	}
	if w.UnitFile {
		if why := d.Insecure(); why != "" {
			return fmt.Errorf("%s: %s (owner uid %d, group gid %d, mode %04o) is %s: the config is under systemd's unit directories, where a file says what systemd runs as root, so its directories follow the unit files' rule: owned by root and writable by neither group nor others; make it so (chown root:root %s; chmod go-w %s); nothing was written",
				label(w.Name, w.Path), d.Path, d.UID, d.GID, filemode.Unix(d.Mode), why, d.Path, d.Path)
		}
		return nil
	}
	why := d.Untrusted(uid, gid)
	if why == "" {
		return nil
	}
	return fmt.Errorf("%s: %s (owner uid %d, group gid %d, mode %04o) is %s: whoever can write it can replace the config the daemon reads; a config's directory is accepted when owned by root or by the config's owner (uid %d), writable by group only for group root or, when owned by the config's owner and that is not root, for the config's group (gid %d), and never writable by others; nothing was written",
		label(w.Name, w.Path), d.Path, d.UID, d.GID, filemode.Unix(d.Mode), why, uid, gid)
}
