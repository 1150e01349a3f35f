// Package override owns one systemd unit file or drop-in: written atomically with its
// final mode and owner from the start, parsed before it is written, never shown when it
// is sensitive, and followed by exactly one daemon-reload when it changed (or a durable
// record that one is due, for a later systemd_lifecycle task).
//
// A run is Observe (the file and a killed run's leftovers; reads only) → Decide (pure: the
// operation and its steps, plan.go) → Apply (the steps in order). The reload a content
// change owes is recorded durably before the file moves, so a failure after the move keeps
// it due; a write that never happened withdraws it.
package override

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/richt/services/pkg/ansible"
	"github.com/richt/services/pkg/atomicfile"
	"github.com/richt/services/pkg/contract"
	"github.com/richt/services/pkg/durable"
	"github.com/richt/services/pkg/lock"
	"github.com/richt/services/pkg/nss"
	"github.com/richt/services/pkg/runner"
	"github.com/richt/services/pkg/systemd"
	"github.com/richt/services/pkg/timeout"
	"github.com/richt/services/pkg/unitfile"
	"github.com/richt/services/pkg/unitname"
)

// UnitDir is where owned units and drop-ins live: the administrator's directory, which
// has the highest priority of systemd's persistent unit directories.
const UnitDir = "/etc/systemd/system"

// SyncRecorder records that systemd's manager must be reloaded (package durable).
type SyncRecorder interface {
	MarkManagerSyncDue(ctx context.Context, reason string) (string, error)
	ManagerSync() (durable.Sync, error)
	ClearManagerSync(ctx context.Context, seen durable.Sync) error
	RemoveManagerSyncEntry(ctx context.Context, id string) error
}

// Deps are the module's side effects.
type Deps struct {
	Runner runner.Runner
	Sync   SyncRecorder
	// Root is the filesystem root ("" for /); tests point it at a temporary directory.
	Root string
	// Lock serializes the runs for one unit with each other and with systemd_lifecycle's
	// (package lock); nil runs unserialized, for tests of a single run.
	Lock lock.Func
}

// Result is the module's return value.
type Result struct {
	Changed       bool                 `json:"changed"`
	Unit          string               `json:"unit"`
	Path          string               `json:"path"`
	State         string               `json:"state"`
	Operation     string               `json:"operation"`
	ReloadCapable *unitfile.Capability `json:"reload_capable"`
	Diff          *ansible.Diff        `json:"diff,omitempty"`
	// Plan is the steps Decide chose, in order: carried out in a real run, only reported
	// in check mode (the same steps either way).
	Plan []Step `json:"plan"`

	// package_changed, unit_files_changed, daemon_reload, changed_at: what later tasks
	// read (package contract).
	contract.Change
}

// Operations, as reported in `operation`.
const (
	OpNone       = "none"
	OpCreate     = "create"
	OpUpdate     = "update"
	OpAttributes = "attributes"
	OpRemove     = "remove"
)

// Params are unit_override's parameters, decoded as Spec declares them.
type Params struct {
	Unit         string        `ansible:"unit"`
	Name         *string       `ansible:"name"`
	Content      *string       `ansible:"content"`
	Path         *string       `ansible:"path"`
	Mode         os.FileMode   `ansible:"mode"`
	Owner        string        `ansible:"owner"`
	Group        string        `ansible:"group"`
	Sensitive    bool          `ansible:"sensitive"`
	State        string        `ansible:"state"`
	DaemonReload bool          `ansible:"daemon_reload"`
	Timeout      time.Duration `ansible:"timeout"`
}

// content is the content parameter, "" when omitted.
func (v Params) content() string {
	if v.Content == nil {
		return ""
	}
	return *v.Content
}

