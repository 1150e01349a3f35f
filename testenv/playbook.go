package testenv

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/richt/services/testenv/ansibleout"
)

// MitogenStrategyPlugins is where Debian's ansible-mitogen (0.3.3, for ansible-core up to
// 2.14) installs its strategy plugins: a Playbook runs under Mitogen with
// ANSIBLE_STRATEGY_PLUGINS set to it and ANSIBLE_STRATEGY=mitogen_linear (or the play
// keyword strategy: mitogen_linear). Mitogen reaches targets over SSH.
const MitogenStrategyPlugins = "/usr/lib/python3/dist-packages/ansible_mitogen/plugins/strategy"

// Playbook is one ansible-playbook run against targets, reached with the
// community.docker.docker connection (no SSH, nothing to set up in the target) or, with
// Connection "ssh", over SSH with the process's key (see Target.SSH).
type Playbook struct {
	// Path is the playbook file.
	Path string
	// Targets become the hosts of Group (default "targets"), named by their container name.
	Targets []*Target
	Group   string
	// HostVars are added to every host (for example ansible_user for become tests).
	HostVars map[string]any
	// ExtraVars are passed with -e as JSON. Every run also gets testenv_module_timeout,
	// [ModuleTimeout] unless ExtraVars sets it, for plays to give their modules a deadline
	// that fits a loaded test machine (module_defaults, or a task's timeout).
	ExtraVars map[string]any
	// Args are more ansible-playbook arguments, such as --check, --diff, -vvv, -f 2.
	Args []string
	// CollectionsPath and RolesPath are prepended to Ansible's search paths.
	CollectionsPath string
	RolesPath       string
	// Env are extra KEY=VALUE variables for ansible-playbook.
	Env []string
	// Timeout bounds the run (default 10m).
	Timeout time.Duration
	// Connection is "docker" (the default) or "ssh".
	Connection string
	// Command is the ansible-playbook to run (default "ansible-playbook" from PATH), for
	// example a second ansible-core version's wrapper.
	Command string
}

// ModuleTimeoutVar is the extra variable every [Playbook] run gets: [ModuleTimeout], for
// example in a play's module_defaults:
//
//	module_defaults:
//	  my.collection.my_module:
//	    timeout: "{{ testenv_module_timeout }}"
const ModuleTimeoutVar = "testenv_module_timeout"

// Recap is one host's line of the play recap.
type Recap = ansibleout.Recap

// PlaybookResult is a finished run.
type PlaybookResult struct {
	Output   string
	ExitCode int
	// Recap by host name.
	Recap map[string]Recap
	// ChangedTasks lists "TASK NAME (host)" for every task result reported changed.
	ChangedTasks []string
}

// Changed sums the changed counts of all hosts.
func (r PlaybookResult) Changed() int {
	n := 0
	for _, h := range r.Recap {
		n += h.Changed
	}
	return n
}

// Failed sums failed and unreachable counts of all hosts.
func (r PlaybookResult) Failed() int {
	n := 0
	for _, h := range r.Recap {
		n += h.Failed + h.Unreachable
	}
	return n
}

// Name is the target's container name, its host name in inventories.
func (t *Target) Name() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.name == "" {
		t.name = t.ID()[:12]
		if info, err := t.container.Inspect(context.Background()); err == nil {
			t.name = strings.TrimPrefix(info.Name, "/")
		}
	}
	return t.name
}

