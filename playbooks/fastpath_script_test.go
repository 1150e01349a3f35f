package playbooks_test

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The fast path's two remote scripts, rendered by the plugin itself and run here with the
// host's /bin/sh against a temporary HOME: the checks that are hard to provoke through
// ansible-playbook (a truncated transfer, foreign ownership, symlinks) and the marker
// protocol. fastpath_test.go runs the same scripts through Ansible on real targets.

const scriptNonce = "0123456789abcdef"

// hostArch is this machine's `uname -m`: the build the scripts pick here.
func hostArch(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("uname", "-m").Output()
	require.NoError(t, err)
	return strings.TrimSpace(string(out))
}

// renderScripts asks fastpath.py for its install and run scripts for module "fake", with
// one build (this machine's architecture) whose sha256 is digest.
func renderScripts(t *testing.T, digest string) (install, run string) {
	t.Helper()
	coll, err := collection()
	require.NoError(t, err)
	arch := hostArch(t)
	code := fmt.Sprintf(`import json
from ansible_collections.richt.services.plugins.plugin_utils import fastpath as f
h = {%q: %q}
print(json.dumps([f._script(f._INSTALL, "fake", h, %q, arch=%q), f._script(f._RUN, "fake", h, %q, "FAKE_ENV=1")]))`,
		arch, digest, scriptNonce, arch, scriptNonce)
	cmd := exec.Command("/usr/bin/python3", "-c", code)
	cmd.Env = append(os.Environ(), "PYTHONPATH="+coll)
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, string(out))
	var s []string
	require.NoError(t, json.Unmarshal(out, &s))
	return s[0], s[1]
}

// fakeModule is a "binary" that prints its arguments, its environment marker and stdin.
const fakeModule = "#!/bin/sh\necho \"args=$* env=${FAKE_ENV:-}\"\ncat\n"

type shResult struct {
	rc     int
	stdout string
}

func runScript(t *testing.T, home, script string, stdin []byte) shResult {
	t.Helper()
	return runScriptPath(t, home, "/usr/bin:/bin", script, stdin)
}

func runScriptPath(t *testing.T, home, path, script string, stdin []byte) shResult {
	t.Helper()
	// Ansible appends this; a script ending in a newline would break it.
	cmd := exec.Command("/bin/sh", "-c", script+" && sleep 0")
	cmd.Env = []string{"HOME=" + home, "PATH=" + path}
	cmd.Stdin = strings.NewReader(string(stdin))
	out, err := cmd.Output()
	rc := 0
	if ee, ok := err.(*exec.ExitError); ok {
		rc = ee.ExitCode()
	} else {
		require.NoError(t, err)
	}
	return shResult{rc, string(out)}
}

// marker is what the scripts print when they stop: the status and the architecture.
func marker(status string) shResult {
	return shResult{97, "RICHT_FASTPATH " + scriptNonce + " " + status + " " + markerArch + "\n"}
}

var markerArch string

