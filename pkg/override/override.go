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

	"github.com/richt/services/pkg/ansible"
	"github.com/richt/services/pkg/atomicfile"
	"github.com/richt/services/pkg/runner"
	"github.com/richt/services/pkg/timeout"
	"github.com/richt/services/pkg/unitfile"
	"github.com/richt/services/pkg/unitname"
)

// UnitDir is where owned units and drop-ins live: the administrator's directory, which
// has the highest priority of systemd's persistent unit directories.
const UnitDir = "/etc/systemd/system"

// SyncRecorder records that systemd's manager must be reloaded (package durable).
type SyncRecorder interface {
	MarkManagerSyncDue(reason string) error
	ClearManagerSync() error
}

// Deps are the module's side effects.
type Deps struct {
	Runner runner.Runner
	Sync   SyncRecorder
	// Root is the filesystem root ("" for /); tests point it at a temporary directory.
	Root string
}

// Result is the module's return value.
type Result struct {
	Changed       bool                 `json:"changed"`
	Unit          string               `json:"unit"`
	Path          string               `json:"path"`
	State         string               `json:"state"`
	Operation     string               `json:"operation"`
	DaemonReload  string               `json:"daemon_reload"`
	ReloadCapable *unitfile.Capability `json:"reload_capable"`
	Diff          *ansible.Diff        `json:"diff,omitempty"`
}

// Operations, as reported in `operation`.
const (
	OpNone       = "none"
	OpCreate     = "create"
	OpUpdate     = "update"
	OpAttributes = "attributes"
	OpRemove     = "remove"
)

// daemon_reload values.
const (
	ReloadPerformed = "performed"
	ReloadNeeded    = "needed"
	ReloadNone      = "none"
)

// Spec is unit_override's parameter contract.
func Spec() *ansible.Spec {
	return &ansible.Spec{
		Name: "unit_override",
		Params: []ansible.Param{
			{Name: "unit", Kind: ansible.Str, Required: true, Help: "unit name, e.g. demo.service"},
			{Name: "name", Kind: ansible.Str, Help: "drop-in file name ending in .conf; omit for the full unit file"},
			{Name: "content", Kind: ansible.Str, Help: "file content (unit file syntax)"},
			{Name: "path", Kind: ansible.Str, Help: "must equal the default location when given"},
			{Name: "mode", Kind: ansible.Mode, Default: "0644", Help: "file mode"},
			{Name: "owner", Kind: ansible.Str, Default: "root", Help: "owner name or uid"},
			{Name: "group", Kind: ansible.Str, Default: "root", Help: "group name or gid"},
			{Name: "sensitive", Kind: ansible.Bool, Default: false, Help: "keep the content out of results and diffs"},
			{Name: "state", Kind: ansible.Str, Default: "present", Choices: []string{"present", "absent"}, Help: "present or absent"},
			{Name: "daemon_reload", Kind: ansible.Bool, Default: true, Help: "reload systemd's manager when the file changed"},
			{Name: "timeout", Kind: ansible.Duration, Default: "30s", Help: "deadline for the daemon-reload"},
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
		Check: func(v ansible.Values) error {
			if _, _, err := target(v); err != nil {
				return err
			}
			if v.String("state") == "present" {
				if _, err := unitfile.Parse([]byte(v.String("content"))); err != nil {
					return fmt.Errorf("content is not a valid unit file: %w; nothing was written", err)
				}
			} else if v.IsSet("content") {
				return fmt.Errorf("content: not allowed with state=absent")
			}
			return nil
		},
	}
}

// target returns the normalised unit and the file's path.
func target(v ansible.Values) (unit, p string, err error) {
	unit, err = unitname.Normalize(v.String("unit"))
	if err != nil {
		return "", "", err
	}
	p = path.Join(UnitDir, unit)
	if v.IsSet("name") {
		n := v.String("name")
		if err := validDropInName(n); err != nil {
			return "", "", err
		}
		p = path.Join(UnitDir, unit+".d", n)
	}
	if v.IsSet("path") && v.String("path") != p {
		return "", "", fmt.Errorf("path: %q is not where this module manages %s; the only allowed value is %q (or omit path)", v.String("path"), describeTarget(v), p)
	}
	return unit, p, nil
}

func describeTarget(v ansible.Values) string {
	if v.IsSet("name") {
		return "the drop-in " + v.String("name")
	}
	return "the unit file"
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

func lookupID(param, v string, lookup func(string) (string, error)) (int, error) {
	if n, err := strconv.Atoi(v); err == nil && n >= 0 {
		return n, nil
	}
	id, err := lookup(v)
	if err != nil {
		return 0, fmt.Errorf("%s: %q is not a known name or a numeric id on the target: %w", param, v, err)
	}
	return strconv.Atoi(id)
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
		v := req.Params
		unit, p, _ := target(v) // validated by Spec.Check
		ctx, cancel := timeout.Deadline(ctx, v.Duration("timeout"))
		defer cancel()
		res := &Result{Unit: unit, Path: p, State: v.String("state"), Operation: OpNone, DaemonReload: ReloadNone}
		present := v.String("state") == "present"
		content := []byte(v.String("content"))
		mode := v.Mode("mode")

		uid, err := lookupID("owner", v.String("owner"), func(s string) (string, error) {
			u, err := user.Lookup(s)
			if err != nil {
				return "", err
			}
			return u.Uid, nil
		})
		if err != nil {
			return res, err
		}
		gid, err := lookupID("group", v.String("group"), func(s string) (string, error) {
			g, err := user.LookupGroup(s)
			if err != nil {
				return "", err
			}
			return g.Gid, nil
		})
		if err != nil {
			return res, err
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
			res.Diff = diff(p, cur, content, present, mode, uid, gid, v.Bool("sensitive"))
		}
		if contentChanged {
			res.DaemonReload = ReloadNeeded
			if v.Bool("daemon_reload") {
				res.DaemonReload = ReloadPerformed
			}
		}

		if !req.CheckMode {
			if err := d.apply(res.Operation, full, content, mode, uid, gid, cur); err != nil {
				return res, err
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
	if res.DaemonReload == ReloadNeeded {
		return d.Sync.MarkManagerSyncDue("unit_override " + res.Path + " changed")
	}
	out, err := d.Runner.Run(ctx, "systemctl", "daemon-reload")
	if err == nil && out.ExitCode != 0 {
		err = fmt.Errorf("exit %d: %s", out.ExitCode, out.Output())
	}
	if err != nil {
		// The file is written; make sure the next systemd_lifecycle run still syncs.
		_ = d.Sync.MarkManagerSyncDue("unit_override " + res.Path + " changed; daemon-reload failed")
		res.DaemonReload = ReloadNeeded
		return fmt.Errorf("%s was written but systemctl daemon-reload failed (recorded as due for the next systemd_lifecycle run): %w", res.Path, err)
	}
	return d.Sync.ClearManagerSync()
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
		return fmt.Sprintf("# mode %04o, owner %d, group %d\n", uint32(m), u, g)
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
