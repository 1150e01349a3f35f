package ee

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A cancelled build stops as a whole: the script's children get SIGTERM with it (none is
// left running) and its TERM trap, which removes its work directory, runs.
func TestRunScriptCancelStopsTheGroup(t *testing.T) {
	dir := t.TempDir()
	sh := filepath.Join(dir, "build.sh")
	require.NoError(t, os.WriteFile(sh, []byte(`set -eu
trap 'touch "$1/cleaned"' EXIT
trap 'exit 143' TERM
# A foreground child, as mmdebstrap and docker build are.
sh -c 'echo $$ > "$1/child.tmp" && mv "$1/child.tmp" "$1/child" && exec sleep 600' sh "$1"
`), 0o755))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { _, err := runScript(ctx, sh, dir); done <- err }()
	var pid int
	require.Eventually(t, func() bool {
		data, err := os.ReadFile(filepath.Join(dir, "child"))
		if err != nil {
			return false
		}
		pid, err = strconv.Atoi(strings.TrimSpace(string(data)))
		return err == nil
	}, 60*time.Second, 20*time.Millisecond, "the script's child started")
	cancel()
	select {
	case err := <-done:
		require.Error(t, err)
	case <-time.After(2 * scriptWaitDelay):
		t.Fatal("runScript did not return after cancel")
	}
	assert.FileExists(t, filepath.Join(dir, "cleaned"), "the script's trap ran")
	assert.Eventually(t, func() bool { return !running(pid) }, 30*time.Second, 50*time.Millisecond, "child %d still runs", pid)
}

// running tells whether a process exists and is not a zombie.
func running(pid int) bool {
	if err := syscall.Kill(pid, 0); err != nil {
		return false
	}
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	_, after, _ := strings.Cut(string(stat), ") ")
	return !strings.HasPrefix(after, "Z")
}

// fakeMmdebstrap stands in for mmdebstrap on PATH: it records its work directory (the
// directory of its last argument, build.sh's rootfs.tar) and its pid, then sleeps as a
// long bootstrap would.
const fakeMmdebstrap = `#!/bin/sh
for a; do last=$a; done
dirname "$last" > "$RICHT_FAKE_DIR/work"
echo $$ > "$RICHT_FAKE_DIR/pid.tmp" && mv "$RICHT_FAKE_DIR/pid.tmp" "$RICHT_FAKE_DIR/pid"
exec sleep 600
`

// buildHelperEnv names the environment variable that makes TestRunBuildHelperProcess run
// build.sh (the process TestBuildStopsWhenItsCallerDies kills).
const buildHelperEnv = "RICHT_EE_BUILD_HELPER"

// TestRunBuildHelperProcess is not a test: TestBuildStopsWhenItsCallerDies runs the test
// binary with it to have a process that runs build.sh and can be killed.
func TestRunBuildHelperProcess(t *testing.T) {
	if os.Getenv(buildHelperEnv) == "" {
		t.Skip("helper process for TestBuildStopsWhenItsCallerDies")
	}
	_, err := runBuild(context.Background(), strings.Fields(os.Getenv(buildHelperEnv))...)
	t.Fatalf("build.sh returned while its caller should have been killed: %v", err)
}

// A caller that dies without cancelling (a go test timeout, SIGKILL) still stops the
// build: bash gets SIGTERM as its parent dies, and build.sh's trap stops its whole process
// group (mmdebstrap here) and removes its work directory.
func TestBuildStopsWhenItsCallerDies(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "bin")
	require.NoError(t, os.Mkdir(bin, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(bin, "mmdebstrap"), []byte(fakeMmdebstrap), 0o755))
	tmp := filepath.Join(dir, "tmp") // the helper's TMPDIR: runBuild must leave nothing there
	require.NoError(t, os.Mkdir(tmp, 0o755))
	helper := exec.Command(os.Args[0], "-test.run=^TestRunBuildHelperProcess$", "-test.count=1")
	helper.Env = append(os.Environ(),
		buildHelperEnv+"="+strings.Join(buildTestArgs, " "),
		"RICHT_FAKE_DIR="+dir,
		"TMPDIR="+tmp,
		"PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	require.NoError(t, helper.Start())
	defer func() { _ = helper.Process.Kill(); _ = helper.Wait() }()
	var pid int
	require.Eventually(t, func() bool {
		data, err := os.ReadFile(filepath.Join(dir, "pid"))
		if err != nil {
			return false
		}
		pid, err = strconv.Atoi(strings.TrimSpace(string(data)))
		return err == nil
	}, 60*time.Second, 20*time.Millisecond, "the fake mmdebstrap started")
	work, err := os.ReadFile(filepath.Join(dir, "work"))
	require.NoError(t, err)
	require.NoError(t, helper.Process.Kill())
	_ = helper.Wait()
	assert.Eventually(t, func() bool { return !running(pid) }, 60*time.Second, 50*time.Millisecond, "mmdebstrap %d still runs", pid)
	assert.Eventually(t, func() bool {
		_, err := os.Stat(strings.TrimSpace(string(work)))
		return os.IsNotExist(err)
	}, 60*time.Second, 50*time.Millisecond, "build.sh's work directory %s is left", work)
	left, err := os.ReadDir(tmp)
	require.NoError(t, err)
	assert.Empty(t, left, "files the killed caller left in its TMPDIR")
	if running(pid) {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
}

// buildTestArgs are build.sh's arguments for the tests that run it with fakes.
var buildTestArgs = []string{"trixie", BaseRepository + ":unchecked-test", "ansible-core"}
