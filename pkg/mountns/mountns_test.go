package mountns

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// hostDir is a directory for a test's files outside /tmp (which the command sees fresh).
func hostDir(t *testing.T) string {
	t.Helper()
	d, err := os.MkdirTemp("/var/tmp", "mountns-test-")
	require.NoError(t, err)
	t.Cleanup(func() { _ = os.RemoveAll(d) })
	return d
}

// run runs argv with files, skipping where this machine cannot make a mount namespace
// (not root, or a sandbox that forbids it).
func run(t *testing.T, files []File, argv ...string) (string, int) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root for a mount namespace")
	}
	res, err := Runner{}.Run(context.Background(), files, argv...)
	if errors.Is(err, ErrSetup) && strings.Contains(err.Error(), "operation not permitted") {
		t.Skipf("this machine forbids mount namespaces: %v", err)
	}
	require.NoError(t, err)
	return res.Output(), res.ExitCode
}

// The command reads the new contents at their paths, an existing file's and a new one's
// in a directory of the host, and sees a fresh /tmp; the host keeps its files, shows no
// new file, no mount, and the command's write to a path of the set is discarded.
func TestTheCommandSeesTheNewTreeAndTheHostDoesNot(t *testing.T) {
	d := hostDir(t)
	main, snippet := filepath.Join(d, "main.conf"), filepath.Join(d, "conf.d", "new.conf")
	require.NoError(t, os.Mkdir(filepath.Dir(snippet), 0o755))
	require.NoError(t, os.WriteFile(main, []byte("old main\n"), 0o644))
	mountsBefore, err := os.ReadFile("/proc/self/mountinfo")
	require.NoError(t, err)

	out, code := run(t, []File{
		{Path: main, Content: []byte("new main\n"), Mode: 0o640},
		{Path: snippet, Content: []byte("new snippet\n"), Mode: 0o600},
	}, "/bin/sh", "-c", `cat "$0" "$1"; stat -c %a "$0" "$1"; ls -A /tmp; echo scribble >> "$0"; touch /tmp/left`, main, snippet)

	assert.Equal(t, 0, code, out)
	assert.Equal(t, "new main\nnew snippet\n640\n600", out, "the new contents with their modes, and an empty /tmp")
	data, err := os.ReadFile(main)
	require.NoError(t, err)
	assert.Equal(t, "old main\n", string(data), "the host's file is as it was")
	assert.NoFileExists(t, snippet, "the new file is not on the host")
	assert.NoFileExists(t, "/tmp/left", "the command's /tmp is discarded")
	mountsAfter, err := os.ReadFile("/proc/self/mountinfo")
	require.NoError(t, err)
	assert.Empty(t, mountsOver(string(mountsBefore), string(mountsAfter), d, "/tmp"), "no mount reached the host")
}

// mountsOver lists the mount points in after, not in before, at or below any of paths.
// The rest of the host's table is not this test's: under make test other packages start
// and stop containers beside it, and their mounts come and go.
func mountsOver(before, after string, paths ...string) []string {
	had := map[string]bool{}
	for _, l := range strings.Split(before, "\n") {
		had[l] = true
	}
	var found []string
	for _, l := range strings.Split(after, "\n") {
		f := strings.Fields(l)
		if had[l] || len(f) < 5 {
			continue
		}
		for _, p := range paths {
			if f[4] == p || strings.HasPrefix(f[4], p+"/") {
				found = append(found, l)
			}
		}
	}
	return found
}

// The command's exit code and words come back; a command that cannot be found, or a path
// that cannot be placed, is a setup error (the command did not run).
func TestTheCommandsVerdictAndSetupFailures(t *testing.T) {
	d := hostDir(t)
	out, code := run(t, nil, "/bin/sh", "-c", "echo refused >&2; exit 3")
	assert.Equal(t, 3, code)
	assert.Equal(t, "refused", out)

	_, err := Runner{}.Run(context.Background(), nil, "no-such-validator-here")
	require.ErrorIs(t, err, ErrSetup)
	assert.Contains(t, err.Error(), "no-such-validator-here")

	_, err = Runner{}.Run(context.Background(), []File{{Path: filepath.Join(d, "missing-dir", "x.conf"), Mode: 0o644}}, "true")
	require.ErrorIs(t, err, ErrSetup)
	assert.Contains(t, err.Error(), "missing-dir")
}

func TestCheckPath(t *testing.T) {
	cases := []struct {
		path string
		ok   bool
	}{
		{"/etc/nginx/nginx.conf", true},
		{"/etc/a b.conf", true},
		{"relative.conf", false},
		{"/", false},
		{"/etc//x", false},
		{"/etc/../x", false},
		{"/etc/a,b.conf", false},
		{"/etc/a:b.conf", false},
		{"/tmp/x.conf", false},
		{"/tmpfoo/x.conf", true},
	}
	for _, c := range cases {
		err := checkPath(c.path)
		assert.Equal(t, c.ok, err == nil, "%s: %v", c.path, err)
	}
}

// A context that ends kills the command and everything it forked (its process group; a
// module's death, the PID namespace: the end-to-end kill test): nothing is left running,
// holding the namespace.
func TestAnEndedContextLeavesNoProcess(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root for a mount namespace")
	}
	marker := filepath.Join(hostDir(t), "runs")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := Runner{}.Run(ctx, nil, "/bin/sh", "-c", `sleep 3001 & touch "$0"; exec sleep 3002`, marker)
		done <- err
	}()
	for {
		if _, err := os.Stat(marker); err == nil {
			break
		}
		select {
		case err := <-done:
			if errors.Is(err, ErrSetup) && strings.Contains(err.Error(), "operation not permitted") {
				t.Skipf("this machine forbids mount namespaces: %v", err)
			}
			t.Fatalf("the command ended before it ran: %v", err)
		case <-time.After(20 * time.Millisecond):
		}
	}
	cancel()
	require.Error(t, <-done)
	out, _ := exec.Command("pgrep", "-f", "sleep 300[12]").Output()
	assert.Empty(t, strings.TrimSpace(string(out)), "the command and what it forked are gone")
}