// Spec is unit_override's parameter contract.
func Spec() *ansible.Spec {
	s := &ansible.Spec{
		Name: "unit_override",
		Params: []ansible.Param{
			{
				Name: "unit", Kind: ansible.Str, Required: true,
				Description: []string{
					`The unit, for example C(demo.service); without a type suffix C(.service) is added.`,
				},
			},
			{
				Name: "name", Kind: ansible.Str,
				Description: []string{
					`The drop-in file name, ending in C(.conf), for example C(10-limits.conf). Omitted
					means the full unit file.`,
				},
			},
			{
				Name: "content", Kind: ansible.Str,
				Description: []string{
					`The file's content, in unit file syntax. Required for I(state=present).`,
				},
			},
			{
				Name: "path", Kind: ansible.Path,
				Description: []string{
					`The file's path. Only the default location is allowed; the option exists so a
					playbook can state the path it expects, and the task fails if it differs.`,
				},
			},
			{
				Name: "mode", Kind: ansible.Mode, Default: "0644",
				Description: []string{
					`The file mode, as an octal string such as C("0644") or C("0600").`,
					`A mode that lets group or others write the file, or that sets the setuid, setgid or
					sticky bit, is refused before anything is read or written; use C(0644) or stricter.`,
					`When I(owner) is not root and the mode lets the owner write, the task warns that
					this user can change what systemd runs as root (it is not refused).`,
				},
			},
			{
				Name: "owner", Kind: ansible.Str, Default: "root",
				Description: []string{
					`The file's owner, a name or a numeric uid. It must exist on the target, also when
					given as a number; an unknown owner fails the task before anything is written.`,
				},
			},
			{
				Name: "group", Kind: ansible.Str, Default: "root",
				Description: []string{
					`The file's group, a name or a numeric gid. It must exist on the target, also when
					given as a number; an unknown group fails the task before anything is written.`,
				},
			},
			{
				Name: "sensitive", Kind: ansible.Bool, Default: false,
				Description: []string{
					`Keep I(content) out of the result, the diff and C(invocation) (masked as
					C(VALUE_SPECIFIED_IN_NO_LOG_PARAMETER)). Changes still count (changed,
					daemon-reload, reactions). It does not change the file's mode; set I(mode=0600) for
					that.`,
				},
			},
			{
				Name: "state", Kind: ansible.Str, Default: "present", Choices: []string{"present", "absent"},
				Description: []string{
					`Whether the file should exist. C(absent) also removes an emptied C(UNIT.d)
					directory.`,
				},
			},
			{
				Name: "daemon_reload", Kind: ansible.Bool, Default: true,
				Description: []string{
					`Reload systemd's manager when the file's content changed.`,
				},
			},
			{
				Name: "timeout", Kind: ansible.Duration, Default: "30s",
				Description: []string{
					`One deadline, a positive Go duration, for waiting for the unit's lock, the
					daemon-reload, and updating the manager-sync record.`,
				},
			},
		},
		RequiredIf: []ansible.RequiredIf{{Param: "state", Value: "present", Requires: []string{"content"}}},
		NoLogWhen: func(raw map[string]any) []string {
			// Hidden unless sensitive is plainly false: a value validation will refuse
			// (" yes", "maybe", a list) still hides the content in that refusal, since
			// whoever wrote it meant something other than false.
			if v, ok := raw["sensitive"]; ok && v != nil && !ansible.PlainlyFalse(v) {
				return []string{"content"}
			}
			return nil
		},
	}
	s.Check = func(v ansible.Values) error {
		var p Params
		if err := s.Decode(v, &p); err != nil {
			return err
		}
		if _, _, err := target(p); err != nil {
			return err
		}
		if err := secureMode(p.Mode, describeFile(p)); err != nil {
			return err
		}
		if p.State == "present" {
			if _, err := unitfile.Parse([]byte(p.content())); err != nil {
				return fmt.Errorf("content is not a valid unit file: %w; nothing was written", err)
			}
		} else if p.Content != nil {
			return fmt.Errorf("content: not allowed with state=absent")
		}
		return nil
	}
	return s
}

// target returns the normalised unit and the file's path.
func target(v Params) (unit, p string, err error) {
	unit, err = unitname.Normalize(v.Unit)
	if err != nil {
		return "", "", err
	}
	p = path.Join(UnitDir, unit)
	if v.Name != nil {
		if err := validDropInName(*v.Name); err != nil {
			return "", "", err
		}
		p = path.Join(UnitDir, unit+".d", *v.Name)
	}
	if v.Path != nil && *v.Path != p {
		return "", "", fmt.Errorf("path: %q is not where this module manages %s; the only allowed value is %q (or omit path)", *v.Path, describeTarget(v), p)
	}
	return unit, p, nil
}

