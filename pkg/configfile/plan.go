package configfile

import (
	"bytes"
	"context"
	"fmt"
	"os"

	"github.com/richt/services/pkg/ansible"
	"github.com/richt/services/pkg/lock"
	"github.com/richt/services/pkg/runner"
	"github.com/richt/services/pkg/safefile"
	"github.com/richt/services/pkg/stamp"
)

// Deps are the side effects of planning and applying a config.
type Deps struct {
	// Runner resolves owners through NSS (getent) and runs the validator.
	Runner runner.Runner
	// Root is the filesystem root ("" for /); tests point it at a temporary directory.
	Root string
	// Lock, when set, serializes the runs that write one config (LockName); nil runs
	// unserialized, for callers that serialize them otherwise and for tests.
	Lock lock.Func
	// BeforeReplace, when set, runs right before the file's content moves (the rename of
	// a write, the removal): the service records there what the change owes its
	// processes, so a run killed after the move leaves it due. An error stops the step
	// with nothing replaced.
	BeforeReplace func() error

	// renamed, when set, runs right after a write's rename, before the check that the
	// path holds the file written: tests put another file there.
	renamed func()

	// Now reads systemd's clock for the result's files_placed; nil means stamp.Now.
	Now func() (stamp.Stamp, error)
}

// Want is what the task asks for, resolved: owner and group as ids, the validator split.
type Want struct {
	Name, Path string
	Present    bool
	Content    []byte
	Mode       os.FileMode
	UID, GID   int
	Sensitive  bool
	// UnitFile is Config.UnitFile: the owner is root and the directories are root's alone.
	UnitFile bool
	// Validate is the validator's argv, with Placeholder in at least one word; nil for none
	// (a tree validator is not the file's own: Config.Tree).
	Validate []string
}

// Plan is what Decide makes of a Want and a File: the steps and the diff. It keeps both,
// so Apply carries it out from the plan alone and can tell whether the file is still the
// one the plan saw.
type Plan struct {
	Want  Want
	File  File
	Steps []Step
	Diff  *ansible.Diff
}

// Changed is whether the plan changes the file (removing a stale temporary file is not a
// change).
func (p Plan) Changed() bool {
	for _, s := range p.Steps {
		if s != StepRemoveStale {
			return true
		}
	}
	return false
}

// Step is one side effect of a plan, carried out in the plan's order.
type Step string

// The steps, in the order a plan holds them:
//   - remove-stale removes temporary files a killed run left (no change of the file);
//   - write writes the content to a temporary file beside the path (root's, 0600), runs
//     the validator on a copy in ValidateDir, renames the file over the path and then
//     gives it its final owner and mode;
//   - chown and chmod give a file whose content is right its owner and group, its mode;
//   - remove removes the path, and nothing else.
const (
	StepRemoveStale Step = "remove-stale"
	StepWrite       Step = "write"
	StepChown       Step = "chown"
	StepChmod       Step = "chmod"
	StepRemove      Step = "remove"
)

// Plan checks the config's parameters (unless Check returned c), resolves its owner and group on the target (a
// present config's only; an owner no source knows fails with safefile.ErrUnknownID),
// observes the path and decides; it changes nothing. With an error, the plan is as far as
// it got, with no steps.
func (d Deps) Plan(ctx context.Context, c Config) (Plan, error) {
	w := Want{Name: c.Name, Path: c.Path, Present: !c.Absent, Content: []byte(c.Content), Mode: c.Mode, Sensitive: c.Sensitive, UnitFile: c.UnitFile}
	p := Plan{Want: w}
	var err error
	if !c.checked {
		if c, err = c.Check(); err != nil {
			return p, err
		}
	}
	if !c.tree {
		w.Validate = c.argv
	}
	// A removal sets no owner: looking one up could only fail it (a user its package
	// took along) after the steps before it removed their parts.
	if w.Present {
		owner, group := orRoot(c.Owner), orRoot(c.Group)
		if w.UID, err = safefile.UID(ctx, d.Runner, "owner", owner); err != nil {
			return p, named("owner", err)
		}
		if w.GID, err = safefile.GID(ctx, d.Runner, "group", group); err != nil {
			return p, named("group", err)
		}
		if w.UnitFile && w.UID != 0 {
			// A name Check let through (root's) that resolves to another uid.
			return p, rootOnlyOwnerErr(c.Path, fmt.Sprintf("%q (uid %d)", owner, w.UID))
		}
	}
	p.Want = w
	f, err := Observe(d.Root, w.Path)
	if err != nil {
		return p, err
	}
	p.File = f
	return Decide(w, f)
}

func orRoot(v string) string {
	if v == "" {
		return "root"
	}
	return v
}

// Decide is the config's decision: pure, the same in check mode and in a real run. A
// link at the path or above it, or a directory above it that someone other than root and
// the config's owner can write (safefile.Dir.Untrusted), is refused; so is a
// missing directory when the file is wanted. Nothing is created but the file.
func Decide(w Want, f File) (Plan, error) {
	p := Plan{Want: w, File: f}
	if err := refusal(w, f); err != nil {
		return p, err
	}
	if len(f.Stale) > 0 {
		p.Steps = append(p.Steps, StepRemoveStale)
	}
	switch {
	case w.Present && (!f.Exists || !bytes.Equal(f.Content, w.Content)):
		p.Steps = append(p.Steps, StepWrite)
	case w.Present:
		if f.UID != w.UID || f.GID != w.GID {
			p.Steps = append(p.Steps, StepChown)
		}
		if f.Mode != w.Mode {
			p.Steps = append(p.Steps, StepChmod)
		}
	case f.Exists:
		p.Steps = append(p.Steps, StepRemove)
	}
	if p.Changed() {
		after := safefile.File{Exists: w.Present, Content: w.Content, Mode: w.Mode, UID: w.UID, GID: w.GID}
		p.Diff = safefile.Diff(w.Path, f.File, after, w.Sensitive)
	}
	return p, nil
}
