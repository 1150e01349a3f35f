// Package override owns one systemd unit file or drop-in: written atomically with its
// final mode and owner from the start, parsed before it is written, never shown when it
// is sensitive, and followed by exactly one daemon-reload when it changed (or a durable
// record that one is due, for a later systemd_lifecycle task).
package override

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/user"
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
			// Any spelling Ansible accepts as true hides the content, also when the
			// parameters turn out to be invalid.
			switch v := raw["sensitive"].(type) {
			case bool:
				if v {
					return []string{"content"}
				}
			case string:
				switch strings.ToLower(v) {
				case "yes", "true", "on", "1", "y", "t":
					return []string{"content"}
				}
			case float64:
				if v == 1 {
					return []string{"content"}
				}
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

// current is the file as it is on disk.
type current struct {
	exists   bool
	content  []byte
	mode     os.FileMode
	uid, gid int
}

func observe(full string) (current, error) {
	fi, err := os.Lstat(full)
	if errors.Is(err, os.ErrNotExist) {
		return current{}, nil
	}
	if err != nil {
		return current{}, fmt.Errorf("inspect %s: %w", full, err)
	}
	if !fi.Mode().IsRegular() {
		return current{}, fmt.Errorf("%s exists and is not a regular file (%s); remove it or choose another name", full, fi.Mode().Type())
	}
	data, err := os.ReadFile(full)
	if err != nil {
		return current{}, fmt.Errorf("read %s: %w", full, err)
	}
	st, _ := fi.Sys().(*syscall.Stat_t)
	c := current{exists: true, content: data, mode: fi.Mode().Perm() | fi.Mode()&(os.ModeSetuid|os.ModeSetgid|os.ModeSticky)}
	if st != nil {
		c.uid, c.gid = int(st.Uid), int(st.Gid)
	}
	return c, nil
}

// lookupUID and lookupGID resolve owner and group on the target. A numeric id must
// exist as well as a name: chown accepts any number, and a file owned by an id nobody has
// today belongs to whoever is given that id tomorrow.
func lookupUID(v string) (int, error) {
	return lookupID("owner", "user", v, func(s string) (string, error) {
		u, err := user.Lookup(s)
		if err != nil {
			return "", err
		}
		return u.Uid, nil
	}, func(s string) error { _, err := user.LookupId(s); return err })
}

func lookupGID(v string) (int, error) {
	return lookupID("group", "group", v, func(s string) (string, error) {
		g, err := user.LookupGroup(s)
		if err != nil {
			return "", err
		}
		return g.Gid, nil
	}, func(s string) error { _, err := user.LookupGroupId(s); return err })
}

func lookupID(param, kind, v string, byName func(string) (string, error), byID func(string) error) (int, error) {
	if n, err := strconv.ParseUint(v, 10, 32); err == nil {
		if err := byID(strconv.FormatUint(n, 10)); err != nil {
			return 0, fmt.Errorf("%s: %q is a numeric id no %s on the target has (%v); create the %s first or use an existing one", param, v, kind, err, kind)
		}
		return int(n), nil
	}
	id, err := byName(v)
	if err != nil {
		return 0, fmt.Errorf("%s: %q is not a known name or a numeric id on the target (%v); create the %s first or use an existing one", param, v, err, kind)
	}
	return strconv.Atoi(id)
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

// Handler returns unit_override's behaviour over the given side effects.
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
		present := v.State == "present"
		content := []byte(v.content())
		mode := v.Mode

		uid, err := lookupUID(v.Owner)
		if err != nil {
			return res, err
		}
		gid, err := lookupGID(v.Group)
		if err != nil {
			return res, err
		}
		if w := ownerWriteWarning(v.Owner, uid, mode, describeFile(v)); w != "" && present {
			req.Warn("%s", w)
		}

		full := d.full(p)
		cur, err := observe(full)
		if err != nil {
			return res, err
		}
		contentChanged := false
		switch {
		case present && !cur.exists:
			res.Operation, contentChanged = OpCreate, true
		case present && !bytes.Equal(cur.content, content):
			res.Operation, contentChanged = OpUpdate, true
		case present && (cur.mode != mode || cur.uid != uid || cur.gid != gid):
			res.Operation = OpAttributes
		case !present && cur.exists:
			res.Operation, contentChanged = OpRemove, true
		}
		res.Changed = res.Operation != OpNone
		if res.Changed {
			res.Diff = diff(p, cur, content, present, mode, uid, gid, v.Sensitive)
		}
		if contentChanged {
			res.UnitFilesChanged = true
			res.DaemonReload = contract.ReloadNeeded
			if v.DaemonReload {
				res.DaemonReload = contract.ReloadPerformed
			}
		}

		if !req.CheckMode {
			if err := d.apply(res.Operation, full, content, mode, uid, gid, cur); err != nil {
				if res.Operation == OpCreate || res.Operation == OpUpdate {
					// The file is replaced by one rename or not at all: a failed write
					// changed nothing, and nothing is due for systemd's manager.
					res.Changed, res.UnitFilesChanged, res.DaemonReload = false, false, contract.ReloadNone
				}
				return res, err
			}
			if res.Changed {
				res.Stamp(time.Now())
			}
			if contentChanged {
				if err := d.syncManager(ctx, res, unit); err != nil {
					return res, err
				}
			}
		}
		c, err := d.capability(unit, p, content, present, req.CheckMode)
		if err != nil {
			req.Warn("reload capability of %s not determined: %v", unit, err)
		} else {
			res.ReloadCapable = &c
		}
		return res, nil
	}
}

