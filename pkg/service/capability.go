package service

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strings"

	"github.com/richt/services/pkg/ansible"
	"github.com/richt/services/pkg/override"
	"github.com/richt/services/pkg/systemd"
	"github.com/richt/services/pkg/unitfile"
	"github.com/richt/services/pkg/wiring"
)

// The reload capability a process needs (SPEC 5). systemd_lifecycle
// checks it in each process step, but a process step comes after the packages, the
// configs and the files: a reload_on on a unit that cannot reload would leave a config
// written and its reload recorded, owed by every later run (a reload is never turned into
// a restart). So the service checks it itself on every run, before any change where the
// files tell, and right after the packages step for a unit that step installs or changes.
// The files are read and merged by package unitfile, the one home of that rule.

// UnitFiles reads units' files on the target as systemd merges them (package unitfile),
// below Root ("" or "/" for the real root).
type UnitFiles struct {
	Root string
	// Manager is systemd's view of a unit, asked read-only for one whose fragment is in
	// no unit directory on disk (a generated, transient or attached unit); nil: not asked.
	Manager Shower
}

// Shower shows a unit's properties as the manager has loaded it (systemd.Systemctl).
type Shower interface {
	Show(ctx context.Context, unit string) (systemd.Props, error)
}

// unitSources are a unit's files as the check reads them.
type unitSources struct {
	src []unitfile.Source
	// found: a fragment is among them (on disk, or named by the manager).
	found bool
	// masked: the unit is masked on disk and its process leaves it so.
	masked bool
}

// sources are unit's files in systemd's order: on disk (past the mask the process's
// unmask removes), else, for a unit in no unit directory on disk, the ones the manager
// names. Manager-named files that are gone (a view older than the disk) count as none.
func (u UnitFiles) sources(ctx context.Context, unit string, unmask bool) (unitSources, error) {
	if !unmask && unitfile.Mask(u.Root, unit) != "" {
		return unitSources{masked: true}, nil
	}
	frag, dropIns := unitfile.Unmasked(u.Root, unit)
	if frag == "" && u.Manager != nil {
		p, err := u.Manager.Show(ctx, unit)
		if err != nil {
			return unitSources{}, fmt.Errorf("ask the manager for %s's unit files: %w", unit, err)
		}
		if p.LoadState == "loaded" && p.FragmentPath != "" {
			src, err := unitfile.ReadSources(u.Root, p.FragmentPath, p.DropInPaths)
			if errors.Is(err, fs.ErrNotExist) {
				return unitSources{}, nil
			}
			return unitSources{src: src, found: true}, err
		}
	}
	src, err := unitfile.ReadSources(u.Root, frag, dropIns)
	return unitSources{src: src, found: frag != ""}, err
}

// reloader is a process whose reactions can contain a reload.
type reloader struct {
	unit string
	// by names what reloads it, for messages: its reload_on, or the drop-ins whose
	// reload: true reload it by the default wiring.
	by string
	// instead is the other way out: a restart.
	instead string
	// unmask: the process unmasks the unit (masked: false).
	unmask bool
}

// reloaders are the processes whose reactions can contain a reload, in order: by name,
// those with a reload_on; by the default wiring, those a drop-in of their unit with
// reload: true reloads (wiring.Wire says which). A process to be masked is left out:
// masking ignores its reactions, and systemd_lifecycle then needs no capability.
func (r *run) reloaders() []reloader {
	var out []reloader
	for _, p := range r.order {
		if p.Masked != nil && *p.Masked {
			continue
		}
		reload := wiring.Wire(p.Unit, p.reactions, r.parts, nil).Reload
		if len(reload) == 0 {
			continue
		}
		rl := reloader{unit: unitOf(p.Unit), by: p.param + ".reload_on", instead: "react with restart_on instead",
			unmask: p.Masked != nil && !*p.Masked}
		if !p.reactions.ByName() {
			rl.by = fmt.Sprintf("%s, which reloads %s (%s) by the default wiring,", r.reloadDropins(reload), p.param, rl.unit)
			rl.instead = "drop reload: true so that a change restarts it"
		}
		out = append(out, rl)
	}
	return out
}

// reloadDropins names the drop-ins of reload, a default wiring's reload triggers (each
// a part's, by its canonical reference), by their parameters: dropins[1].reload
// (demo.service/20.conf).
func (r *run) reloadDropins(reload []wiring.Trigger) string {
	var refs []wiring.Ref
	for _, t := range reload {
		refs = append(refs, t.Ref)
	}
	var out []string
	for i, d := range r.p.Dropins {
		ref := wiring.Ref{Kind: wiring.Dropin, Unit: unitOf(d.Unit), Name: d.Name}
		if slices.Contains(refs, ref) {
			out = append(out, fmt.Sprintf("dropins[%d].reload (%s/%s)", i, ref.Unit, ref.Name))
		}
	}
	return strings.Join(out, ", ")
}

// plannedFile is a unit file or drop-in as the service will leave it: one of its own
// (units, dropins) or a config under a unit directory.
type plannedFile struct {
	path    string
	content []byte
	present bool
	// of reports whether the file belongs to unit, and whether as its fragment.
	of func(unit string) (ok, fullUnit bool)
}

