package molecule

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
)

// writeInventory writes the scenario's inventory: every platform under all, reached
// through community.docker.docker by container ID, in its groups, with
// provisioner.inventory's host and group variables.
func (s *scenario) writeInventory() error {
	return s.writeInventoryAt(filepath.Join(s.stateDir, "inventory.yml"))
}

// syntaxInventory is the syntax check's own inventory: the check may run while create
// writes the real one (see scenario.run).
const syntaxInventory = "syntax-inventory.yml"

func (s *scenario) writeInventoryAt(path string) error {
	ids := map[string]string{}
	for _, in := range s.state.Instances {
		ids[in.Name] = in.ContainerID
	}
	hosts := map[string]any{}
	children := map[string]map[string]any{}
	for _, p := range s.cfg.Platforms {
		vars := map[string]any{
			"ansible_connection":         "community.docker.docker",
			"ansible_python_interpreter": "/usr/bin/python3",
		}
		if id := ids[p.Name]; id != "" {
			vars["ansible_host"] = id
		}
		for k, v := range s.cfg.Provisioner.HostVars[p.Name] {
			vars[k] = v
		}
		hosts[p.Name] = vars
		for _, g := range p.Groups {
			if children[g] == nil {
				children[g] = map[string]any{"hosts": map[string]any{}}
			}
			children[g]["hosts"].(map[string]any)[p.Name] = map[string]any{}
		}
	}
	for g, vars := range s.cfg.Provisioner.GroupVars {
		if g == "all" {
			continue
		}
		if children[g] == nil {
			children[g] = map[string]any{"hosts": map[string]any{}}
		}
		children[g]["vars"] = vars
	}
	all := map[string]any{"hosts": hosts}
	if len(children) > 0 {
		all["children"] = children
	}
	if v := s.cfg.Provisioner.GroupVars["all"]; len(v) > 0 {
		all["vars"] = v
	}
	data, err := json.MarshalIndent(map[string]any{"all": all}, "", "  ") // JSON is YAML
	if err != nil {
		return fmt.Errorf("inventory: %w", err)
	}
	if err := os.MkdirAll(s.stateDir, 0o700); err != nil {
		return err
	}
	return os.WriteFile(path, data, 0o600)
}

// ansibleConfig writes provisioner.config_options as the run's ansible.cfg, over the
// defaults Molecule also sets.
func (s *scenario) ansibleConfig() (string, error) {
	sections := map[string]map[string]any{
		"defaults":       {"host_key_checking": "False", "retry_files_enabled": "False", "nocows": "1"},
		"ssh_connection": {},
	}
	for sec, kv := range s.cfg.Provisioner.ConfigOptions {
		if sections[sec] == nil {
			sections[sec] = map[string]any{}
		}
		for k, v := range kv {
			sections[sec][k] = v
		}
	}
	var b strings.Builder
	for _, sec := range slices.Sorted(maps.Keys(sections)) {
		fmt.Fprintf(&b, "[%s]\n", sec)
		for _, k := range slices.Sorted(maps.Keys(sections[sec])) {
			v := sections[sec][k]
			switch t := v.(type) {
			case bool:
				v = map[bool]string{true: "True", false: "False"}[t]
			case []any:
				parts := make([]string, len(t))
				for i, e := range t {
					parts[i] = fmt.Sprint(e)
				}
				v = strings.Join(parts, ",")
			}
			fmt.Fprintf(&b, "%s = %v\n", k, v)
		}
	}
	path := filepath.Join(s.stateDir, "ansible.cfg")
	return path, os.WriteFile(path, []byte(b.String()), 0o600)
}

// optionArgs turns provisioner.options (and verifier.options) into command arguments,
// Molecule's way: a true flag is --KEY (-KEY for one letter, and vvv: true is -vvv), a
// false or empty one is left out, a value is --KEY=VALUE, a list repeats the flag. A
// one-letter flag's value is a separate argument: pytest reads "-p NAME" before argparse
// does and would take "-p=NAME" as the plugin "=NAME".
func optionArgs(options map[string]any) []string {
	var args []string
	for _, k := range slices.Sorted(maps.Keys(options)) {
		flag := "--" + strings.ReplaceAll(k, "_", "-")
		if len(k) == 1 || strings.Trim(k, "v") == "" {
			flag = "-" + k
		}
		values := []any{options[k]}
		if list, ok := options[k].([]any); ok {
			values = list
		}
		for _, v := range values {
			switch t := v.(type) {
			case bool:
				if t {
					args = append(args, flag)
				}
			case nil:
			default:
				if len(k) == 1 {
					args = append(args, flag, fmt.Sprint(t))
				} else {
					args = append(args, flag+"="+fmt.Sprint(t))
				}
			}
		}
	}
	return args
}

