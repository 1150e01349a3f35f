package rpmexact

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/richt/services/pkg/dnfscript"
	"github.com/richt/services/pkg/runner"
)

// ErrUnsupportedManager is returned when the manager is not DNF 4.
var ErrUnsupportedManager = errors.New("unsupported package manager")

var dnf4Version = regexp.MustCompile(`^4\.[0-9]+(\.[0-9]+)*$`)

// CheckManager accepts DNF 4 (as dnf, or as DNF 4's yum compatibility command) only.
// `dnf --version` prints the version on its first line, then, on RPM distributions,
// package lines; only the first line is read.
func CheckManager(ctx context.Context, r runner.Runner, manager string) (string, error) {
	res, err := r.Run(ctx, manager, "--version")
	if err != nil {
		return "", fmt.Errorf("check %s version: %w", manager, err)
	}
	first, _, _ := strings.Cut(strings.TrimSpace(res.Stdout), "\n")
	first = strings.TrimSpace(first)
	if res.ExitCode != 0 {
		return "", fmt.Errorf("check %s version: exit %d: %s", manager, res.ExitCode, res.Output())
	}
	if !dnf4Version.MatchString(first) {
		found := first
		switch {
		case strings.Contains(first, "dnf5") || strings.HasPrefix(first, "5."):
			found = "DNF 5 (" + first + ")"
		case strings.HasPrefix(first, "3."):
			found = "YUM 3 (" + first + ")"
		case first == "":
			found = "no version"
		}
		return "", fmt.Errorf("%w: %s --version reports %s; rpm_exact works with DNF 4 only (manager: dnf, or yum where yum is DNF 4's compatibility command)",
			ErrUnsupportedManager, manager, found)
	}
	return first, nil
}

// findDNF is what the interpreter runs to say where it imports dnf from, without importing
// it (importing dnf is what makes `dnf --version` take about 0.4 s). -I: isolated, as
// neither the working directory nor PYTHON* variables are the manager's.
const findDNF = `import importlib.util as u; s = u.find_spec("dnf"); print(s.origin if s and s.origin else "")`

// ManagerFiles reads the manager's files for QuickManagerVersion: Locate resolves a command
// through PATH and symlinks, ReadFile reads a file (dnfscript.LocateCommand and
// dnfscript.ReadFile on a real host).
type ManagerFiles struct {
	Locate   func(command string) (string, error)
	ReadFile func(path string) ([]byte, error)
}

// QuickManagerVersion reads DNF 4's version from the dnf package the manager's own
// interpreter imports: the version is a constant there (dnf/const.py), so about 30 ms
// instead of the 0.4 s of `dnf --version`. It answers only when every step has DNF 4's
// layout: the command is a script with an interpreter on its #! line, the script runs
// dnf.cli, the interpreter finds a dnf package, and its const.py sets a DNF 4 VERSION.
// Anything else (DNF 5 is a compiled program) gives ok=false, and the caller asks
// `dnf --version`, which is the check that refuses.
func QuickManagerVersion(ctx context.Context, r runner.Runner, files ManagerFiles, manager string) (version string, ok bool) {
	script, err := files.Locate(manager)
	if err != nil {
		return "", false
	}
	src, err := files.ReadFile(script)
	if err != nil {
		return "", false
	}
	interp, ok := dnfscript.Interpreter(src)
	if !ok || !strings.Contains(string(src), "dnf.cli") {
		return "", false
	}
	res, err := r.Run(ctx, interp, "-I", "-c", findDNF)
	if err != nil || res.ExitCode != 0 {
		return "", false
	}
	origin := strings.TrimSpace(res.Stdout)
	if !strings.HasSuffix(origin, "/dnf/__init__.py") {
		return "", false
	}
	constants, err := files.ReadFile(strings.TrimSuffix(origin, "__init__.py") + "const.py")
	if err != nil {
		return "", false
	}
	v, ok := ConstVersion(constants)
	if !ok || !dnf4Version.MatchString(v) {
		return "", false
	}
	return v, true
}

var constVersionLine = regexp.MustCompile(`(?m)^VERSION\s*=\s*(?:'([^'\n]*)'|"([^"\n]*)")\s*(?:#.*)?$`)

// ConstVersion is the VERSION that dnf/const.py assigns at the top level, when exactly one
// line assigns it a plain string.
func ConstVersion(src []byte) (string, bool) {
	m := constVersionLine.FindAllSubmatch(src, -1)
	if len(m) != 1 {
		return "", false
	}
	return string(m[0][1]) + string(m[0][2]), true
}

// checkManager is CheckManager, skipped when the same executable passed before; it reads
// only. fresh is the executable's identity when a check ran that Apply is to remember
// (rememberManager; check mode writes nothing), "" when there is nothing to remember.
func (d Deps) checkManager(ctx context.Context, manager string) (version, fresh string, err error) {
	id := ""
	if d.Memo != nil && d.Identify != nil {
		if i, err := d.Identify(manager); err == nil {
			id = i
			if v, ok := d.Memo.ManagerChecked(manager, id); ok {
				return v, "", nil
			}
		}
	}
	v, ok := "", false
	if d.Files != nil {
		v, ok = QuickManagerVersion(ctx, d.Runner, *d.Files, manager)
	}
	if !ok {
		v, err = CheckManager(ctx, d.Runner, manager)
	}
	if err != nil {
		return v, "", err
	}
	return v, id, nil
}

// rememberManager records an accepted check under the executable's identity, so the next
// transaction with the same executable does not ask again. Only an accepted check is
// remembered.
func (d Deps) rememberManager(manager, id, version string) error {
	if id == "" || d.Memo == nil {
		return nil
	}
	return d.Memo.RecordManagerCheck(manager, id, version)
}
