package configfile

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/richt/services/pkg/atomicfile"
	"github.com/richt/services/pkg/rootpath"
	"github.com/richt/services/pkg/safefile"
)

// dir is a config's directory, opened from the root one component at a time without
// following a link, each component checked by the config's trust rule (untrusted) on the
// directory actually opened. Apply changes the file only through it: a directory the
// config's owner can write (the daemon's own, as Debian's /etc/redis) may have a
// directory renamed or replaced by a link between the observation and the change, and a
// path looked up again would then lead elsewhere.
type dir struct {
	f *os.File
	// path is the directory on the target, for messages.
	path string
}

// openDir opens the directory of w.Path below root; f is the config's file as observed
// (a removal trusts its owner). Its errors are the refusals Decide gives for the same
// place: nothing has been changed.
func openDir(root string, w Want, f File) (_ *dir, err error) {
	fd, err := unix.Open(rootpath.Join(root, "/"), unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("%s: open /: %w", label(w.Name, w.Path), err)
	}
	d := &dir{f: os.NewFile(uintptr(fd), "/"), path: "/"}
	defer func() {
		if err != nil {
			d.close()
		}
	}()
	if err := d.trusted(w, f); err != nil {
		return nil, err
	}
	for _, name := range strings.Split(strings.Trim(path.Dir(w.Path), "/"), "/") {
		if name == "" {
			continue
		}
		next := path.Join(d.path, name)
		nfd, err := unix.Openat(d.fd(), name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != nil {
			return nil, d.openErr(w, name, next, err)
		}
		d.close()
		d.f, d.path = os.NewFile(uintptr(nfd), next), next
		if err := d.trusted(w, f); err != nil {
			return nil, err
		}
	}
	return d, nil
}

// openErr is the refusal for a component name of d that openat could not open as a
// directory without following a link.
func (d *dir) openErr(w Want, name, next string, err error) error {
	switch {
	case errors.Is(err, unix.ENOENT):
		return missingDirErr(w, next)
	case errors.Is(err, unix.ENOTDIR), errors.Is(err, unix.ELOOP):
		var st unix.Stat_t
		if serr := unix.Fstatat(d.fd(), name, &st, unix.AT_SYMLINK_NOFOLLOW); serr == nil && st.Mode&unix.S_IFMT == unix.S_IFLNK {
			return linkErr(w, next, "replace the link with a directory")
		}
		return fmt.Errorf("%s: %s exists and is not a directory; nothing was written", label(w.Name, w.Path), next)
	}
	return fmt.Errorf("%s: open %s: %w", label(w.Name, w.Path), next, err)
}

// trusted applies the config's trust rule to the directory open in d.
func (d *dir) trusted(w Want, f File) error {
	fi, err := d.f.Stat()
	if err != nil {
		return fmt.Errorf("%s: inspect %s: %w", label(w.Name, w.Path), d.path, err)
	}
	return untrusted(w, f, safefile.DirOf(d.path, fi))
}

func (d *dir) fd() int { return int(d.f.Fd()) }

func (d *dir) close() { _ = d.f.Close() }

// sync makes renames and removals in the directory durable.
func (d *dir) sync() error {
	if err := d.f.Sync(); err != nil {
		return fmt.Errorf("sync directory %s: %w", d.path, err)
	}
	return nil
}

// open opens the regular file base in d for its attributes, never through a link and
// never blocking on what is not a regular file.
func (d *dir) open(base string) (*os.File, error) {
	p := path.Join(d.path, base)
	fd, err := unix.Openat(d.fd(), base, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("open %s without following a link: %w", p, err)
	}
	f := os.NewFile(uintptr(fd), p)
	fi, err := f.Stat()
	if err == nil && !fi.Mode().IsRegular() {
		err = fmt.Errorf("not a regular file (%s) any more", fi.Mode().Type())
	}
	if err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("inspect %s: %w", p, err)
	}
	return f, nil
}

