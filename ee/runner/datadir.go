package runner

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// DataDir is an ansible-runner private data directory, laid out as AWX writes one for a
// job: the project, the inventory, the machine credential's SSH key and the job's settings.
type DataDir struct {
	// Project holds the files under project/ by relative path (the playbook among them).
	Project map[string][]byte
	// Inventory is written as inventory/hosts.json (JSON is YAML to Ansible's inventory).
	Inventory any
	// SSHKey is the machine credential's private key (env/ssh_key): ansible-runner loads
	// it into an ssh-agent for the job, so the key never needs a path in the inventory.
	SSHKey []byte
	// EnvVars (env/envvars) are the job's environment, ANSIBLE_PIPELINING among them.
	EnvVars map[string]string
	// ExtraVars (env/extravars) are the job's extra variables.
	ExtraVars map[string]any
	// Cmdline (env/cmdline) are more ansible-playbook arguments, such as --check --diff.
	Cmdline string
}

// Write lays the directory out at dir, which must be empty or missing (then it is created).
//
// A directory that already holds files is refused rather than cleared: ansible-runner
// reads whatever is there, so an earlier job's env/cmdline (--check, say) would become
// this job's whenever the new Cmdline is empty, and deleting a caller's files to avoid
// that could take a directory that was never a private data dir. A new job gets a new
// directory.
func (d DataDir) Write(dir string) error {
	if len(d.Project) == 0 {
		return fmt.Errorf("private data dir: no project files")
	}
	for rel := range d.Project {
		c := filepath.Clean(rel)
		if filepath.IsAbs(rel) || c == "." || c == ".." || strings.HasPrefix(c, "../") {
			return fmt.Errorf("private data dir: project file %q: not a relative path inside project/", rel)
		}
	}
	switch entries, err := os.ReadDir(dir); {
	case err == nil && len(entries) > 0:
		return fmt.Errorf("private data dir %s: not empty (%s, ...): an earlier job's files would become this job's; write into a new directory", dir, entries[0].Name())
	case err != nil && !errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("private data dir: %w", err)
	}
	// Every file is encoded before the first is written: bad input changes nothing.
	type file struct {
		rel  string
		data []byte
		mode os.FileMode
	}
	var files []file
	for rel, data := range d.Project {
		files = append(files, file{filepath.Join("project", rel), data, 0o644})
	}
	asJSON := func(rel string, v any) error {
		data, err := json.MarshalIndent(v, "", "  ")
		if err != nil {
			return fmt.Errorf("private data dir: %s: %w", rel, err)
		}
		files = append(files, file{rel, data, 0o644})
		return nil
	}
	if d.Inventory != nil {
		if err := asJSON("inventory/hosts.json", d.Inventory); err != nil {
			return err
		}
	}
	if len(d.EnvVars) > 0 {
		if err := asJSON("env/envvars", d.EnvVars); err != nil {
			return err
		}
	}
	if len(d.ExtraVars) > 0 {
		if err := asJSON("env/extravars", d.ExtraVars); err != nil {
			return err
		}
	}
	if len(d.SSHKey) > 0 {
		files = append(files, file{"env/ssh_key", d.SSHKey, 0o600})
	}
	if d.Cmdline != "" {
		files = append(files, file{"env/cmdline", []byte(d.Cmdline), 0o644})
	}
	for _, f := range files {
		p := filepath.Join(dir, f.rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return fmt.Errorf("private data dir: %w", err)
		}
		if err := os.WriteFile(p, f.data, f.mode); err != nil {
			return fmt.Errorf("private data dir: %w", err)
		}
	}
	return nil
}
