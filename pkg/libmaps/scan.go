package libmaps

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
)

// Scanner reads processes and control groups under its roots.
type Scanner struct {
	// Proc is procfs ("" for /proc).
	Proc string
	// Cgroup is the cgroup filesystem ("" for /sys/fs/cgroup).
	Cgroup string
}

func (s Scanner) proc() string {
	if s.Proc == "" {
		return "/proc"
	}
	return s.Proc
}

func (s Scanner) cgroup() string {
	if s.Cgroup == "" {
		return "/sys/fs/cgroup"
	}
	return s.Cgroup
}

// Process is one process that maps replaced files.
type Process struct {
	PID int `json:"pid"`
	// Command is the process's name (/proc/PID/comm).
	Command string `json:"command"`
	// Files are the stale files it maps, sorted.
	Files []File `json:"files"`
	// MoreFiles is how many more stale files it maps than Files lists (Cap).
	MoreFiles int `json:"more_files,omitempty"`
}

// File is one stale file, with the package that owns its path now ("" when none does, or
// not looked up).
type File struct {
	Path    string `json:"path"`
	Package string `json:"package,omitempty"`
}

// PIDs are the processes of a control group (systemd's ControlGroup, such as
// /system.slice/nginx.service) and of its sub-groups, sorted. On a unified hierarchy the
// group is under the cgroup root; on a hybrid or legacy one, under unified/ or systemd/.
// An empty group, or one that does not exist (the unit does not run), has none.
func (s Scanner) PIDs(group string) ([]int, error) {
	if group == "" {
		return nil, nil
	}
	var dir string
	for _, sub := range []string{"", "unified", "systemd"} {
		d := filepath.Join(s.cgroup(), sub, group)
		if _, err := os.Stat(filepath.Join(d, "cgroup.procs")); err == nil {
			dir = d
			break
		}
	}
	if dir == "" {
		return nil, nil
	}
	var pids []int
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil // a sub-group removed meanwhile
			}
			return err
		}
		if d.IsDir() || d.Name() != "cgroup.procs" {
			return nil
		}
		f, err := os.Open(p)
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err != nil {
			return err
		}
		defer f.Close()
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			pid, err := strconv.Atoi(strings.TrimSpace(sc.Text()))
			if err != nil || pid <= 0 {
				return fmt.Errorf("%s: %q is not a process ID", p, sc.Text())
			}
			pids = append(pids, pid)
		}
		return sc.Err()
	})
	if err != nil {
		return nil, fmt.Errorf("processes of control group %s: %w", group, err)
	}
	slices.Sort(pids)
	return slices.Compact(pids), nil
}

// Stale returns the regular files process pid maps that were deleted or replaced since
// it mapped them, sorted, each once. A process that is gone has none.
func (s Scanner) Stale(pid int) ([]string, error) {
	base := filepath.Join(s.proc(), strconv.Itoa(pid))
	f, err := os.Open(filepath.Join(base, "maps"))
	if err != nil {
		if gone(err) {
			return nil, nil
		}
		return nil, fmt.Errorf("read the mappings of process %d: %w", pid, err)
	}
	defer f.Close()
	ms, err := ParseMaps(f)
	if err != nil {
		if gone(err) {
			return nil, nil
		}
		return nil, fmt.Errorf("mappings of process %d: %w", pid, err)
	}
	var out []string
	for _, m := range ms {
		stale, err := s.stale(base, m)
		if errors.Is(err, errProcessGone) {
			return nil, nil
		}
		if err != nil {
			return nil, fmt.Errorf("process %d: %w", pid, err)
		}
		if stale {
			out = append(out, m.Path)
		}
	}
	slices.Sort(out)
	return slices.Compact(out), nil
}

// stale decides one mapping: deleted, or the path (as the process sees it, under its root)
// now names another file. A path that names no regular file now and is not deleted was
// never one an update replaces (a socket, a directory) unless it is gone.
func (s Scanner) stale(base string, m Mapping) (bool, error) {
	if m.Deleted {
		return true, nil
	}
	var st syscall.Stat_t
	if err := syscall.Stat(filepath.Join(base, "root", m.Path), &st); err != nil {
		if errors.Is(err, syscall.ENOENT) || errors.Is(err, syscall.ENOTDIR) {
			// The file is gone, or the process is: once it has exited its root no longer
			// resolves, and every path below it looks deleted (a daemon's short-lived
			// child, scanned as it ends). Its root, asked after the file, tells them apart.
			if _, rerr := os.Stat(filepath.Join(base, "root") + "/"); rerr != nil {
				return false, errProcessGone
			}
			return true, nil
		}
		if gone(err) {
			return false, nil
		}
		return false, fmt.Errorf("stat %s: %w", m.Path, err)
	}
	if st.Mode&syscall.S_IFMT != syscall.S_IFREG {
		return false, nil
	}
	// The inode decides; the device only where both name the same one (overlayfs shows
	// the layer's device in maps and its own in stat: package documentation).
	return st.Ino != m.Inode, nil
}

// errProcessGone is a process that ended while its mappings were decided: it maps nothing.
var errProcessGone = errors.New("process ended while it was scanned")

// gone reports an error of a process that exited while it was read.
func gone(err error) bool {
	return errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ESRCH)
}

// Command is process pid's name ("" when it is gone).
func (s Scanner) Command(pid int) string {
	b, err := os.ReadFile(filepath.Join(s.proc(), strconv.Itoa(pid), "comm"))
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

// Scan returns the processes of pids that map stale files, by PID, each with every stale
// file (no package looked up yet).
func (s Scanner) Scan(pids []int) ([]Process, error) {
	var out []Process
	for _, pid := range pids {
		files, err := s.Stale(pid)
		if err != nil {
			return nil, err
		}
		if len(files) == 0 {
			continue
		}
		p := Process{PID: pid, Command: s.Command(pid)}
		for _, f := range files {
			p.Files = append(p.Files, File{Path: f})
		}
		out = append(out, p)
	}
	return out, nil
}