// env is ansible-playbook's environment: the process's, Molecule's variables, the paths
// that find the role under test, and provisioner.env last.
func (s *scenario) env(cfgPath string) []string {
	env := append(os.Environ(), s.r.Env...)
	for _, k := range slices.Sorted(maps.Keys(s.mvars)) {
		env = append(env, k+"="+s.mvars[k])
	}
	roles := []string{filepath.Join(s.stateDir, "roles"), filepath.Dir(s.project), filepath.Join(s.project, "roles")}
	if v := s.r.Getenv("ANSIBLE_ROLES_PATH"); v != "" {
		roles = append(roles, v)
	}
	tmp := filepath.Join(s.stateDir, "tmp")
	_ = os.MkdirAll(tmp, 0o700)
	env = append(env, "ANSIBLE_CONFIG="+cfgPath, "ANSIBLE_ROLES_PATH="+strings.Join(roles, ":"),
		"ANSIBLE_NOCOLOR=1", "ANSIBLE_FORCE_COLOR=0", "ANSIBLE_LOCAL_TEMP="+tmp, "ANSIBLE_RETRY_FILES_ENABLED=false")
	for _, k := range slices.Sorted(maps.Keys(s.cfg.Provisioner.Env)) {
		env = append(env, k+"="+s.cfg.Provisioner.Env[k])
	}
	return env
}

// playbook runs an action's playbook and prints the unit events it caused.
func (s *scenario) playbook(ctx context.Context, action, path string, args []string, vars map[string]any) error {
	_, err := s.playbookEvents(ctx, action, path, args, vars)
	return err
}

func (s *scenario) playbookOutput(ctx context.Context, action, path string, args []string, vars map[string]any) (string, error) {
	out, _, err := s.runPlaybook(ctx, action, path, args, vars)
	return out, err
}

// playbookEvents runs the playbook, then reads each instance's journal and prints (and
// returns) what happened to which unit.
func (s *scenario) playbookEvents(ctx context.Context, action, path string, args []string, vars map[string]any) (map[string]map[string]UnitEvents, error) {
	_, events, err := s.runPlaybook(ctx, action, path, args, vars)
	return events, err
}

func (s *scenario) runPlaybook(ctx context.Context, action, path string, args []string, vars map[string]any) (string, map[string]map[string]UnitEvents, error) {
	// The idempotence run is verbose only for the runner to read what changed; unchanged
	// results are shown as a plain run shows them.
	quietOK := action == "idempotence" && !verbose(s.cfg.Provisioner.Options, s.r.PlaybookArgs)
	cfgPath, err := s.ansibleConfig()
	if err != nil {
		return "", nil, fmt.Errorf("ansible.cfg: %w", err)
	}
	inventory := filepath.Join(s.stateDir, "inventory.yml")
	if action == "syntax" {
		inventory = filepath.Join(s.stateDir, syntaxInventory)
	}
	argv := []string{"-i", inventory}
	if len(vars) > 0 {
		data, err := json.Marshal(vars)
		if err != nil {
			return "", nil, err
		}
		argv = append(argv, "-e", string(data))
	}
	argv = append(argv, optionArgs(s.cfg.Provisioner.Options)...)
	argv = append(argv, args...)
	argv = append(argv, s.r.PlaybookArgs...)
	argv = append(argv, path)
	s.logf("%s: Executing %s", action, filepath.Base(path))
	cmd := exec.CommandContext(ctx, s.r.AnsiblePlaybook, argv...)
	cmd.Dir = s.dir
	cmd.Env = s.env(cfgPath)
	var buf bytes.Buffer
	shown := s.out
	if quietOK {
		shown = okFilter(s.out)
	}
	w := io.MultiWriter(&buf, shown)
	cmd.Stdout, cmd.Stderr = w, w
	runErr := cmd.Run()
	out := buf.String()
	var events map[string]map[string]UnitEvents
	if s.state.Created && action != "syntax" {
		var eerr error
		if events, eerr = s.unitEvents(ctx); eerr != nil {
			s.logf("%s: systemd events unknown: %v", action, eerr)
		}
		for _, in := range s.state.Instances {
			for _, l := range FormatEvents(in.Name, events[in.Name]) {
				s.logf("%s: systemd %s", action, l)
			}
		}
	}
	if runErr != nil {
		var ee *exec.ExitError
		if errors.As(runErr, &ee) {
			return out, events, &ExitError{Code: ee.ExitCode(),
				Msg: fmt.Sprintf("Ansible return code was %d, command was: %s", ee.ExitCode(), shellJoin(append([]string{s.r.AnsiblePlaybook}, argv...)))}
		}
		return out, events, failf("%s: run %s: %v", action, s.r.AnsiblePlaybook, runErr)
	}
	return out, events, nil
}