// plannedFiles are the service's own unit files and drop-ins as its files step will
// write them (unit_override's requests as its Spec parsed them, in files' order), then
// the configs under a unit directory (inUnitDir) as the configs step will.
func (r *run) plannedFiles(ctx context.Context) ([]plannedFile, error) {
	var out []plannedFile
	for _, f := range r.files {
		var task override.Task
		var err error
		ansible.CallArgs(ctx, f.call, true, false, func(_ context.Context, req *ansible.Request) (any, error) {
			task, err = ansible.Parsed[override.Task](req)
			return struct{}{}, nil
		})
		if err != nil {
			return nil, fmt.Errorf("%s: %w", fileLabel(f), err)
		}
		pf := plannedFile{path: task.Path, present: task.Params.State != "absent", of: func(unit string) (bool, bool) {
			return task.Unit == unit, task.Params.Name == nil
		}}
		if task.Params.Content != nil {
			pf.content = []byte(*task.Params.Content)
		}
		out = append(out, pf)
	}
	for _, c := range r.configs {
		if !inUnitDir(c.Path) {
			continue
		}
		out = append(out, plannedFile{path: c.Path, content: []byte(c.Content), present: !c.Absent,
			of: func(unit string) (bool, bool) { return unitFileOf(c.Path, unit) }})
	}
	return out, nil
}

// unitFileOf reports whether p, a file under a unit directory, is one of unit's: its
// fragment (DIR/UNIT) or a drop-in (DIR/D/NAME.conf, D one of unit's drop-in directories).
func unitFileOf(p, unit string) (ok, fullUnit bool) {
	dir, base := path.Split(p)
	dir = path.Clean(dir)
	if slices.Contains(unitDirs, dir) {
		return base == unit, true
	}
	return strings.HasSuffix(base, ".conf") && slices.Contains(unitDirs, path.Dir(dir)) &&
		slices.Contains(unitfile.DropInDirs(unit), path.Base(dir)), false
}

// withOwned is sources with the service's planned files of unit in place, as it will
// write them: each replaces the file of its path (a unit file becomes the fragment, a
// drop-in takes its place in file-name order; unitfile.Replace). ownFragment: one of
// them is unit's fragment.
func withOwned(sources []unitfile.Source, unit string, planned []plannedFile) (_ []unitfile.Source, ownFragment bool) {
	for _, f := range planned {
		ok, full := f.of(unit)
		if !ok {
			continue
		}
		sources = unitfile.Replace(sources, f.path, f.content, f.present, full)
		ownFragment = ownFragment || full && f.present
	}
	return sources, ownFragment
}

// checkCapability refuses a process whose reactions can contain a reload on a unit that
// cannot reload, judged from the unit's files on disk with the service's own and its
// configs under a unit directory as it will write them. pkg is the packages plan in hand,
// before any step: a unit that step may install or change (no fragment on disk yet, or
// the plan changes something) cannot be judged yet, unless the service's own files
// declare a reload and nothing on disk undoes it; it is checked again after that step
// (afterPackages, pkg nil), which is how a real run checks every process once the
// packages are in place. Check mode, where the packages step changes nothing, judges such
// a unit only before.
//
// A unit masked on disk that its process leaves masked is not judged: systemd_lifecycle
// ignores its reactions, or refuses the mask itself. One its process unmasks is judged by
// the fragment after the mask (unitfile.Unmasked). A unit with no fragment in any unit
// directory (generated from an init script or fstab, transient, attached) is judged by
// the files the manager names (UnitFiles.Manager, read only); when the manager does not
// know it either and no file of the service is its fragment, the files cannot tell: the
// check is left to the process step, which asks the manager once it has loaded the unit,
// after the configs and files are written.
func (r *run) checkCapability(ctx context.Context, pkg Step, afterPackages bool) error {
	if r.d.Units == nil {
		return nil
	}
	rls := r.reloaders()
	if len(rls) == 0 {
		return nil
	}
	planned, err := r.plannedFiles(ctx)
	if err != nil {
		return err
	}
	verdict, nothing := "it is not", "nothing was changed"
	if afterPackages {
		verdict, nothing = "with what the packages step installed it is not", "nothing after the packages step was changed"
	}
	for _, rl := range rls {
		us, err := r.d.Units.sources(ctx, rl.unit, rl.unmask)
		if err == nil && us.masked {
			continue
		}
		merged, declared, ownFragment, err := capability(us, err, rl.unit, planned)
		if err == nil && !us.found && !ownFragment {
			continue // the files cannot tell: the packages step's or the process step's to find
		}
		if pkg != nil && (!us.found || pkg.Changes()) && (err != nil || !declared.Capable || !merged.Capable) {
			continue // the packages step decides it: checked right after it
		}
		if err == nil && merged.Capable {
			continue
		}
		r.res.FailedStep = "process " + rl.unit
		if err != nil {
			return fmt.Errorf("%s needs %s to be reload-capable, and its files could not be read: %w; %s", rl.by, rl.unit, err, nothing)
		}
		return fmt.Errorf("%s needs %s to be reload-capable, and %s: %s. Add ExecReload= to the unit (a drop-in in dropins can) or %s; a reload is never turned into a restart, and %s",
			rl.by, rl.unit, verdict, merged.Reason, rl.instead, nothing)
	}
	return nil
}

// capability is unit's reload capability from its files us (read with readErr) with the
// service's planned files in place (merged), that of the planned files alone (declared:
// what they promise whatever a package installs), and whether a planned file is unit's
// fragment.
func capability(us unitSources, readErr error, unit string, planned []plannedFile) (merged, declared unitfile.Capability, ownFragment bool, err error) {
	if readErr != nil {
		return merged, declared, false, readErr
	}
	src, ownFragment := withOwned(us.src, unit, planned)
	if merged, err = unitfile.Reloadable(src); err != nil {
		return merged, declared, ownFragment, err
	}
	own, _ := withOwned(nil, unit, planned)
	declared, err = unitfile.Reloadable(own)
	return merged, declared, ownFragment, err
}
