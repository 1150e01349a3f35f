package service

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/richt/services/pkg/ansible"
	"github.com/richt/services/pkg/override"
	"github.com/richt/services/pkg/unitfile"
	"github.com/richt/services/pkg/wiring"
)

// The reload capability a process needs (SPEC 5, issue 31 item 4). systemd_lifecycle
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
}

// sources are unit's files on disk in systemd's order, and whether a fragment is among
// them.
func (u UnitFiles) sources(unit string) ([]unitfile.Source, bool, error) {
	frag, dropIns := unitfile.Files(u.Root, unit)
	src, err := unitfile.ReadSources(u.Root, frag, dropIns)
	return src, frag != "", err
}

// reloader is a process whose reactions can contain a reload.
type reloader struct {
	unit string
	// by names what reloads it, for messages: its reload_on, or the drop-ins whose
	// reload: true reload it by the default wiring.
	by string
	// instead is the other way out: a restart.
	instead string
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
		rl := reloader{unit: unitOf(p.Unit), by: p.param + ".reload_on", instead: "react with restart_on instead"}
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

// ownedFiles are the service's own unit files and drop-ins as its files step will write
// them: unit_override's requests as its Spec parsed them (the path, the content), in
// files' order.
func (r *run) ownedFiles(ctx context.Context) ([]override.Task, error) {
	var out []override.Task
	for _, f := range r.files {
		var task override.Task
		var err error
		ansible.CallArgs(ctx, f.call, true, false, func(_ context.Context, req *ansible.Request) (any, error) {
			task, err = ansible.Parsed[override.Task](req)
			return map[string]any{}, nil
		})
		if err != nil {
			return nil, fmt.Errorf("%s: %w", fileLabel(f), err)
		}
		out = append(out, task)
	}
	return out, nil
}

// withOwned is sources with the service's own files of unit in place, as it will write
// them: each replaces the file of its path (a unit file becomes the fragment, a drop-in
// takes its place in file-name order; unitfile.Replace).
func withOwned(sources []unitfile.Source, unit string, owned []override.Task) []unitfile.Source {
	for _, t := range owned {
		if t.Unit != unit || t.Params.State == "absent" {
			continue
		}
		var content []byte
		if t.Params.Content != nil {
			content = []byte(*t.Params.Content)
		}
		sources = unitfile.Replace(sources, t.Path, content, true, t.Params.Name == nil)
	}
	return sources
}

// checkCapability refuses a process whose reactions can contain a reload on a unit that
// cannot reload, judged from the unit's files on disk with the service's own as it will
// write them. pkg is the packages plan in hand, before any step: a unit that step may
// install or change (no fragment on disk yet, or the plan changes something) cannot be
// judged yet, unless the service's own files declare a reload and nothing on disk undoes
// it; it is checked again after that step (afterPackages, pkg nil), which is how a real
// run checks every process once the packages are in place. Check mode, where the packages
// step changes nothing, judges such a unit only before.
func (r *run) checkCapability(ctx context.Context, pkg Step, afterPackages bool) error {
	if r.d.Units == nil {
		return nil
	}
	rls := r.reloaders()
	if len(rls) == 0 {
		return nil
	}
	owned, err := r.ownedFiles(ctx)
	if err != nil {
		return err
	}
	verdict, nothing := "it is not", "nothing was changed"
	if afterPackages {
		verdict, nothing = "with what the packages step installed it is not", "nothing after the packages step was changed"
	}
	for _, rl := range rls {
		merged, declared, onDisk, err := r.capability(rl.unit, owned)
		if pkg != nil && (!onDisk || pkg.Changes()) && (err != nil || !declared.Capable || !merged.Capable) {
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

// capability is unit's reload capability from its files on disk with the service's own
// in place (merged), that of the service's own files alone (declared: what they promise
// whatever a package installs), and whether a fragment of unit is on disk.
func (r *run) capability(unit string, owned []override.Task) (merged, declared unitfile.Capability, onDisk bool, err error) {
	disk, onDisk, err := r.d.Units.sources(unit)
	if err != nil {
		return merged, declared, onDisk, err
	}
	if merged, err = unitfile.Reloadable(withOwned(disk, unit, owned)); err != nil {
		return merged, declared, onDisk, err
	}
	declared, err = unitfile.Reloadable(withOwned(nil, unit, owned))
	return merged, declared, onDisk, err
}
