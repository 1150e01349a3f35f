package playbooks_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/richt/services/testenv"
)

// controller is one ansible-core generation: its name and its ansible-playbook.
type controller struct{ name, command string }

// controllers are the ansible-core generations the fast path is tested on: the host's
// (Debian bookworm) and trixie's, unpacked by .ci/setup-host.
var controllers = []controller{
	{"ansible-core-2.14", "ansible-playbook"},
	{"ansible-core-2.19", "/opt/richt/ansible-core-2.19/bin/ansible-playbook"},
}

const cache = "/root/.cache/richt.services"

// shownByOne names the checks whose outcome one controller shows for both, with the
// controller that runs them: what they check is decided on the target (the fast path's
// script, the module binary) or by plugin code that reads the same on ansible-core 2.14
// and 2.19, once the plugin has handed over the same command. Every check that passes
// through an API that differs between the two (the argument encoder and result parser,
// pipelining's decision, become, async, templating, warnings from a worker, facts, the
// normal path's module build) runs on both; docs/testenv.md, "One controller or both",
// gives the reason per check. Each is an ansible-playbook run (a second of CPU and more)
// saved.
var shownByOne = map[string]string{
	"second run reuses the cached binary":                             "ansible-core-2.14",
	"a changed binary is installed beside nothing old":                "ansible-core-2.14",
	"concurrent installs from many forks":                             "ansible-core-2.19",
	"falls back: keep remote files":                                   "ansible-core-2.19",
	"falls back: debug":                                               "ansible-core-2.14",
	"fast path: the aarch64 build is installed, cached and run":       "ansible-core-2.14",
	"shared home: each architecture its own build, never the other's": "ansible-core-2.14",
	"riscv64 fails before anything runs, naming what there is":        "ansible-core-2.14",
}

// runOn runs the check name as a subtest on controller, unless shownByOne gives it to the
// other controller.
func runOn(t *testing.T, controller, name string, f func(t *testing.T)) {
	t.Helper()
	if c, ok := shownByOne[name]; ok && c != controller {
		return
	}
	t.Run(name, f)
}

// fastLog is what the fast path said about each task (-vvv), in order.
func fastLog(out string) []string {
	var lines []string
	for _, l := range strings.Split(out, "\n") {
		if _, rest, ok := strings.Cut(l, "> richt.services fast path"); ok {
			lines = append(lines, strings.TrimSpace(strings.TrimPrefix(rest, ":")))
		}
	}
	return lines
}

// targetArch is the architecture of the test targets (the host's: containers share its
// kernel), as `uname -m` names it and the collection names its builds.
const targetArch = "x86_64"

// buildFile is the collection's build for the targets (bin/richt-modules-ARCH), and the
// name the fast path caches it under with its hash.
const buildFile = "richt-modules-" + targetArch

// buildHash is the content hash make build wrote for the targets' build.
func buildHash(t *testing.T, coll string) string {
	t.Helper()
	return archHash(t, coll, targetArch)
}

// sshSudoer makes a login user on tg (once) who reaches it over SSH with the test key and
// may sudo to anyone without a password: the become cases log in as that user.
func sshSudoer(t *testing.T, tg *testenv.Target, name string) {
	t.Helper()
	tg.Shell(t, fmt.Sprintf(`id %[1]s >/dev/null 2>&1 || { useradd -m -s /bin/sh %[1]s &&
		echo '%[1]s ALL=(ALL) NOPASSWD:ALL' > /etc/sudoers.d/%[1]s && chmod 0440 /etc/sudoers.d/%[1]s; }`, name))
	require.NoError(t, tg.AuthorizeSSH(t.Context(), name))
}