func describeTarget(v Params) string {
	if v.Name != nil {
		return "the drop-in " + *v.Name
	}
	return "the unit file"
}

func describeFile(v Params) string {
	if v.Name != nil {
		return "drop-in"
	}
	return "unit file"
}

// secureMode refuses a mode that lets anyone but the owner change what root runs, and
// the set-id and sticky bits, which mean nothing on a unit file but a mistake.
func secureMode(m os.FileMode, what string) error {
	var why []string
	if m&0o022 != 0 {
		why = append(why, fmt.Sprintf("lets group or others write the %s; a %s writable by a non-root user is a root escalation", what, what))
	}
	if special := m & (os.ModeSetuid | os.ModeSetgid | os.ModeSticky); special != 0 {
		var bits []string
		for _, b := range []struct {
			bit  os.FileMode
			name string
		}{{os.ModeSetuid, "setuid"}, {os.ModeSetgid, "setgid"}, {os.ModeSticky, "sticky"}} {
			if special&b.bit != 0 {
				bits = append(bits, b.name)
			}
		}
		why = append(why, fmt.Sprintf("sets the %s bit, which a %s must never carry", strings.Join(bits, " and "), what))
	}
	if len(why) == 0 {
		return nil
	}
	return fmt.Errorf("mode: %04o %s; use 0644 or stricter (0600 to keep it from being read too); nothing was written", ansible.UnixMode(m), strings.Join(why, "; it "))
}

func validDropInName(n string) error {
	if !strings.HasSuffix(n, ".conf") || len(n) <= len(".conf") {
		return fmt.Errorf("name: %q must be a file name ending in .conf (systemd ignores other drop-ins)", n)
	}
	if n[0] == '.' || n[0] == '-' {
		return fmt.Errorf("name: %q must not start with %q", n, n[:1])
	}
	for i, r := range n {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("._-@:+", r)) {
			return fmt.Errorf("name: %q has a character not allowed in a drop-in name at position %d (allowed: letters, digits and . _ - @ : +)", strings.ToValidUTF8(n, "?"), i+1)
		}
	}
	return nil
}

// Observe reads the owned file p (a path under UnitDir) below root ("" or "/" for the
// real one), the temporary files a killed run left beside it, and the directories it lives
// in; it changes nothing.
func Observe(root, p string) (File, error) {
	under := func(q string) string {
		if root == "" || root == "/" {
			return q
		}
		return filepath.Join(root, q)
	}
	full := under(p)
	dirs, err := observeDirs(under, p)
	if err != nil {
		return File{}, err
	}
	for _, d := range dirs {
		if d.Outside != "" {
			// Nothing is read through a link that leads elsewhere: Decide refuses it.
			return File{Dirs: dirs}, nil
		}
	}
	stale, err := atomicfile.Stale(full)
	if err != nil {
		return File{}, err
	}
	fi, err := os.Lstat(full)
	if errors.Is(err, os.ErrNotExist) {
		return File{Stale: stale, Dirs: dirs}, nil
	}
	if err != nil {
		return File{}, fmt.Errorf("inspect %s: %w", full, err)
	}
	if !fi.Mode().IsRegular() {
		return File{}, fmt.Errorf("%s exists and is not a regular file (%s); remove it or choose another name", full, fi.Mode().Type())
	}
	data, err := os.ReadFile(full)
	if err != nil {
		return File{}, fmt.Errorf("read %s: %w", full, err)
	}
	st, _ := fi.Sys().(*syscall.Stat_t)
	f := File{Exists: true, Content: data, Mode: fi.Mode().Perm() | fi.Mode()&(os.ModeSetuid|os.ModeSetgid|os.ModeSticky), Stale: stale, Dirs: dirs}
	if st != nil {
		f.UID, f.GID = int(st.Uid), int(st.Gid)
	}
	return f, nil
}

