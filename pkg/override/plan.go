package override

import (
	"bytes"
	"fmt"
	"os"
	"time"

	"github.com/richt/services/pkg/ansible"
	"github.com/richt/services/pkg/contract"
	"github.com/richt/services/pkg/durable"
	"github.com/richt/services/pkg/safefile"
)

// Want is what a task asks for, resolved: the path the module manages and the owner and
// group as ids.
type Want struct {
	Unit, Path   string
	Present      bool
	Content      []byte
	Mode         os.FileMode
	UID, GID     int
	Sensitive    bool
	DaemonReload bool
}

// File is the owned file as Observe found it; it reads, and changes nothing.
type File struct {
	Exists   bool
	Content  []byte
	Mode     os.FileMode
	UID, GID int
	// Stale are temporary files of this path that a killed run left behind.
	Stale []string
	// Dirs are the directories the file lives in, outermost first: the unit directory,
	// then a drop-in's UNIT.d.
	Dirs []Dir
}

// Dir is one directory the module writes into, as Observe found it.
type Dir struct {
	// Path is the directory as the module names it (/etc/systemd/system/UNIT.d).
	Path   string
	Exists bool
	// Outside is set when Path is a symbolic link that leads out of the unit directory:
	// what it resolves to.
	Outside string
	// Mode and UID are those of the directory a link leads to, or of Path itself.
	Mode os.FileMode
	UID  int
	// DropIn: the directory is a unit's UNIT.d, which the module owns and repairs; the
	// unit directory itself is only checked.
	DropIn bool
}

// insecure says why a directory lets someone other than root change what it holds, or ""
// (safefile's rule).
func (d Dir) insecure() string { return safefile.Dir{Mode: d.Mode, UID: d.UID}.Insecure() }

// Step is one side effect of a plan. Apply carries the steps out in the plan's order;
// check mode reports them and carries out none.
type Step string

// The steps, in the order a plan holds them.
const (
	// StepSecureDir makes a drop-in directory root's and not writable by group or others:
	// a drop-in in a directory anyone can write is a drop-in anyone can replace.
	StepSecureDir Step = "secure-directory"
	// StepRemoveStale removes temporary files a killed run left (no change of the file).
	StepRemoveStale Step = "remove-stale"
	// StepRecordReload records durably that the manager must be reloaded, before the file
	// moves: whatever fails after it, the reload stays due for a later run.
	StepRecordReload Step = durable.StepRecordReload
	// StepWrite replaces the file atomically (create or update).
	StepWrite Step = "write"
	// StepAttributes sets the mode and owner of a file whose content is right.
	StepAttributes Step = "set-attributes"
	// StepRemove removes the file, and its drop-in directory when that is left empty.
	StepRemove Step = "remove"
	// StepDaemonReload reloads the manager and settles the sync records it served.
	StepDaemonReload Step = "daemon-reload"
)

// Plan is what Decide makes of a Want and a File: the operation, its steps, and what the
// run reports when the steps succeed. It keeps the Want and the File it was decided from,
// so Apply carries it out from the plan alone and can tell whether the file is still the
// one the plan saw.
type Plan struct {
	Want Want
	File File
	// Warnings are what the run warns of before it acts (Deps.Plan: an owner who can write
	// the file).
	Warnings []string
	// Timeout is the task's timeout, which messages name; no decision depends on it.
	Timeout   time.Duration
	Operation string
	Steps     []Step
	// Change is unit_files_changed and daemon_reload as the run reports them.
	Change contract.Change
	Diff   *ansible.Diff
}

// Changed is whether the plan changes the file or its directory (removing a stale
// temporary file is not a change).
func (p Plan) Changed() bool { return p.Operation != OpNone || p.Has(StepSecureDir) }

// Has reports whether the plan holds step s.
func (p Plan) Has(s Step) bool {
	for _, x := range p.Steps {
		if x == s {
			return true
		}
	}
	return false
}

// Decide is unit_override's decision: pure, the same in check mode and in a real run. A
// directory that leads out of the unit directory, or a unit directory that someone other
// than root can write, is refused: nothing is written there. A drop-in directory that
// someone other than root can write is repaired first.
func Decide(w Want, f File) (Plan, error) {
	p := Plan{Want: w, File: f, Operation: OpNone, Change: contract.Change{DaemonReload: contract.ReloadNone}}
	for _, d := range f.Dirs {
		if d.Outside != "" {
			return p, fmt.Errorf("%s is a symbolic link to %s, outside %s: systemd would load files from there; replace it with a directory; nothing was written", d.Path, d.Outside, UnitDir)
		}
		if why := d.insecure(); d.Exists && why != "" {
			if !d.DropIn {
				return p, fmt.Errorf("%s is %s: anyone who can write it can replace the units root's manager loads; make it root's and not writable by group or others (chown root:root %s; chmod go-w %s); nothing was written", d.Path, why, d.Path, d.Path)
			}
			if w.Present || f.Exists {
				p.Steps = append(p.Steps, StepSecureDir)
			}
		}
	}
	if len(f.Stale) > 0 {
		p.Steps = append(p.Steps, StepRemoveStale)
	}
	var fileStep Step
	switch {
	case w.Present && !f.Exists:
		p.Operation, fileStep = OpCreate, StepWrite
	case w.Present && !bytes.Equal(f.Content, w.Content):
		p.Operation, fileStep = OpUpdate, StepWrite
	case w.Present && (f.Mode != w.Mode || f.UID != w.UID || f.GID != w.GID):
		p.Operation, fileStep = OpAttributes, StepAttributes
	case !w.Present && f.Exists:
		p.Operation, fileStep = OpRemove, StepRemove
	}
	if p.Operation == OpNone {
		return p, nil
	}
	// What systemd loads changes with the content, not with the attributes.
	contentChanged := p.Operation != OpAttributes
	if contentChanged {
		p.Change.UnitFilesChanged = true
		p.Change.DaemonReload = contract.ReloadNeeded
		p.Steps = append(p.Steps, StepRecordReload)
	}
	p.Steps = append(p.Steps, fileStep)
	if contentChanged && w.DaemonReload {
		p.Steps = append(p.Steps, StepDaemonReload)
		p.Change.DaemonReload = contract.ReloadPerformed
	}
	p.Diff = diff(w, f)
	return p, nil
}

// diff shows the file before and after, with its attributes; a sensitive file's content is
// never shown, not even a hash of it.
func diff(w Want, f File) *ansible.Diff {
	return safefile.Diff(w.Path,
		safefile.File{Exists: f.Exists, Content: f.Content, Mode: f.Mode, UID: f.UID, GID: f.GID},
		safefile.File{Exists: w.Present, Content: w.Content, Mode: w.Mode, UID: w.UID, GID: w.GID}, w.Sensitive)
}