// Inventory writes a YAML inventory of the targets and returns its path.
func (p Playbook) Inventory(tb testing.TB) string {
	tb.Helper()
	group := p.Group
	if group == "" {
		group = "targets"
	}
	hosts := map[string]any{}
	for _, t := range p.Targets {
		vars := map[string]any{
			"ansible_connection":         "community.docker.docker",
			"ansible_host":               t.ID(),
			"ansible_python_interpreter": "/usr/bin/python3",
		}
		if p.Connection == "ssh" {
			a, err := t.SSH(context.Background())
			if err != nil {
				tb.Fatal(err)
			}
			for k, v := range a.HostVars() {
				vars[k] = v
			}
		}
		for k, v := range p.HostVars {
			vars[k] = v
		}
		hosts[t.Name()] = vars
	}
	inv := map[string]any{"all": map[string]any{"children": map[string]any{group: map[string]any{"hosts": hosts}}}}
	data, err := json.MarshalIndent(inv, "", "  ") // JSON is YAML
	if err != nil {
		tb.Fatal(err)
	}
	path := filepath.Join(tb.TempDir(), "inventory.yml")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		tb.Fatal(err)
	}
	return path
}

// Run runs the playbook. It does not fail the test on a failed play: callers assert on
// the result (RunOK does).
func (p Playbook) Run(tb testing.TB) PlaybookResult {
	tb.Helper()
	timeout := p.Timeout
	if timeout == 0 {
		timeout = 10 * time.Minute
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	vars := map[string]any{ModuleTimeoutVar: ModuleTimeout()}
	for k, v := range p.ExtraVars {
		vars[k] = v
	}
	data, err := json.Marshal(vars)
	if err != nil {
		tb.Fatalf("encode extra vars: %v", err)
	}
	args := []string{"-i", p.Inventory(tb), "-e", string(data)}
	args = append(append(args, p.Args...), p.Path)
	command := p.Command
	if command == "" {
		command = "ansible-playbook"
	}
	cmd := exec.CommandContext(ctx, command, args...)
	tmp := tb.TempDir()
	// SSH control sockets need a short path (Unix sockets allow about 100 bytes); a test's
	// TempDir carries the test name.
	cp, err := os.MkdirTemp("", "rtcp")
	if err != nil {
		tb.Fatal(err)
	}
	defer os.RemoveAll(cp)
	cmd.Env = append(os.Environ(),
		"ANSIBLE_NOCOLOR=1", "ANSIBLE_FORCE_COLOR=0", "ANSIBLE_HOST_KEY_CHECKING=false",
		"ANSIBLE_RETRY_FILES_ENABLED=false", "ANSIBLE_LOCAL_TEMP="+tmp, "ANSIBLE_SSH_CONTROL_PATH_DIR="+cp)
	if p.CollectionsPath != "" {
		cmd.Env = append(cmd.Env, "ANSIBLE_COLLECTIONS_PATH="+p.CollectionsPath)
	}
	if p.RolesPath != "" {
		cmd.Env = append(cmd.Env, "ANSIBLE_ROLES_PATH="+p.RolesPath)
	}
	cmd.Env = append(cmd.Env, p.Env...)
	out, err := cmd.CombinedOutput()
	res := PlaybookResult{Output: string(out)}
	if err != nil {
		if ee, ok := err.(*exec.ExitError); ok {
			res.ExitCode = ee.ExitCode()
		} else {
			tb.Fatalf("run ansible-playbook: %v\n%s", err, out)
		}
	}
	res.Recap, res.ChangedTasks = readOutput(res.Output)
	return res
}

// RunOK runs the playbook and fails the test unless every host finished without failures.
func (p Playbook) RunOK(tb testing.TB) PlaybookResult {
	tb.Helper()
	r := p.Run(tb)
	if r.ExitCode != 0 || r.Failed() > 0 || len(r.Recap) == 0 {
		tb.Fatalf("ansible-playbook %s failed (exit %d):\n%s", p.Path, r.ExitCode, tail(r.Output, 60))
	}
	return r
}

// readOutput reads a run's recap and names each changed result "TASK (host)".
func readOutput(out string) (map[string]Recap, []string) {
	o := ansibleout.Parse(out)
	var changed []string
	for _, c := range o.Changes {
		changed = append(changed, fmt.Sprintf("%s (%s)", c.Task, c.Host))
	}
	return o.Recap, changed
}