// observeDirs reads the unit directory and, for a drop-in, its UNIT.d: whether each exists,
// whether it is a link that leads out of the unit directory, and the owner and mode of
// the directory it is (or leads to).
func observeDirs(under func(string) string, p string) ([]Dir, error) {
	paths := []string{UnitDir}
	if dir := path.Dir(p); dir != UnitDir {
		paths = append(paths, dir)
	}
	unitDir, err := filepath.EvalSymlinks(under(UnitDir))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("resolve %s: %w", UnitDir, err)
	}
	var dirs []Dir
	for i, dp := range paths {
		d := Dir{Path: dp, DropIn: i > 0}
		full := under(dp)
		li, err := os.Lstat(full)
		if errors.Is(err, os.ErrNotExist) {
			dirs = append(dirs, d)
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("inspect %s: %w", dp, err)
		}
		if li.Mode()&os.ModeSymlink != 0 && d.DropIn {
			target, err := filepath.EvalSymlinks(full)
			if err != nil {
				return nil, fmt.Errorf("resolve the link %s: %w", dp, err)
			}
			if unitDir == "" || (target != unitDir && !strings.HasPrefix(target, unitDir+string(filepath.Separator))) {
				d.Outside = target
				dirs = append(dirs, d)
				continue
			}
		}
		fi, err := os.Stat(full)
		if err != nil {
			return nil, fmt.Errorf("inspect %s: %w", dp, err)
		}
		if !fi.IsDir() {
			return nil, fmt.Errorf("%s exists and is not a directory (%s); remove it", dp, fi.Mode().Type())
		}
		d.Exists, d.Mode = true, fi.Mode().Perm()|fi.Mode()&(os.ModeSetuid|os.ModeSetgid|os.ModeSticky)
		if st, ok := fi.Sys().(*syscall.Stat_t); ok {
			d.UID = int(st.Uid)
		}
		dirs = append(dirs, d)
	}
	return dirs, nil
}

// lookupUID and lookupGID resolve owner and group on the target, through NSS (package
// nss: the files, then getent). A numeric id must exist as well as a name: chown accepts
// any number, and a file owned by an id nobody has today belongs to whoever is given that
// id tomorrow.
func (d Deps) lookupUID(ctx context.Context, v string) (int, error) {
	return lookupID("owner", "user", v, func() (int, error) { return nss.Resolver{Runner: d.Runner}.User(ctx, v) })
}

func (d Deps) lookupGID(ctx context.Context, v string) (int, error) {
	return lookupID("group", "group", v, func() (int, error) { return nss.Resolver{Runner: d.Runner}.Group(ctx, v) })
}

func lookupID(param, kind, v string, resolve func() (int, error)) (int, error) {
	id, err := resolve()
	if err == nil {
		return id, nil
	}
	if _, numErr := strconv.ParseUint(v, 10, 32); numErr == nil {
		return 0, fmt.Errorf("%s: %q is a numeric id no %s on the target has (%v); create the %s first or use an existing one", param, v, kind, err, kind)
	}
	return 0, fmt.Errorf("%s: %q is not a known name or a numeric id on the target (%v); create the %s first or use an existing one", param, v, err, kind)
}

// ownerWriteWarning is the decision on a non-root owner with the owner-write bit: it is
// allowed, with a warning naming the owner. Refusing it would break plays that hand a
// unit to a service account on purpose, and the owner is named explicitly in the task
// (unlike group or other write bits, which reach users nobody named, and are refused).
// The warning says what it means: that owner can change what root runs.
func ownerWriteWarning(owner string, uid int, mode os.FileMode, what string) string {
	if uid == 0 || mode&0o200 == 0 {
		return ""
	}
	return fmt.Sprintf("owner %s (uid %d) can write the %s (mode %04o): that user can change what systemd runs as root; use owner root, or mode 0444/0400 if that is not intended", owner, uid, what, ansible.UnixMode(mode))
}

func (d Deps) full(p string) string {
	if d.Root == "" || d.Root == "/" {
		return p
	}
	return filepath.Join(d.Root, p)
}

