package rollback

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"unicode"

	"github.com/richt/services/pkg/nevra"
)

// RestoreScript is the `dnf shell` script that puts builds back in one DNF transaction:
// `install PATH` for each kept RPM file (DNF downgrades or upgrades to it), `remove NAME`
// for each package the change added, then `run`. DNF 4's shell splits each line with
// Python's shlex.split (dnf/cli/commands/shell.py), so a path with whitespace, a quote or
// a backslash is refused rather than quoted, as is anything that is not an absolute .rpm
// path or a plain package name.
func RestoreScript(install []string, remove []string) ([]byte, error) {
	if len(install) == 0 && len(remove) == 0 {
		return nil, errors.New("restore script: nothing to install or remove")
	}
	var b strings.Builder
	for _, p := range install {
		if err := checkRestorePath(p); err != nil {
			return nil, fmt.Errorf("restore script: install: %w", err)
		}
		b.WriteString("install " + p + "\n")
	}
	for _, name := range remove {
		if err := nevra.ValidateName(name); err != nil {
			return nil, fmt.Errorf("restore script: remove: %w", err)
		}
		b.WriteString("remove " + name + "\n")
	}
	b.WriteString("run\n")
	return []byte(b.String()), nil
}

// checkRestorePath accepts an absolute, clean path ending in .rpm (what DNF takes for a
// local file rather than a package spec) that the shell's line splitting leaves whole.
func checkRestorePath(p string) error {
	switch {
	case p == "":
		return errors.New("empty path")
	case !filepath.IsAbs(p) || filepath.Clean(p) != p:
		return fmt.Errorf("path %+q is not absolute and clean", p)
	case !strings.HasSuffix(p, ".rpm"):
		return fmt.Errorf("path %+q does not end in .rpm", p)
	}
	for _, r := range p {
		if unicode.IsSpace(r) || unicode.IsControl(r) || r > unicode.MaxASCII || strings.ContainsRune(`'"\`, r) {
			return fmt.Errorf("path %+q has %+q, which DNF's shell would not read as part of one path", p, r)
		}
	}
	return nil
}

// RestoreArgv runs a RestoreScript written to script. A repository that has gone away
// must not stop a restore that needs only kept files, so unreachable repositories are
// skipped (without it DNF fails when a repository's metadata cannot be read).
//
// Its exit code proves nothing: DNF 4's shell (dnf/cli/commands/shell.py) logs a line
// that fails and goes on with the next, and its `run` swallows a failed transaction. The
// caller reads the installed builds back afterwards to know what was restored.
//
// With gpgcheck (a kept build came from a repository with gpgcheck on), DNF checks the
// signatures of the local files it installs (localpkg_gpgcheck, off by default), against
// rpm's keyring, as it checked them from that repository: the kept file is installed only
// if it is signed as one DNF would install from there.
func RestoreArgv(manager, script string, gpgcheck bool) []string {
	return restoreArgv(manager, "--setopt=skip_if_unavailable=True", script, gpgcheck)
}

// RestoreArgvOffline is RestoreArgv with every repository disabled: the kept files and the
// installed packages alone, without reading any repository's metadata.
func RestoreArgvOffline(manager, script string, gpgcheck bool) []string {
	return restoreArgv(manager, "--disablerepo=*", script, gpgcheck)
}

func restoreArgv(manager, repos, script string, gpgcheck bool) []string {
	argv := []string{manager, "-y", repos}
	if gpgcheck {
		argv = append(argv, "--setopt=localpkg_gpgcheck=True")
	}
	return append(argv, "shell", script)
}