// chown gives base uid and gid after narrowing its mode to narrow, as safefile.Chown does,
// through the file it opened.
func (d *dir) chown(base string, narrow os.FileMode, uid, gid int) error {
	f, err := d.open(base)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := f.Chmod(narrow); err != nil {
		return fmt.Errorf("set mode of %s: %w", f.Name(), err)
	}
	if err := f.Chown(uid, gid); err != nil {
		return fmt.Errorf("set owner of %s: %w", f.Name(), err)
	}
	return nil
}

// chmod sets base's mode through the file it opened.
func (d *dir) chmod(base string, mode os.FileMode) error {
	f, err := d.open(base)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := f.Chmod(mode); err != nil {
		return fmt.Errorf("set mode of %s: %w", f.Name(), err)
	}
	return nil
}

// remove removes base (absent is fine; a link is removed, not followed) and syncs d. An
// error before the removal wraps atomicfile.ErrNotReplaced.
func (d *dir) remove(base string) error {
	p := path.Join(d.path, base)
	if err := unix.Unlinkat(d.fd(), base, 0); err != nil && !errors.Is(err, unix.ENOENT) {
		return fmt.Errorf("%s %w: remove: %w", p, atomicfile.ErrNotReplaced, err)
	}
	return d.sync()
}

// temp is a config's new content beside it in d, held open: the file this run created,
// told from any other put at its name since by device and inode (an open file's inode is
// not reused). It is root's alone (0600) until handOver gives it its final attributes, once
// it is at the config's path.
type temp struct {
	d    *dir
	name string
	f    *os.File
	// done: discarded or renamed; the descriptor is closed (after a rename, once replace
	// has handed the file over through it).
	done bool
}

// create writes w's content to a new temporary file in d, named as atomicfile names a
// path's (a killed run's leftover is Stale): created exclusively and never through a
// link, root's with mode 0600, written and synced. It stays root's until it is at the
// config's path: a config's owner who could write it could change the content after the
// validator (run on a copy, ValidateDir) accepted it. An error leaves nothing behind.
func (d *dir) create(w Want) (*temp, error) {
	prefix := atomicfile.TempPrefix(w.Path)
	for range 100 {
		name := prefix + strconv.FormatUint(uint64(rand.Uint32()), 10)
		fd, err := unix.Openat(d.fd(), name, unix.O_RDWR|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
		if errors.Is(err, unix.EEXIST) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("create temporary file in %s: %w", d.path, err)
		}
		t := &temp{d: d, name: name, f: os.NewFile(uintptr(fd), path.Join(d.path, name))}
		if err := t.fill(w.Content); err != nil {
			return nil, errors.Join(err, t.discard())
		}
		return t, nil
	}
	return nil, fmt.Errorf("create temporary file in %s: no free name after 100 tries", d.path)
}

// fill writes the content to the empty temporary file and syncs it.
func (t *temp) fill(content []byte) error {
	if _, err := t.f.Write(content); err != nil {
		return fmt.Errorf("write %s: %w", t.f.Name(), err)
	}
	if err := t.f.Sync(); err != nil {
		return fmt.Errorf("sync %s: %w", t.f.Name(), err)
	}
	return nil
}

// handOver gives the temporary file, through its descriptor, w's owner, then its mode
// (chown may clear set-id bits), and syncs them. It runs once the file is at the config's
// path with its final content: until then the file is root's alone, so the owner, who
// may write it afterwards, cannot change what was validated before it is installed.
func (t *temp) handOver(w Want) error {
	if err := t.f.Chown(w.UID, w.GID); err != nil {
		return fmt.Errorf("set owner of %s: %w", w.Path, err)
	}
	if err := t.f.Chmod(w.Mode); err != nil {
		return fmt.Errorf("set mode of %s: %w", w.Path, err)
	}
	if err := t.f.Sync(); err != nil {
		return fmt.Errorf("sync %s: %w", w.Path, err)
	}
	return nil
}