// Handler returns unit_override's behaviour over the given side effects: resolve what the
// task wants, Observe the file, Decide the plan, and Apply it (check mode reports the
// plan and applies nothing).
func Handler(d Deps) ansible.Handler {
	return func(ctx context.Context, req *ansible.Request) (any, error) {
		var v Params
		if err := req.Decode(&v); err != nil {
			return nil, err
		}
		unit, p, _ := target(v) // validated by Spec.Check
		ctx, cancel := timeout.Deadline(ctx, v.Timeout)
		defer cancel()
		if d.Lock != nil {
			release, err := d.Lock(ctx, lock.Unit(unit))
			if err != nil {
				return &Result{Unit: unit, Path: p, State: v.State, Operation: OpNone},
					fmt.Errorf("another run for %s did not finish within the timeout of %s: %w", unit, v.Timeout, err)
			}
			defer release()
		}
		res := &Result{Unit: unit, Path: p, State: v.State, Operation: OpNone, Change: contract.Change{DaemonReload: contract.ReloadNone}}
		w := Want{Unit: unit, Path: p, Present: v.State == "present", Content: []byte(v.content()), Mode: v.Mode,
			Sensitive: v.Sensitive, DaemonReload: v.DaemonReload}
		var err error
		if w.UID, err = d.lookupUID(ctx, v.Owner); err != nil {
			return res, err
		}
		if w.GID, err = d.lookupGID(ctx, v.Group); err != nil {
			return res, err
		}
		if warn := ownerWriteWarning(v.Owner, w.UID, w.Mode, describeFile(v)); warn != "" && w.Present {
			req.Warn("%s", warn)
		}

		f, err := Observe(d.Root, p)
		if err != nil {
			return res, err
		}
		plan, err := Decide(w, f)
		if err != nil {
			return res, err
		}
		res.Operation, res.Changed, res.Change, res.Diff, res.Plan = plan.Operation, plan.Changed(), plan.Change, plan.Diff, plan.Steps
		if !req.CheckMode {
			if err := d.Apply(ctx, w, f, plan, res); err != nil {
				return res, err
			}
		}
		c, err := d.capability(unit, p, w.Content, w.Present, req.CheckMode)
		if err != nil {
			req.Warn("reload capability of %s not determined: %v", unit, err)
		} else {
			res.ReloadCapable = &c
		}
		return res, nil
	}
}

// Apply carries out the plan's steps in order. res holds what the plan reports; when a
// step fails, Apply corrects it to what happened: a file that was not replaced or removed
// is no change (and the reload recorded for it is withdrawn), while a file that moved
// stays a change whose reload stays due.
func (d Deps) Apply(ctx context.Context, w Want, f File, plan Plan, res *Result) error {
	full := d.full(w.Path)
	recorded := ""
	unchanged := func(err error) error {
		res.Changed, res.UnitFilesChanged, res.DaemonReload = false, false, contract.ReloadNone
		if recorded != "" {
			// The deadline may have passed: withdrawing gets a short one of its own.
			rctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
			defer cancel()
			if rerr := d.Sync.RemoveManagerSyncEntry(rctx, recorded); rerr != nil {
				return fmt.Errorf("%w (and withdrawing the manager reload recorded for it failed: %v)", err, rerr)
			}
		}
		return err
	}
	for _, step := range plan.Steps {
		switch step {
		case StepSecureDir:
			if err := secureDir(d.full(path.Dir(w.Path))); err != nil {
				res.Changed = false
				return err
			}
		case StepRemoveStale:
			if _, err := atomicfile.RemoveStale(full); err != nil {
				return unchanged(err)
			}
		case StepRecordReload:
			id, err := d.Sync.MarkManagerSyncDue(ctx, "unit_override "+w.Path+" changed")
			if err != nil {
				return unchanged(fmt.Errorf("%s not changed: recording the manager reload it needs failed: %w", w.Path, err))
			}
			recorded = id
		case StepWrite:
			if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
				return unchanged(fmt.Errorf("create %s: %w", filepath.Dir(full), err))
			}
			if err := atomicfile.Write(full, w.Content, atomicfile.Options{Mode: w.Mode, UID: w.UID, GID: w.GID}); err != nil {
				if errors.Is(err, atomicfile.ErrNotReplaced) {
					return unchanged(err)
				}
				res.Stamp(time.Now())
				return fmt.Errorf("%w (the manager reload stays due)", err)
			}
		case StepAttributes:
			if err := setAttributes(full, w, f); err != nil {
				return err
			}
		case StepRemove:
			if err := atomicfile.Remove(full); err != nil {
				if _, serr := os.Lstat(full); serr == nil {
					return unchanged(err)
				}
				res.Stamp(time.Now())
				return fmt.Errorf("%w (the manager reload stays due)", err)
			}
			// A drop-in directory this module emptied goes too; the unit directory stays.
			if dir := filepath.Dir(full); strings.HasSuffix(dir, ".d") {
				if entries, err := os.ReadDir(dir); err == nil && len(entries) == 0 {
					if err := os.Remove(dir); err != nil {
						res.Stamp(time.Now())
						return fmt.Errorf("remove empty %s: %w (the manager reload stays due)", dir, err)
					}
				}
			}
		case StepDaemonReload:
			res.Stamp(time.Now())
			if err := d.reloadManager(ctx, w.Path); err != nil {
				res.DaemonReload = contract.ReloadNeeded
				return err
			}
		}
	}
	if res.Changed {
		res.Stamp(time.Now())
	}
	return nil
}

