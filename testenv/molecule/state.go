package molecule

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// State is what a scenario's run leaves for the next sub-command: its instances and how
// far the sequence got. It lives in the scenario's own state directory (Molecule's
// ephemeral directory), never shared with another scenario or project.
type State struct {
	Instances []Instance `json:"instances"`
	Created   bool       `json:"created"`
	Prepared  bool       `json:"prepared"`
	Converged bool       `json:"converged"`
	// Upgraded is true once an upgrade scenario's upgrade action ran: later converges use
	// richt.upgrade.to.
	Upgraded bool `json:"upgraded"`
}

// Instance is one platform's target.
type Instance struct {
	Name        string `json:"name"`
	ContainerID string `json:"container_id"`
	Image       string `json:"image"`
	StandsIn    string `json:"stands_in"`
}

// StateDir is the scenario's state directory under root: the project's base name and a
// hash of its absolute path (two checkouts of one role never meet), then the scenario.
func StateDir(root, projectDir, scenario string) (string, error) {
	abs, err := filepath.Abs(projectDir)
	if err != nil {
		return "", fmt.Errorf("project directory %s: %w", projectDir, err)
	}
	sum := sha256.Sum256([]byte(abs))
	return filepath.Join(root, filepath.Base(abs)+"-"+hex.EncodeToString(sum[:])[:10], scenario), nil
}

// DefaultStateRoot is $XDG_CACHE_HOME/richt-molecule, else ~/.cache/richt-molecule.
func DefaultStateRoot(getenv func(string) string) string {
	if d := getenv("XDG_CACHE_HOME"); d != "" {
		return filepath.Join(d, "richt-molecule")
	}
	home := getenv("HOME")
	if home == "" {
		home = os.TempDir()
	}
	return filepath.Join(home, ".cache", "richt-molecule")
}

func loadState(dir string) (State, error) {
	var s State
	data, err := os.ReadFile(filepath.Join(dir, "state.json"))
	if errors.Is(err, fs.ErrNotExist) {
		return s, nil
	}
	if err != nil {
		return s, fmt.Errorf("read state: %w", err)
	}
	if err := json.Unmarshal(data, &s); err != nil {
		return s, fmt.Errorf("state %s: %w", filepath.Join(dir, "state.json"), err)
	}
	return s, nil
}

func saveState(dir string, s State) error {
	data, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return err
	}
	tmp := filepath.Join(dir, "state.json.tmp")
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		return fmt.Errorf("write state: %w", err)
	}
	return os.Rename(tmp, filepath.Join(dir, "state.json"))
}

// lockState takes the scenario's state directory for this process; a second run of the
// same scenario of the same project is refused instead of sharing its targets.
func lockState(dir string) (func(), error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("state directory: %w", err)
	}
	f, err := os.OpenFile(filepath.Join(dir, "lock"), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, fmt.Errorf("state lock: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		return nil, fmt.Errorf("state directory %s is in use by another richt-molecule run of this scenario", dir)
	}
	return func() { f.Close() }, nil
}
