package configfile

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/richt/services/pkg/rootpath"
	"github.com/richt/services/pkg/statedir"
)

// ValidateDir is where a validator reads the new content (below Deps.Root): a directory
// root's alone, on /run since nothing in it outlives the run. The validator runs as root,
// and a path in the config's own directory would be a path its owner can point elsewhere
// (swap the temporary file for its own, or for a link to /etc/shadow, while the validator
// reads it; renameat2 RENAME_EXCHANGE makes that a loop with no gap). The cost: the copy
// lives elsewhere, so a validator that resolves relative paths against the file's
// directory (nginx's relative include) sees this directory, not the config's.
const ValidateDir = "/run/richt/validate"

// validationCopy writes content as base (the config's own name, for validators that go by
// it) in a new directory of its own (0700, made by mkdir, so no one else's) below dir,
// which is made root's (0700) when missing and refused when another user owns it, group
// or others can write it or a directory above it (statedir's rule). It returns the copy's
// path and how to remove it.
func validationCopy(dir, base string, content []byte) (string, func() error, error) {
	if err := statedir.Ensure(dir, 0o700); err != nil {
		return "", nil, fmt.Errorf("prepare the validator's copy: %w", err)
	}
	if err := statedir.CheckAncestors(dir); err != nil {
		return "", nil, fmt.Errorf("prepare the validator's copy: %w", err)
	}
	own, err := os.MkdirTemp(dir, "run-")
	if err != nil {
		return "", nil, fmt.Errorf("prepare the validator's copy: %w", err)
	}
	remove := func() error {
		if err := os.RemoveAll(own); err != nil {
			return fmt.Errorf("remove the validator's copy %s: %w", own, err)
		}
		return nil
	}
	p := filepath.Join(own, base)
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0o600)
	if err == nil {
		_, err = f.Write(content)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}
	if err != nil {
		return "", nil, errors.Join(fmt.Errorf("write the validator's copy %s: %w", p, err), remove())
	}
	return p, remove, nil
}

// validate runs the validator under ctx (the step's deadline) on a copy of the new content
// in ValidateDir, never on the temporary file beside the config: root reads only what
// nobody else can reach. Its output is the user's best hint, but a validator may quote the
// content it refused: for a sensitive config the output is withheld.
func (d Deps) validate(ctx context.Context, w Want) (err error) {
	copied, remove, err := validationCopy(rootpath.Join(d.Root, ValidateDir), path.Base(w.Path), w.Content)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrValidation, err)
	}
	defer func() {
		if rerr := remove(); rerr != nil {
			err = errors.Join(err, rerr)
		}
	}()
	argv := make([]string, len(w.Validate))
	for i, a := range w.Validate {
		argv[i] = strings.ReplaceAll(a, Placeholder, copied)
	}
	res, err := d.Runner.Run(ctx, argv...)
	if err != nil {
		return fmt.Errorf("%w: %q did not finish: %w", ErrValidation, argv, err)
	}
	if res.ExitCode == 0 {
		return nil
	}
	out := res.Output()
	switch {
	case w.Sensitive:
		out = "output hidden: sensitive"
	case out == "":
		out = "no output"
	}
	return fmt.Errorf("%w: %q exited %d: %s", ErrValidation, argv, res.ExitCode, out)
}