// secureDir takes the write bits of group and others off a drop-in directory (first, so
// no moment is looser) and gives it to root.
func secureDir(dir string) error {
	fi, err := os.Stat(dir)
	if err != nil {
		return fmt.Errorf("secure %s: %w", dir, err)
	}
	if err := os.Chmod(dir, fi.Mode().Perm()&^0o022); err != nil {
		return fmt.Errorf("secure %s: %w", dir, err)
	}
	if err := os.Chown(dir, 0, 0); err != nil {
		return fmt.Errorf("secure %s: %w", dir, err)
	}
	return nil
}

// setAttributes tightens the mode before changing the owner, so no moment is looser than
// both, then sets the final mode.
func setAttributes(full string, w Want, f File) error {
	if err := os.Chmod(full, w.Mode&f.Mode); err != nil {
		return fmt.Errorf("set mode of %s: %w", full, err)
	}
	if err := os.Lchown(full, w.UID, w.GID); err != nil {
		return fmt.Errorf("set owner of %s: %w", full, err)
	}
	if err := os.Chmod(full, w.Mode); err != nil {
		return fmt.Errorf("set mode of %s: %w", full, err)
	}
	return nil
}

// reloadManager reloads systemd's manager through systemctl. The reload this change owes
// was recorded before the file moved, so a failed reload leaves it due for the next
// systemd_lifecycle run; a successful one settles every entry seen before it, that one
// included.
func (d Deps) reloadManager(ctx context.Context, p string) error {
	err := systemd.ReloadSeen(ctx, systemd.Systemctl{Runner: d.Runner}, d.Sync)
	if err != nil && errors.Is(err, systemd.ErrReload) {
		return fmt.Errorf("%s was written but systemctl daemon-reload failed (recorded as due for the next systemd_lifecycle run): %w", p, err)
	}
	return err
}

// capability is the merged unit's reload capability after the change (predicted in check
// mode, where the file on disk is still the old one).
func (d Deps) capability(unit, p string, content []byte, present, check bool) (unitfile.Capability, error) {
	frag, dropIns := unitfile.Files(d.Root, unit)
	sources, err := unitfile.ReadSources(d.Root, frag, dropIns)
	if err != nil {
		return unitfile.Capability{}, err
	}
	if check {
		sources = unitfile.Replace(sources, p, content, present, p == path.Join(UnitDir, unit))
	}
	return unitfile.Reloadable(sources)
}

// PredictChange answers, reading only, whether a run with these arguments would change
// the file's content (what unit_files_changed reports): the service module records the
// reactions a file change will owe before it changes anything.
func PredictChange(root string, args map[string]any) (bool, error) {
	s := Spec()
	vals, err := s.Validate(args)
	if err != nil {
		return false, err
	}
	var v Params
	if err := s.Decode(vals, &v); err != nil {
		return false, err
	}
	_, p, err := target(v)
	if err != nil {
		return false, err
	}
	f, err := Observe(root, p)
	if err != nil {
		return false, err
	}
	if v.State == "absent" {
		return f.Exists, nil
	}
	// Content, mode or owner: every change of the file reaches a process as a changed
	// trigger (the owner is root unless the task names another, as in the service module).
	w := Want{Unit: v.Unit, Path: p, Present: true, Content: []byte(v.content()), Mode: v.Mode}
	plan, err := Decide(w, f)
	if err != nil {
		return false, err
	}
	return plan.Changed(), nil
}