func shellJoin(argv []string) string {
	q := make([]string, len(argv))
	for i, a := range argv {
		if a != "" && !strings.ContainsAny(a, " \t\n'\"\\$`{}[]*?;&|<>()") {
			q[i] = a
		} else {
			q[i] = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
		}
	}
	return strings.Join(q, " ")
}

// lineWriter hands each whole line written to it, newline included, to emit; a line
// split across writes waits for its end. emit must not keep the slice.
type lineWriter struct {
	buf  []byte
	emit func(line []byte) error
}

func (l *lineWriter) Write(b []byte) (int, error) {
	l.buf = append(l.buf, b...)
	for {
		i := bytes.IndexByte(l.buf, '\n')
		if i < 0 {
			return len(b), nil
		}
		line := l.buf[:i+1]
		l.buf = l.buf[i+1:]
		if err := l.emit(line); err != nil {
			return 0, err
		}
	}
}

// okFilter drops the result JSON -v adds to "ok:" and "skipping:" lines.
func okFilter(w io.Writer) io.Writer {
	inJSON := false
	return &lineWriter{emit: func(line []byte) error {
		if inJSON {
			// A result printed indented (assert's, debug's) ends with a lone "}".
			inJSON = !bytes.Equal(line, []byte("}\n"))
			return nil
		}
		if bytes.HasPrefix(line, []byte("ok: [")) || bytes.HasPrefix(line, []byte("skipping: [")) {
			if j := bytes.Index(line, []byte(" => {")); j >= 0 {
				inJSON = bytes.Equal(line[j:], []byte(" => {\n"))
				line = append(line[:j:j], '\n')
			}
		}
		_, err := w.Write(line)
		return err
	}}
}

// prefixWriter prefixes every line with the scenario's name, so scenarios running at once
// can be told apart; lines are written whole, under one lock for all scenarios.
func prefixWriter(w io.Writer, prefix string, mu *sync.Mutex) io.Writer {
	return &lineWriter{emit: func(line []byte) error {
		mu.Lock()
		defer mu.Unlock()
		_, err := fmt.Fprintf(w, "%s%s", prefix, line)
		return err
	}}
}

// Instances lists a scenario's instances from its state, for list and login.
func (r *Runner) Instances(name string) ([]Instance, *scenario, error) {
	r.defaults()
	s, err := r.load(name)
	if err != nil {
		return nil, nil, err
	}
	st, err := loadState(s.stateDir)
	if err != nil {
		return nil, nil, failf("%v", err)
	}
	s.state = st
	return st.Instances, s, nil
}

// List writes Molecule's instance table for the scenarios, with the target standing in
// for each image.
func (r *Runner) List(scenarios []string) error {
	r.defaults()
	fmt.Fprintf(r.Out, "%-14s %-11s %-16s %-14s %-8s %-10s %s\n", "Instance Name", "Driver Name", "Provisioner Name", "Scenario Name", "Created", "Converged", "Stands in (image ← target)")
	for _, name := range scenarios {
		insts, s, err := r.Instances(name)
		if err != nil {
			return err
		}
		byName := map[string]Instance{}
		for _, in := range insts {
			byName[in.Name] = in
		}
		for i, p := range s.cfg.Platforms {
			target := s.gens[i].String()
			if in, ok := byName[p.Name]; ok && in.Image != "" {
				target = in.Image
			}
			fmt.Fprintf(r.Out, "%-14s %-11s %-16s %-14s %-8t %-10t %s ← %s\n", p.Name, "docker", "ansible", name,
				s.state.Created, s.state.Converged, p.Image, target)
		}
	}
	return nil
}

// LoginArgv is the docker command that opens a shell in the scenario's instance (Host, or
// the only one).
func (r *Runner) LoginArgv(name string) ([]string, error) {
	insts, s, err := r.Instances(name)
	if err != nil {
		return nil, err
	}
	if !s.state.Created || len(insts) == 0 {
		return nil, failf("Instances not created. Please create instances first (richt-molecule create -s %s).", name)
	}
	if r.Host == "" && len(insts) > 1 {
		names := make([]string, len(insts))
		for i, in := range insts {
			names[i] = in.Name
		}
		return nil, failf("There are %d running hosts. Please specify which with --host: %s", len(insts), strings.Join(names, ", "))
	}
	for _, in := range insts {
		if r.Host == "" || in.Name == r.Host {
			return []string{"docker", "exec", "-it", "-e", "TERM=" + orDefault(os.Getenv("TERM"), "xterm"), in.ContainerID, "/bin/bash", "-l"}, nil
		}
	}
	return nil, failf("There is no host named %q in scenario %s.", r.Host, name)
}

func orDefault(s, d string) string {
	if s == "" {
		return d
	}
	return s
}
