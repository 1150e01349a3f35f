package configfile

import (
	"fmt"
	"os"
	"path"
	"slices"
	"strings"

	"github.com/richt/services/pkg/safefile"
)

// Placeholder is what a validator's command has where the new content's path goes.
const Placeholder = "%s"

// Config is one entry of the service's configs as its spec decoded it: names, not ids.
type Config struct {
	// Name is what reactions refer to (config:NAME); messages name the config by it.
	Name    string
	Path    string
	Content string
	// Mode is the file's mode; the caller's spec supplies its default when none is given.
	Mode os.FileMode
	// Owner and Group are names or numeric ids; "" is root.
	Owner, Group string
	Sensitive    bool
	// Validate is a command with Placeholder for the new content's path (it checks this
	// file alone), or without it a tree validator (it checks the whole new tree of the
	// service's configs: the caller runs it, package mountns), or "".
	Validate string
	// Absent: the file must not exist (state absent).
	Absent bool
	// UnitFile: the file is under systemd's unit directories (the service sets it so).
	// What it says root runs (an ExecStartPre= is a command root runs), so it gets the
	// unit files' rule, not a daemon's config's: its owner is root, and every directory
	// above it is root's and writable by neither group nor others
	// (safefile.Dir.Insecure); a daemon's user who could write it, or its directory, could
	// have root run anything. And a move of its content is a unit file change (package
	// contract: unit_files_changed, daemon_reload needed), which the result says.
	UnitFile bool

	// checked: Check accepted the config, and argv is its validator split (nil without
	// one), kept so that Plan need not check and split it again; tree: that validator has
	// no Placeholder.
	checked bool
	argv    []string
	tree    bool
}

// ParamError is a refusal of one of the config's parameters. Its message begins with
// the parameter's name as configfile knows it (path, mode, owner, group, validate): the
// caller, which knows what its users called the entry (configs[2]), names it in its own
// terms, as in fmt.Errorf("configs[%d].%w", i, err).
type ParamError struct {
	Param string
	Err   error
}

func (e *ParamError) Error() string { return e.Err.Error() }
func (e *ParamError) Unwrap() error { return e.Err }

// paramErr is a refusal of param whose message does not name it yet.
func paramErr(param string, format string, args ...any) error {
	return &ParamError{Param: param, Err: fmt.Errorf(param+": "+format, args...)}
}

// named marks err, whose message begins with param's name already (safefile's), as a
// refusal of param.
func named(param string, err error) error {
	if err == nil {
		return nil
	}
	return &ParamError{Param: param, Err: err}
}

// Check refuses what no observation is needed for: a path that is not absolute and
// clean, a mode that others could write through, a validator with no command or with
// unbalanced quotes. It returns the config as checked, its validator split (Argv), which
// Plan takes as it is; a change to the returned config must be checked again.
func (c Config) Check() (Config, error) {
	argv, err := c.check()
	if err != nil {
		return Config{}, err
	}
	c.checked, c.argv = true, argv
	c.tree = len(argv) > 0 && !slices.ContainsFunc(argv, func(a string) bool { return strings.Contains(a, Placeholder) })
	return c, nil
}

// Argv is the validator's argv as Check split it: nil without a validator, or when the
// config was not checked.
func (c Config) Argv() []string { return c.argv }

// Tree is the argv of the config's tree validator (a validator without Placeholder): nil
// when it has none, or was not checked. Plan and Apply do not run it: it checks the
// service's whole new tree, before any config is written.
func (c Config) Tree() []string {
	if !c.tree {
		return nil
	}
	return c.argv
}

// check is Check's rule; it returns the validator's argv (nil without one).
func (c Config) check() ([]string, error) {
	if err := checkPath(c.Path); err != nil {
		return nil, paramErr("path", "%w; nothing was written", err)
	}
	if err := safefile.CheckMode("mode", c.Mode, "config file"); err != nil {
		return nil, named("mode", err)
	}
	if c.UnitFile && !c.Absent {
		switch c.Owner {
		case "", "root", "0":
		default:
			return nil, rootOnlyOwnerErr(c.Path, fmt.Sprintf("%q", c.Owner))
		}
	}
	if c.Validate == "" {
		return nil, nil
	}
	argv, err := SplitArgs(c.Validate)
	if err != nil {
		return nil, paramErr("validate", "%q %w; nothing was written", c.Validate, err)
	}
	if len(argv) == 0 {
		return nil, paramErr("validate", "%q has no command; give one or omit validate", c.Validate)
	}
	return argv, nil
}

// rootOnlyOwnerErr refuses owner, not root, for the UnitFile config at p.
func rootOnlyOwnerErr(p, owner string) error {
	return paramErr("owner", "%s is not root, and %s is under systemd's unit directories, where a file says what systemd runs as root: its owner could make root run anything (an ExecStartPre=); such a config is root's, as a unit file is: give owner root or leave it out; nothing was written", owner, p)
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
