package libmaps

import (
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
)

// Services are the control groups of the services under the system slice and its
// sub-slices (/system.slice/NAME.service, /system.slice/x.slice/NAME.service), sorted: what
// a host-wide scan (cmd/richt-stale) reads, where the modules read one unit's group.
//
// The manager's own group (PID 1's, without its init.scope) is where its slices are: the
// cgroup root on a host, /docker/ID in a container that shares the host's cgroup
// namespace. Paths are returned as the manager names them (its ControlGroup).
func (s Scanner) Services() ([]string, error) {
	root := s.cgroup()
	own := s.managerGroup()
	for _, sub := range []string{"", "unified", "systemd"} {
		if _, err := os.Stat(filepath.Join(root, sub, own, "system.slice", "cgroup.procs")); err == nil {
			root = filepath.Join(root, sub)
			break
		}
	}
	root = filepath.Join(root, own)
	var out []string
	var walk func(dir string) error
	walk = func(dir string) error {
		entries, err := os.ReadDir(dir)
		if err != nil {
			return err
		}
		for _, e := range entries {
			if !e.IsDir() {
				continue
			}
			switch p := filepath.Join(dir, e.Name()); {
			case strings.HasSuffix(e.Name(), ".service"):
				out = append(out, path.Join(own, strings.TrimPrefix(p, root)))
			case strings.HasSuffix(e.Name(), ".slice"):
				if err := walk(p); err != nil {
					return err
				}
			}
		}
		return nil
	}
	if err := walk(filepath.Join(root, "system.slice")); err != nil {
		return nil, err
	}
	slices.Sort(out)
	return out, nil
}

// managerGroup is PID 1's control group on the unified hierarchy without its init.scope
// ("" when it cannot be read, or is the root).
func (s Scanner) managerGroup() string {
	b, err := os.ReadFile(filepath.Join(s.proc(), "1", "cgroup"))
	if err != nil {
		return ""
	}
	for _, line := range strings.Split(string(b), "\n") {
		if g, ok := strings.CutPrefix(line, "0::"); ok {
			g = strings.TrimSuffix(g, "/init.scope")
			if g == "/" {
				return ""
			}
			return g
		}
	}
	return ""
}
