package override

import (
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/richt/services/pkg/atomicfile"
	"github.com/richt/services/pkg/rootpath"
)

// Observe reads the owned file p (a path under UnitDir) below root ("" or "/" for the
// real one), the temporary files a killed run left beside it, and the directories it lives
// in; it changes nothing.
func Observe(root, p string) (File, error) {
	under := func(q string) string { return rootpath.Join(root, q) }
	full := under(p)
	dirs, err := observeDirs(under, p)
	if err != nil {
		return File{}, err
	}
	for _, d := range dirs {
		if d.Outside != "" {
			// Nothing is read through a link that leads elsewhere: Decide refuses it.
			return File{Dirs: dirs}, nil
		}
	}
	stale, err := atomicfile.Stale(full)
	if err != nil {
		return File{}, err
	}
	fi, err := os.Lstat(full)
	if errors.Is(err, os.ErrNotExist) {
		return File{Stale: stale, Dirs: dirs}, nil
	}
	if err != nil {
		return File{}, fmt.Errorf("inspect %s: %w", full, err)
	}
	if !fi.Mode().IsRegular() {
		return File{}, fmt.Errorf("%s exists and is not a regular file (%s); remove it or choose another name", full, fi.Mode().Type())
	}
	data, err := os.ReadFile(full)
	if err != nil {
		return File{}, fmt.Errorf("read %s: %w", full, err)
	}
	st, _ := fi.Sys().(*syscall.Stat_t)
	f := File{Exists: true, Content: data, Mode: fi.Mode().Perm() | fi.Mode()&(os.ModeSetuid|os.ModeSetgid|os.ModeSticky), Stale: stale, Dirs: dirs}
	if st != nil {
		f.UID, f.GID = int(st.Uid), int(st.Gid)
	}
	return f, nil
}

// observeDirs reads the unit directory and, for a drop-in, its UNIT.d: whether each exists,
// whether it is a link that leads out of the unit directory, and the owner and mode of
// the directory it is (or leads to).
func observeDirs(under func(string) string, p string) ([]Dir, error) {
	paths := []string{UnitDir}
	if dir := path.Dir(p); dir != UnitDir {
		paths = append(paths, dir)
	}
	unitDir, err := filepath.EvalSymlinks(under(UnitDir))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("resolve %s: %w", UnitDir, err)
	}
	var dirs []Dir
	for i, dp := range paths {
		d := Dir{Path: dp, DropIn: i > 0}
		full := under(dp)
		li, err := os.Lstat(full)
		if errors.Is(err, os.ErrNotExist) {
			dirs = append(dirs, d)
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("inspect %s: %w", dp, err)
		}
		if li.Mode()&os.ModeSymlink != 0 && d.DropIn {
			target, err := filepath.EvalSymlinks(full)
			if err != nil {
				return nil, fmt.Errorf("resolve the link %s: %w", dp, err)
			}
			if unitDir == "" || (target != unitDir && !strings.HasPrefix(target, unitDir+string(filepath.Separator))) {
				d.Outside = target
				dirs = append(dirs, d)
				continue
			}
		}
		fi, err := os.Stat(full)
		if err != nil {
			return nil, fmt.Errorf("inspect %s: %w", dp, err)
		}
		if !fi.IsDir() {
			return nil, fmt.Errorf("%s exists and is not a directory (%s); remove it", dp, fi.Mode().Type())
		}
		d.Exists, d.Mode = true, fi.Mode().Perm()|fi.Mode()&(os.ModeSetuid|os.ModeSetgid|os.ModeSticky)
		if st, ok := fi.Sys().(*syscall.Stat_t); ok {
			d.UID = int(st.Uid)
		}
		dirs = append(dirs, d)
	}
	return dirs, nil
}
