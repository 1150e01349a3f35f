package configfile

import (
	"fmt"
	"os"
	"path"
	"strings"
	"time"

	"github.com/richt/services/pkg/safefile"
)

// Placeholder is what a validator's command has where the new content's path goes.
const Placeholder = "%s"

// Config is one entry of the service's configs as its spec decoded it: names, not ids.
type Config struct {
	// Index is the entry's place in configs, for messages naming the parameter
	// (configs[2].path).
	Index int
	// Origin, when set, names the entry in messages instead of configs[Index]: a file a
	// rollback puts back is no entry of the task's configs.
	Origin string
	// Name is what reactions refer to (config:NAME); messages name the config by it.
	Name    string
	Path    string
	Content string
	// Mode is the file's mode; the caller's spec supplies its default when none is given.
	Mode os.FileMode
	// Owner and Group are names or numeric ids; "" is root.
	Owner, Group string
	Sensitive    bool
	// Validate is a command with Placeholder for the new content's path, or "".
	Validate string
	// Absent: the file must not exist (state absent).
	Absent bool
	// RootOnly: what the file says root runs (the service sets it for a config under
	// systemd's unit directories, where an ExecStartPre= is a command root runs), so it
	// gets the unit files' rule, not a daemon's config's: its owner is root, and every
	// directory above it is root's and writable by neither group nor others
	// (safefile.Dir.Insecure). A daemon's user who could write it, or its directory, could
	// have root run anything.
	RootOnly bool
	// Timeout is the deadline of the caller's step for this config (its Plan and its
	// Apply, the validator included); configfile runs under the context it is given and
	// does not read it. 0: the caller's default.
	Timeout time.Duration

	// checked: Check accepted the config, and argv is its validator split (nil without
	// one), kept so that Plan need not check and split it again.
	checked bool
	argv    []string
}

// param names one of the entry's parameters.
func (c Config) param(field string) string {
	if c.Origin != "" {
		return fmt.Sprintf("%s (%s)", c.Origin, field)
	}
	return fmt.Sprintf("configs[%d].%s", c.Index, field)
}

// Check refuses what no observation is needed for: a path that is not absolute and
// clean, a mode that others could write through, a validator without Placeholder or with
// unbalanced quotes. It returns the config as checked, its validator split (Argv), which
// Plan takes as it is; a change to the returned config must be checked again.
func (c Config) Check() (Config, error) {
	argv, err := c.check()
	if err != nil {
		return Config{}, err
	}
	c.checked, c.argv = true, argv
	return c, nil
}

// Argv is the validator's argv as Check split it: nil without a validator, or when the
// config was not checked.
func (c Config) Argv() []string { return c.argv }

// check is Check's rule; it returns the validator's argv (nil without one).
func (c Config) check() ([]string, error) {
	if err := checkPath(c.Path); err != nil {
		return nil, fmt.Errorf("%s: %w; nothing was written", c.param("path"), err)
	}
	if err := safefile.CheckMode(c.param("mode"), c.Mode, "config file"); err != nil {
		return nil, err
	}
	if c.RootOnly && !c.Absent {
		switch c.Owner {
		case "", "root", "0":
		default:
			return nil, rootOnlyOwnerErr(c.param("owner"), c.Path, fmt.Sprintf("%q", c.Owner))
		}
	}
	if c.Validate == "" {
		return nil, nil
	}
	argv, err := SplitArgs(c.Validate)
	if err != nil {
		return nil, fmt.Errorf("%s: %q %w; nothing was written", c.param("validate"), c.Validate, err)
	}
	if len(argv) == 0 {
		return nil, fmt.Errorf("%s: %q has no command; give one or omit validate", c.param("validate"), c.Validate)
	}
	for _, a := range argv {
		if strings.Contains(a, Placeholder) {
			return argv, nil
		}
	}
	return nil, fmt.Errorf("%s: %q has no %s for the new content's path (for example %q); the validator would not check the new file", c.param("validate"), c.Validate, Placeholder, argv[0]+" "+Placeholder)
}

// rootOnlyOwnerErr refuses owner, not root, for the RootOnly config at p.
func rootOnlyOwnerErr(param, p, owner string) error {
	return fmt.Errorf("%s: %s is not root, and %s is under systemd's unit directories, where a file says what systemd runs as root: its owner could make root run anything (an ExecStartPre=); such a config is root's, as a unit file is: give owner root or leave it out; nothing was written", param, owner, p)
}

// checkPath says why p is not an absolute, clean path to a file, or nil.
func checkPath(p string) error {
	switch {
	case p == "":
		return fmt.Errorf("required")
	case strings.ContainsRune(p, 0):
		return fmt.Errorf("%q contains a NUL byte", p)
	case !strings.HasPrefix(p, "/"):
		return fmt.Errorf("%q is relative; give the absolute path", p)
	case p == "/" || strings.HasSuffix(p, "/"):
		return fmt.Errorf("%q ends in a slash; give the path of the file", p)
	}
	for _, part := range strings.Split(p, "/") {
		if part == ".." {
			return fmt.Errorf("%q has a \"..\" component; give the path without it", p)
		}
	}
	if clean := path.Clean(p); clean != p {
		return fmt.Errorf("%q is not clean; write %q", p, clean)
	}
	return nil
}

// label names the config in messages: its name and path.
func label(name, p string) string {
	if name == "" {
		return "config " + p
	}
	return fmt.Sprintf("config %q (%s)", name, p)
}
