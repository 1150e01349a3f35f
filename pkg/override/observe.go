package override

import (
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/richt/services/pkg/atomicfile"
	"github.com/richt/services/pkg/rootpath"
	"github.com/richt/services/pkg/safefile"
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
	sf, err := safefile.ReadFile(full)
	if err != nil {
		return File{}, err
	}
	return File{Exists: sf.Exists, Content: sf.Content, Mode: sf.Mode, UID: sf.UID, GID: sf.GID, Stale: stale, Dirs: dirs}, nil
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
		// The unit directory is followed; a drop-in directory's link is judged first.
		observe := safefile.Stat
		if d.DropIn {
			observe = safefile.Lstat
		}
		sd, err := observe(full, dp)
		if err != nil {
			return nil, err
		}
		if !sd.Exists && !sd.Link {
			dirs = append(dirs, d)
			continue
		}
		if sd.Link && d.DropIn {
			target, err := filepath.EvalSymlinks(full)
			if err != nil {
				return nil, fmt.Errorf("resolve the link %s: %w", dp, err)
			}
			if unitDir == "" || (target != unitDir && !strings.HasPrefix(target, unitDir+string(filepath.Separator))) {
				d.Outside = target
				dirs = append(dirs, d)
				continue
			}
			// A drop-in directory linked inside the unit directory: what it leads to.
			if sd, err = safefile.Stat(full, dp); err != nil {
				return nil, err
			}
		}
		d.Exists, d.Mode, d.UID = sd.Exists, sd.Mode, sd.UID
		dirs = append(dirs, d)
	}
	return dirs, nil
}
