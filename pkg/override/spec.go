package override

import (
	"fmt"
	"os"
	"path"
	"strings"
	"time"

	"github.com/richt/services/pkg/ansible"
	"github.com/richt/services/pkg/safefile"
	"github.com/richt/services/pkg/unitfile"
	"github.com/richt/services/pkg/unitname"
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

// Task is one validated request, as the Spec parses it for the handler: the parameters
// and what they name without reading the target.
type Task struct {
	Params Params
	// Unit is the unit's normalised name (demo → demo.service).
	Unit string
	// Path is the file the task manages: the unit file or the drop-in under UnitDir.
	Path string
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
	ansible.ParseInto(s, parse)
	return s
}

// parse checks what no table can express (the file's place, its mode, the content as a
// unit file) and returns the typed request.
func parse(p Params) (Task, error) {
	unit, file, err := target(p)
	if err != nil {
		return Task{}, err
	}
	if err := safefile.CheckMode("mode", p.Mode, describeFile(p)); err != nil {
		return Task{}, err
	}
	if p.State == "present" {
		if _, err := unitfile.Parse([]byte(p.content())); err != nil {
			return Task{}, fmt.Errorf("content is not a valid unit file: %w; nothing was written", err)
		}
	} else if p.Content != nil {
		return Task{}, fmt.Errorf("content: not allowed with state=absent")
	}
	return Task{Params: p, Unit: unit, Path: file}, nil
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