func TestFastPathScripts(t *testing.T) {
	if testing.Short() {
		t.Skip("needs the staged collection (make build)")
	}
	sum := sha256.Sum256([]byte(fakeModule))
	digest := hex.EncodeToString(sum[:])
	markerArch = hostArch(t)
	install, run := renderScripts(t, digest)
	for _, s := range []string{install, run} {
		assert.False(t, strings.HasSuffix(s, "\n"), "no trailing newline")
		assert.NotContains(t, s, "@", "every placeholder filled")
	}
	cached := func(home string) string {
		return filepath.Join(home, ".cache/richt.services/richt-modules-"+markerArch+"-"+digest)
	}

	t.Run("miss, install, run with arguments on stdin and the task environment", func(t *testing.T) {
		home := t.TempDir()
		assert.Equal(t, marker("miss"), runScript(t, home, run, []byte(`{"a":1}`)))
		assert.Equal(t, marker("installed"), runScript(t, home, install, []byte(fakeModule)))
		for _, d := range []string{".cache", ".cache/richt.services"} {
			fi, err := os.Stat(filepath.Join(home, d))
			require.NoError(t, err)
			assert.Equal(t, os.FileMode(0o700), fi.Mode().Perm(), d)
		}
		fi, err := os.Stat(cached(home))
		require.NoError(t, err)
		assert.Equal(t, os.FileMode(0o700), fi.Mode().Perm())
		assert.Equal(t, shResult{0, "args=fake - env=1\n{\"a\":1}"}, runScript(t, home, run, []byte(`{"a":1}`)))
	})

	t.Run("a truncated transfer never lands under the hash", func(t *testing.T) {
		home := t.TempDir()
		assert.Equal(t, marker("transfer-corrupt"), runScript(t, home, install, []byte(fakeModule[:10])))
		entries, err := os.ReadDir(filepath.Join(home, ".cache/richt.services"))
		require.NoError(t, err)
		assert.Empty(t, entries, "no file and no temporary leftover")
	})

	t.Run("a changed cached file is reported, not run", func(t *testing.T) {
		home := t.TempDir()
		require.Equal(t, marker("installed"), runScript(t, home, install, []byte(fakeModule)))
		require.NoError(t, os.WriteFile(cached(home), []byte("#!/bin/sh\necho tampered\n"), 0o700))
		assert.Equal(t, marker("tampered"), runScript(t, home, run, nil))
	})

	t.Run("a verified file is hashed again only when it changed", func(t *testing.T) {
		// A sha256sum that logs each call ahead of the real one on PATH.
		home, bin := t.TempDir(), t.TempDir()
		calls := filepath.Join(bin, "calls")
		require.NoError(t, os.WriteFile(filepath.Join(bin, "sha256sum"),
			[]byte("#!/bin/sh\necho \"$@\" >>"+calls+"\nexec /usr/bin/sha256sum \"$@\"\n"), 0o755))
		path := bin + ":/usr/bin:/bin"
		hashed := func() int {
			data, _ := os.ReadFile(calls)
			_ = os.Remove(calls)
			return strings.Count(string(data), "\n")
		}
		ok := shResult{0, "args=fake - env=1\n"}

		require.Equal(t, marker("installed"), runScriptPath(t, home, path, install, []byte(fakeModule)))
		assert.Equal(t, 1, hashed(), "the install verifies the transfer")
		assert.FileExists(t, cached(home)+".ok")
		assert.Equal(t, ok, runScriptPath(t, home, path, run, nil))
		assert.Equal(t, ok, runScriptPath(t, home, path, run, nil))
		assert.Equal(t, 0, hashed(), "the stamp written at install stands for the verified bytes")

		require.NoError(t, os.Remove(cached(home)+".ok"))
		assert.Equal(t, ok, runScriptPath(t, home, path, run, nil))
		assert.Equal(t, 1, hashed(), "no stamp: hashed, and stamped again")
		assert.Equal(t, ok, runScriptPath(t, home, path, run, nil))
		assert.Equal(t, 0, hashed())

		// One byte changed in place, same size, mtime put back: the ctime still moved.
		fi, err := os.Stat(cached(home))
		require.NoError(t, err)
		f, err := os.OpenFile(cached(home), os.O_WRONLY, 0)
		require.NoError(t, err)
		_, err = f.WriteAt([]byte("#!/bin/sh\necho tampered;exit 0\n"), 0)
		require.NoError(t, err)
		require.NoError(t, f.Close())
		require.NoError(t, os.Chtimes(cached(home), fi.ModTime(), fi.ModTime()))
		assert.Equal(t, marker("tampered"), runScriptPath(t, home, path, run, nil))
		assert.Equal(t, 1, hashed())

		// A new install replaces the file and its stamp; the old version's go with it.
		other := cached(home)[:len(cached(home))-64] + strings.Repeat("0", 64)
		require.NoError(t, os.WriteFile(other, []byte("old"), 0o700))
		require.NoError(t, os.WriteFile(other+".ok", []byte("old stamp\n"), 0o600))
		require.Equal(t, marker("installed"), runScriptPath(t, home, path, install, []byte(fakeModule)))
		assert.NoFileExists(t, other)
		assert.NoFileExists(t, other+".ok")
		hashed()
		assert.Equal(t, ok, runScriptPath(t, home, path, run, nil))
		assert.Equal(t, 0, hashed())
	})

	t.Run("ownership and symlinks send the task to the normal path", func(t *testing.T) {
		home := t.TempDir()
		require.NoError(t, os.Chown(home, 65534, 65534))
		assert.Equal(t, marker("unusable-home"), runScript(t, home, run, nil), "home owned by another user")

		home = t.TempDir()
		elsewhere := t.TempDir()
		require.NoError(t, os.Symlink(elsewhere, filepath.Join(home, ".cache")))
		assert.Equal(t, marker("unusable-cache"), runScript(t, home, run, nil), ".cache is a symlink")
		assert.Equal(t, marker("unusable-cache"), runScript(t, home, install, []byte(fakeModule)))

		home = t.TempDir()
		require.Equal(t, marker("installed"), runScript(t, home, install, []byte(fakeModule)))
		require.NoError(t, os.Chown(cached(home), 65534, 65534))
		assert.Equal(t, marker("miss"), runScript(t, home, run, nil), "a cached file of another owner is never run")

		assert.Equal(t, marker("unusable-home"), runScript(t, "relative/home", run, nil))
	})

	t.Run("a home, ~/.cache or cache directory others can write is named, nothing run", func(t *testing.T) {
		for _, rel := range []string{"", ".cache", ".cache/richt.services"} {
			home := t.TempDir()
			require.Equal(t, marker("installed"), runScript(t, home, install, []byte(fakeModule)))
			dir := filepath.Join(home, rel)
			require.NoError(t, os.Chmod(dir, 0o775))
			want := shResult{97, "RICHT_FASTPATH " + scriptNonce + " insecure-dir " + markerArch + " " + dir + "\n"}
			assert.Equal(t, want, runScript(t, home, run, nil), "group-writable %s", dir)
			assert.Equal(t, want, runScript(t, home, install, []byte(fakeModule)))
		}
	})

	t.Run("concurrent installs leave one verified file", func(t *testing.T) {
		home := t.TempDir()
		var wg sync.WaitGroup
		results := make([]shResult, 8)
		for i := range results {
			wg.Add(1)
			go func() { defer wg.Done(); results[i] = runScript(t, home, install, []byte(fakeModule)) }()
		}
		wg.Wait()
		for _, r := range results {
			assert.Equal(t, marker("installed"), r)
		}
		entries, err := os.ReadDir(filepath.Join(home, ".cache/richt.services"))
		require.NoError(t, err)
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		base := filepath.Base(cached(home))
		assert.Equal(t, []string{base, base + ".ok"}, names, "the file and its stamp, no temporary leftover")
		data, err := os.ReadFile(cached(home))
		require.NoError(t, err)
		assert.Equal(t, fakeModule, string(data))
		// A stamp written by an installer whose file was replaced a moment later does not
		// match; the run then hashes the file and stamps it again.
		assert.Equal(t, shResult{0, "args=fake - env=1\n"}, runScript(t, home, run, nil))
	})

	t.Run("a noexec cache is found before anything is renamed", func(t *testing.T) {
		home := t.TempDir()
		dir := filepath.Join(home, ".cache/richt.services")
		require.NoError(t, os.MkdirAll(dir, 0o700))
		if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "noexec,mode=700", "richt-noexec", dir).CombinedOutput(); err != nil {
			t.Skipf("cannot mount a tmpfs here (%v: %s); fastpath_test.go covers noexec on targets", err, out)
		}
		t.Cleanup(func() { _ = exec.Command("umount", dir).Run() })
		assert.Equal(t, marker("cannot-execute"), runScript(t, home, install, []byte(fakeModule)))
		entries, err := os.ReadDir(dir)
		require.NoError(t, err)
		assert.Empty(t, entries)
	})
}
