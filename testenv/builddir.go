package testenv

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// buildDirPrefix names each process's directory for what it builds (module binaries, the
// agent, fixture repositories, its SSH key): richt-testenv-PID-RANDOM in the temporary
// directory.
const buildDirPrefix = "richt-testenv-"

// oldBuildDirAge is how old a directory of the earlier naming (richt-testenv-bin-…,
// -build-, -repo-, -ssh-, -agent-: one per build, no PID) must be before a process
// removes it: no test process runs that long.
const oldBuildDirAge = 2 * time.Hour

// processBuildDir is this process's directory for what it builds and keeps for its own
// life: module binaries and their named links, the agent, fixture repositories, its SSH
// key. Go has no hook at a process's end, so each process first removes the directories
// of processes that are gone: with one directory per build, a day of make test runs on
// the 2-core machine left about 2,700 of them in /tmp, 4.5 GB.
// A failure is not kept: a later build tries again (a full disk may have room by then).
func processBuildDir() (string, error) {
	buildDir.mu.Lock()
	defer buildDir.mu.Unlock()
	if buildDir.path != "" {
		return buildDir.path, nil
	}
	if !buildDir.swept {
		sweepBuildDirs(os.TempDir(), time.Now())
		buildDir.swept = true
	}
	dir, err := os.MkdirTemp("", fmt.Sprintf("%s%d-", buildDirPrefix, os.Getpid()))
	if err != nil {
		return "", fmt.Errorf("build directory: %w", err)
	}
	// MkdirTemp makes it 0700; the agent's directory below it is mounted into targets.
	if err := os.Chmod(dir, 0o755); err != nil {
		_ = os.Remove(dir)
		return "", fmt.Errorf("build directory: %w", err)
	}
	buildDir.path = dir
	return dir, nil
}

// newBuildDir makes a directory of its own, kind-RANDOM, in the process's build directory.
func newBuildDir(kind string) (string, error) {
	parent, err := processBuildDir()
	if err != nil {
		return "", err
	}
	dir, err := os.MkdirTemp(parent, kind+"-")
	if err != nil {
		return "", fmt.Errorf("%s directory: %w", kind, err)
	}
	return dir, nil
}

var buildDir struct {
	mu    sync.Mutex
	path  string
	swept bool
}

// sweepBuildDirs removes, in tmp, the build directories of processes that no longer run,
// and those of the earlier naming once they are older than oldBuildDirAge.
func sweepBuildDirs(tmp string, now time.Time) {
	entries, err := os.ReadDir(tmp)
	if err != nil {
		return
	}
	for _, e := range entries {
		rest, ok := strings.CutPrefix(e.Name(), buildDirPrefix)
		if !ok || !e.IsDir() {
			continue
		}
		pidText, _, named := strings.Cut(rest, "-")
		if pid, err := strconv.Atoi(pidText); err == nil && pid > 0 && named {
			if !processRuns(pid) {
				_ = os.RemoveAll(filepath.Join(tmp, e.Name()))
			}
			continue
		}
		switch pidText {
		case "bin", "build", "repo", "ssh", "agent":
			if fi, err := e.Info(); err == nil && now.Sub(fi.ModTime()) > oldBuildDirAge {
				_ = os.RemoveAll(filepath.Join(tmp, e.Name()))
			}
		}
	}
}

// processRuns reports whether a process with this PID exists (signal 0: ESRCH means none;
// EPERM means one that is not ours).
func processRuns(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}
