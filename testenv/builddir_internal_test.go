package testenv

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"testing"
	"time"
)

func TestSweepBuildDirs(t *testing.T) {
	tmp := t.TempDir()
	gone := exec.Command("true")
	if err := gone.Run(); err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	old := now.Add(-3 * time.Hour)
	dirs := map[string]time.Time{
		fmt.Sprintf("richt-testenv-%d-111", gone.Process.Pid): now, // its process is gone
		fmt.Sprintf("richt-testenv-%d-222", os.Getpid()):      old, // this process: kept
		"richt-testenv-build-333":                             old, // the earlier naming, old
		"richt-testenv-build-444":                             now, // the earlier naming, recent
		"richt-testenv-agent-555":                             old,
		"richt-testenv-slots":                                 old, // the target slots' locks
		"richt-testenv-1-x":                                   now, // PID 1 runs
		"other-999-1":                                         old,
	}
	for name, mtime := range dirs {
		p := filepath.Join(tmp, name)
		if err := os.MkdirAll(filepath.Join(p, "sub"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(p, mtime, mtime); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(tmp, "richt-testenv-build-x.sh"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	sweepBuildDirs(tmp, now)
	entries, err := os.ReadDir(tmp)
	if err != nil {
		t.Fatal(err)
	}
	var left []string
	for _, e := range entries {
		left = append(left, e.Name())
	}
	want := []string{fmt.Sprintf("richt-testenv-%d-222", os.Getpid()), "richt-testenv-1-x", "richt-testenv-build-444", "richt-testenv-build-x.sh", "richt-testenv-slots", "other-999-1"}
	sort.Strings(want)
	if fmt.Sprint(left) != fmt.Sprint(want) {
		t.Errorf("left %q, want %q", left, want)
	}
}