func (d Deps) apply(op, full string, content []byte, mode os.FileMode, uid, gid int, cur current) error {
	// A run killed between creating its temporary file and renaming it left that file
	// behind. Runs for one unit are serialized, so any temporary file of this path is
	// stale: clear it on every run, a converged one included, before writing or removing.
	if _, err := atomicfile.RemoveStale(full); err != nil {
		return err
	}
	switch op {
	case OpCreate, OpUpdate:
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			return fmt.Errorf("create %s: %w", filepath.Dir(full), err)
		}
		return atomicfile.Write(full, content, atomicfile.Options{Mode: mode, UID: uid, GID: gid})
	case OpAttributes:
		// Tighten the mode before changing the owner, so no moment is looser than both.
		if err := os.Chmod(full, mode&cur.mode); err != nil {
			return fmt.Errorf("set mode of %s: %w", full, err)
		}
		if err := os.Lchown(full, uid, gid); err != nil {
			return fmt.Errorf("set owner of %s: %w", full, err)
		}
		if err := os.Chmod(full, mode); err != nil {
			return fmt.Errorf("set mode of %s: %w", full, err)
		}
		return nil
	case OpRemove:
		if err := atomicfile.Remove(full); err != nil {
			return err
		}
		// A drop-in directory this module emptied goes too; the unit directory stays.
		if dir := filepath.Dir(full); strings.HasSuffix(dir, ".d") {
			if entries, err := os.ReadDir(dir); err == nil && len(entries) == 0 {
				if err := os.Remove(dir); err != nil {
					return fmt.Errorf("remove empty %s: %w", dir, err)
				}
			}
		}
	}
	return nil
}

// syncManager reloads systemd's manager once, or records that a reload is due.
func (d Deps) syncManager(ctx context.Context, res *Result, unit string) error {
	if res.DaemonReload == contract.ReloadNeeded {
		_, err := d.Sync.MarkManagerSyncDue(ctx, "unit_override "+res.Path+" changed")
		return err
	}
	// Whatever was recorded as due before this reload is served by it. An unreadable record
	// was not served knowingly: it is left for systemd_lifecycle, which names it.
	seen, serr := d.Sync.ManagerSync()
	if serr != nil {
		seen = durable.Sync{}
	}
	err := systemd.ReloadManager(ctx, systemd.Systemctl{Runner: d.Runner}, d.Sync, seen)
	if err != nil && !errors.Is(err, systemd.ErrReload) {
		return err // reloaded; settling the records failed
	}
	if err != nil {
		// The file is written; make sure the next systemd_lifecycle run still syncs.
		// The deadline has usually passed: recording gets a short one of its own.
		rctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		defer cancel()
		res.DaemonReload = contract.ReloadNeeded
		if _, merr := d.Sync.MarkManagerSyncDue(rctx, "unit_override "+res.Path+" changed; daemon-reload failed"); merr != nil {
			return fmt.Errorf("%s was written but systemctl daemon-reload failed (%w), and recording it as due failed too (%v): run systemctl daemon-reload", res.Path, err, merr)
		}
		return fmt.Errorf("%s was written but systemctl daemon-reload failed (recorded as due for the next systemd_lifecycle run): %w", res.Path, err)
	}
	return nil
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

func diff(p string, cur current, content []byte, present bool, mode os.FileMode, uid, gid int, sensitive bool) *ansible.Diff {
	attrs := func(m os.FileMode, u, g int) string {
		return fmt.Sprintf("# mode %04o, owner %d, group %d\n", ansible.UnixMode(m), u, g)
	}
	before, after := "", ""
	if cur.exists {
		before = attrs(cur.mode, cur.uid, cur.gid) + string(cur.content)
	}
	if present {
		after = attrs(mode, uid, gid) + string(content)
	}
	if sensitive {
		// No bytes of either version, not even a hash of them.
		hidden := "# content hidden: sensitive\n"
		if cur.exists {
			before = attrs(cur.mode, cur.uid, cur.gid) + hidden
		}
		if present {
			after = attrs(mode, uid, gid) + hidden
			if cur.exists && !bytes.Equal(cur.content, content) {
				after += "# (content changed)\n"
			}
		}
	}
	return &ansible.Diff{Before: before, After: after, BeforeHeader: p + " (before)", AfterHeader: p + " (after)"}
}