// holds refuses a temporary file whose content is not content, read through its
// descriptor: only root could have written it, but what is renamed into place must be
// what was validated, not what it was believed to be.
func (t *temp) holds(content []byte) error {
	buf := make([]byte, len(content)+1)
	n, err := t.f.ReadAt(buf, 0)
	if err != nil && !errors.Is(err, io.EOF) {
		return fmt.Errorf("read back %s: %w", t.f.Name(), err)
	}
	if !bytes.Equal(buf[:n], content) {
		return fmt.Errorf("the temporary file %s no longer holds the content validated: the new content is not installed", t.f.Name())
	}
	return nil
}

// same refuses a temporary file that is no longer the one create made: its name now
// holds another file (or none), which whoever can write the directory put there.
func (t *temp) same() error {
	if t.at(t.name) {
		return nil
	}
	return fmt.Errorf("the temporary file %s was replaced while being written (another file, or none, is at its name; whoever can write %s can do that): the new content is not installed", t.f.Name(), t.d.path)
}

// at reports whether name in the directory is, without following a link, the regular
// file create made: the same device and inode as the descriptor held (an open file's
// inode is not reused).
func (t *temp) at(name string) bool {
	var at, own unix.Stat_t
	if err := unix.Fstatat(t.d.fd(), name, &at, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return false
	}
	if err := unix.Fstat(int(t.f.Fd()), &own); err != nil {
		return false
	}
	return at.Mode&unix.S_IFMT == unix.S_IFREG && at.Dev == own.Dev && at.Ino == own.Ino
}

// replace renames the temporary file over w's path once more proven the one create made
// and holding w's content, checks that the path then holds it, hands it over (handOver)
// and syncs the directory. renamed, when set, runs right after the rename (tests). An
// error before the rename removes the temporary file (when it is still this run's) and
// wraps atomicfile.ErrNotReplaced. Another file at the path right after the rename (the
// directory's writer swapped names between the check and the rename, or just after it)
// fails loudly: the path changed, but not to this run's file, which is not handed over.
func (t *temp) replace(w Want, renamed func()) error {
	target, base := w.Path, path.Base(w.Path)
	if err := t.holds(w.Content); err != nil {
		return fmt.Errorf("%s %w: %w", target, atomicfile.ErrNotReplaced, errors.Join(err, t.discard()))
	}
	if err := t.same(); err != nil {
		return fmt.Errorf("%s %w: %w", target, atomicfile.ErrNotReplaced, errors.Join(err, t.discard()))
	}
	if err := unix.Renameat(t.d.fd(), t.name, t.d.fd(), base); err != nil {
		return fmt.Errorf("%s %w: rename %s: %w", target, atomicfile.ErrNotReplaced, t.f.Name(), errors.Join(err, t.discard()))
	}
	t.done = true
	defer t.f.Close()
	if renamed != nil {
		renamed()
	}
	if !t.at(base) {
		return fmt.Errorf("%s was replaced by another file right as it was renamed into place (whoever can write %s can do that): the path does not hold the content validated, and the file written (root's, mode 0600) was not handed to its owner; nothing run by this task may trust %s now: look at what it holds", target, t.d.path, target)
	}
	if err := t.handOver(w); err != nil {
		return fmt.Errorf("%s replaced, but %w", target, err)
	}
	if err := t.d.sync(); err != nil {
		// Replaced, but the rename may not survive a crash: not "unchanged".
		return fmt.Errorf("%s replaced, but %w", target, err)
	}
	return nil
}

// discard removes the temporary file if its name still holds it (another file put there
// is not this run's to remove), and closes it.
func (t *temp) discard() error {
	if t.done {
		return nil
	}
	t.done = true
	defer t.f.Close()
	if t.same() != nil {
		return nil
	}
	if err := unix.Unlinkat(t.d.fd(), t.name, 0); err != nil && !errors.Is(err, unix.ENOENT) {
		return fmt.Errorf("remove temporary file %s: %w", t.f.Name(), err)
	}
	return nil
}