func TestFastPath(t *testing.T) {
	for _, c := range controllers {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			if _, err := exec.LookPath(c.command); err != nil {
				t.Fatalf("%s not found (make test runs .ci/setup-host, which installs it): %v", c.command, err)
			}
			tg := target(t)
			coll, err := collection()
			require.NoError(t, err)
			hash := buildHash(t, coll)
			cached := cache + "/" + buildFile + "-" + hash
			run := func(t *testing.T, p testenv.Playbook) testenv.PlaybookResult {
				t.Helper()
				p.Args = append(p.Args, "-vvv")
				return p.RunOK(t)
			}
			fast := func(extra ...string) testenv.Playbook {
				p := play(t, "testdata/fastpath.yml", tg)
				p.Connection, p.Command = "ssh", c.command
				p.Env = append([]string{"ANSIBLE_PIPELINING=1"}, extra...)
				return p
			}
			stat := func(t *testing.T, path string) string {
				return strings.TrimSpace(tg.MustExec(t, "stat", "-c", "%F %a %U %i", path))
			}

			t.Run("first run installs into the effective user's home, 0700", func(t *testing.T) {
				r := run(t, fast())
				assert.Equal(t, []string{
					"installed " + buildFile + "-" + hash[:12],
					"ran cached systemd_lifecycle",
					"ran cached systemd_lifecycle",
				}, fastLog(r.Output))
				assert.Equal(t, "directory 700 root", strings.Join(strings.Fields(stat(t, cache))[:3], " "))
				assert.Regexp(t, `^regular file 700 root \d+$`, stat(t, cached))
				assert.Equal(t, hash, strings.Fields(tg.MustExec(t, "sha256sum", cached))[0])
				// One command per warm task: the arguments never touch the disk.
				assert.NotContains(t, r.Output, "AnsiballZ_systemd_lifecycle")
				// testenv's inventory turns SSH compression off (it only costs CPU on
				// Docker's bridge): Ansible's ssh_args without their -C.
				assert.Contains(t, r.Output, "SSH: EXEC ssh -o ControlMaster=auto -o ControlPersist=60s ")
				assert.NotContains(t, r.Output, "SSH: EXEC ssh -C ")
			})

			runOn(t, c.name, "second run reuses the cached binary", func(t *testing.T) {
				before := stat(t, cached)
				r := run(t, fast())
				assert.Equal(t, []string{"ran cached systemd_lifecycle", "ran cached systemd_lifecycle"}, fastLog(r.Output))
				assert.Equal(t, before, stat(t, cached), "same file, same inode")
				// The install stamped the verified file; warm runs compare the stamp
				// instead of hashing (fastpath_script_test.go counts the hashing).
				assert.Equal(t, tg.MustExec(t, "stat", "-c", "%d %i %s %y %z", cached), tg.MustExec(t, "cat", cached+".ok"))
				assert.Regexp(t, `^regular file 600 root \d+$`, stat(t, cached+".ok"))
			})

			runOn(t, c.name, "a changed binary is installed beside nothing old", func(t *testing.T) {
				changed := t.TempDir()
				out, err := exec.Command("cp", "-a", coll+"/.", changed).CombinedOutput()
				require.NoError(t, err, string(out))
				bin := filepath.Join(changed, "ansible_collections/richt/services/bin")
				f, err := os.OpenFile(filepath.Join(bin, buildFile), os.O_APPEND|os.O_WRONLY, 0)
				require.NoError(t, err)
				_, err = f.WriteString("another build\n") // still a valid ELF executable
				require.NoError(t, f.Close())
				require.NoError(t, err)
				cmd := exec.Command("sh", "-c", "sha256sum richt-modules-* > SHA256SUMS")
				cmd.Dir = bin
				out, err = cmd.CombinedOutput()
				require.NoError(t, err, string(out))
				newHash := buildHash(t, changed)
				require.NotEqual(t, hash, newHash)

				p := fast()
				p.CollectionsPath = changed
				r := run(t, p)
				assert.Equal(t, "installed "+buildFile+"-"+newHash[:12], fastLog(r.Output)[0])
				assert.Equal(t, buildFile+"-"+newHash+"\n"+buildFile+"-"+newHash+".ok\n", tg.MustExec(t, "sh", "-c", "cd "+cache+" && ls -A | grep "+buildFile))

				r = run(t, fast()) // back to the original build
				assert.Equal(t, "installed "+buildFile+"-"+hash[:12], fastLog(r.Output)[0])
				assert.Equal(t, buildFile+"-"+hash+"\n"+buildFile+"-"+hash+".ok\n", tg.MustExec(t, "sh", "-c", "cd "+cache+" && ls -A | grep "+buildFile))
			})

			t.Run("a tampered cache file is refused and replaced; stale files are cleaned", func(t *testing.T) {
				tg.Shell(t, fmt.Sprintf(`printf '#!/bin/sh\ntouch /root/tampered-ran\n' > %s
					touch -d '2 hours ago' %s/.systemd_lifecycle.stale1 && touch %s/.systemd_lifecycle.fresh1`, cached, cache, cache))
				r := run(t, fast())
				// Ansible wraps a warning at the terminal's width, where the host's name puts it.
				assert.Contains(t, strings.Join(strings.Fields(r.Output), " "), "did not match its sha256 and was not run")
				assert.Equal(t, []string{
					"installed " + buildFile + "-" + hash[:12],
					"ran cached systemd_lifecycle",
					"ran cached systemd_lifecycle",
				}, fastLog(r.Output))
				assert.Equal(t, hash, strings.Fields(tg.MustExec(t, "sha256sum", cached))[0])
				res, err := tg.Exec(t.Context(), "test", "-e", "/root/tampered-ran")
				require.NoError(t, err)
				assert.NotZero(t, res.ExitCode, "the tampered file never ran")
				left := tg.MustExec(t, "ls", "-A", cache)
				assert.NotContains(t, left, ".systemd_lifecycle.stale1", "temporary files older than an hour are removed")
				assert.Contains(t, left, ".systemd_lifecycle.fresh1", "a temporary file that may be in use is kept")
			})

			runOn(t, c.name, "concurrent installs from many forks", func(t *testing.T) {
				tg.MustExec(t, "rm", "-rf", cache)
				a, err := tg.SSH(t.Context())
				require.NoError(t, err)
				hosts := map[string]any{}
				for i := range 6 {
					hosts[fmt.Sprintf("alias%d", i)] = a.HostVars()
				}
				inv, err := json.Marshal(map[string]any{"all": map[string]any{"hosts": hosts}})
				require.NoError(t, err)
				path := filepath.Join(t.TempDir(), "aliases.yml")
				require.NoError(t, os.WriteFile(path, inv, 0o600))
				p := fast()
				p.Targets = nil
				p.Args = []string{"-i", path, "--forks", "6"}
				r := run(t, p)
				require.Len(t, r.Recap, 6)
				assert.GreaterOrEqual(t, strings.Count(r.Output, "installed "+buildFile+"-"), 1)
				assert.Equal(t, buildFile+"-"+hash+"\n"+buildFile+"-"+hash+".ok\n", tg.MustExec(t, "ls", "-A", cache), "one file and its stamp, no temporary leftovers")
				assert.Equal(t, hash, strings.Fields(tg.MustExec(t, "sha256sum", cached))[0])
			})

			// What one task sets (opt-out, pipelining, become su, a non-POSIX shell, async)
			// is set per task in one play; the settings of the whole run (debug,
			// keep_remote_files) take a run each.
			t.Run("falls back per task: opt-out, pipelining off, su, csh, async", func(t *testing.T) {
				p := play(t, "testdata/fallbacks.yml", tg)
				p.Connection, p.Command = "ssh", c.command
				p.Env = []string{"ANSIBLE_PIPELINING=1"}
				r := run(t, p)
				var want []string
				for _, reason := range []string{"richt_services_fast_path is false", "pipelining is off",
					"become_method su (only sudo is supported)", "shell csh is not POSIX sh", "async task"} {
					want = append(want, "not used for systemd_lifecycle: "+reason)
				}
				assert.Equal(t, want, fastLog(r.Output))
				tasks := strings.Split(r.Output, "TASK [")[1:]
				require.Len(t, tasks, len(want))
				for i, task := range tasks {
					assert.Contains(t, task, "AnsiballZ_systemd_lifecycle", "Ansible's normal path ran the module in task %d", i+1)
				}
			})
			for _, f := range []struct{ name, reason, env string }{
				{"keep remote files", "keep_remote_files is on", "ANSIBLE_KEEP_REMOTE_FILES=1"},
				{"debug", "ANSIBLE_DEBUG is on", "ANSIBLE_DEBUG=1"},
			} {
				runOn(t, c.name, "falls back: "+f.name, func(t *testing.T) {
					r := run(t, fast(f.env))
					want := "not used for systemd_lifecycle: " + f.reason
					assert.Equal(t, []string{want, want}, fastLog(r.Output))
					assert.Contains(t, r.Output, "AnsiballZ_systemd_lifecycle", "Ansible's normal path ran the module")
				})
			}

			t.Run("falls back on a noexec cache and remembers it for the host", func(t *testing.T) {
				tg.MustExec(t, "rm", "-rf", cache)
				tg.Shell(t, "mkdir -p -m 700 "+cache+" && mount -t tmpfs -o noexec,mode=700 richt-noexec "+cache)
				t.Cleanup(func() { _, _ = tg.Exec(context.Background(), "umount", cache) })
				r := run(t, fast())
				log := fastLog(r.Output)
				require.Len(t, log, 2)
				assert.Contains(t, log[0], "cannot execute binaries in ~/.cache/richt.services")
				assert.Contains(t, log[1], "remembered for this host: cannot execute binaries")
				assert.Empty(t, strings.TrimSpace(tg.MustExec(t, "ls", "-A", cache)), "nothing left in the noexec cache")
			})

			t.Run("become: the cache belongs to the effective user", func(t *testing.T) {
				sshSudoer(t, tg, "deploy")
				tg.MustExec(t, "rm", "-rf", cache)
				p := fast()
				p.Args = []string{"-e", "ansible_user=deploy", "-e", "ansible_become=true", "-e", "ansible_become_method=sudo"}
				r := run(t, p)
				assert.Equal(t, "installed "+buildFile+"-"+hash[:12], fastLog(r.Output)[0])
				assert.Regexp(t, `^regular file 700 root \d+$`, stat(t, cached))
				res, err := tg.Exec(t.Context(), "test", "-e", "/home/deploy/.cache/richt.services")
				require.NoError(t, err)
				assert.NotZero(t, res.ExitCode, "nothing in the login user's home")
			})
		})
	}
}
