package playbooks_test

import (
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

// binfmtName is the binfmt_misc entry this test registers for aarch64 programs.
const binfmtName = "richt-test-aarch64"

// aarch64 ELF executables: the header up to e_machine (EM_AARCH64), with the mask QEMU's own
// registrations use.
const (
	aarch64Magic = `\x7fELF\x02\x01\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x02\x00\xb7\x00`
	aarch64Mask  = `\xff\xff\xff\xff\xff\xff\xff\x00\xff\xff\xff\xff\xff\xff\xff\xff\xfe\xff\xff\xff`
)

// runAarch64 lets the kernel run aarch64 programs through testenv.EmulatorPath's QEMU for
// the rest of the test, in containers too (the F flag opens the emulator now, so it need
// not exist inside them), and removes the registration afterwards. A target that claims to
// be aarch64 can then really execute the build the fast path installs there, probe and all.
func runAarch64(t *testing.T) {
	t.Helper()
	const dir = "/proc/sys/fs/binfmt_misc"
	if _, err := os.Stat(dir + "/register"); err != nil {
		if out, err := exec.Command("mount", "-t", "binfmt_misc", "binfmt_misc", dir).CombinedOutput(); err != nil {
			t.Skipf("binfmt_misc cannot be mounted here (%v: %s): the choice of build is covered by the plugin's unit tests only", err, out)
		}
	}
	emu, err := testenv.EmulatorPath("arm64")
	require.NoError(t, err)
	_ = os.WriteFile(dir+"/"+binfmtName, []byte("-1"), 0) // a leftover of an interrupted run
	rule := fmt.Sprintf(":%s:M::%s:%s:%s:F", binfmtName, aarch64Magic, aarch64Mask, emu)
	if err := os.WriteFile(dir+"/register", []byte(rule), 0); err != nil {
		t.Skipf("cannot register aarch64 with binfmt_misc (%v): the choice of build is covered by the plugin's unit tests only", err)
	}
	t.Cleanup(func() { _ = os.WriteFile(dir+"/"+binfmtName, []byte("-1"), 0) })
}

// reportArch makes `uname -m` on tg print arch (a wrapper ahead of /usr/bin/uname on the
// PATH that SSH sessions get); "" puts the real one back.
func reportArch(t *testing.T, tg *testenv.Target, arch string) {
	t.Helper()
	if arch == "" {
		tg.MustExec(t, "rm", "-f", "/usr/local/bin/uname")
		return
	}
	tg.Shell(t, fmt.Sprintf(`printf '#!/bin/sh\n[ "$*" = -m ] && { echo %s; exit 0; }\nexec /usr/bin/uname "$@"\n' > /usr/local/bin/uname && chmod 755 /usr/local/bin/uname`, arch))
}

// withoutNativeBuild copies the staged collection with its x86_64 build replaced by the
// s390x build, which this host cannot execute (its checksum updated, so the collection is
// consistent): a task that succeeds on a target claiming aarch64 can only have run the
// aarch64 build.
func withoutNativeBuild(t *testing.T) string {
	t.Helper()
	coll, err := collection()
	require.NoError(t, err)
	dir := t.TempDir()
	out, err := exec.Command("cp", "-a", coll+"/.", dir).CombinedOutput()
	require.NoError(t, err, string(out))
	bin := filepath.Join(dir, "ansible_collections/richt/services/bin")
	data, err := os.ReadFile(filepath.Join(bin, "richt-modules-s390x"))
	require.NoError(t, err)
	require.NoError(t, os.Remove(filepath.Join(bin, buildFile)))
	require.NoError(t, os.WriteFile(filepath.Join(bin, buildFile), data, 0o755))
	cmd := exec.Command("sh", "-c", "sha256sum richt-modules-* > SHA256SUMS")
	cmd.Dir = bin
	out, err = cmd.CombinedOutput()
	require.NoError(t, err, string(out))
	return dir
}

// archHash is the content hash of the collection's build for arch.
func archHash(t *testing.T, coll, arch string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(coll, "ansible_collections/richt/services/bin/SHA256SUMS"))
	require.NoError(t, err)
	for _, l := range strings.Split(string(data), "\n") {
		if f := strings.Fields(l); len(f) == 2 && f[1] == "richt-modules-"+arch {
			return f[0]
		}
	}
	t.Fatalf("SHA256SUMS names no build for %s", arch)
	return ""
}

// The target's `uname -m` picks the build on every path: the fast path installs and caches
// the build of the architecture the target reports, a home shared by hosts of two
// architectures keeps one build of each and never runs the other's, Ansible's normal path
// and Mitogen's upload the target's build, and an architecture without a build fails
// before anything runs, naming the architecture and the builds there are.
func TestTheTargetsArchitecturePicksTheBuild(t *testing.T) {
	t.Parallel()
	tg := target(t)
	runAarch64(t)
	coll := withoutNativeBuild(t)
	arm := archHash(t, coll, "aarch64")
	for _, c := range controllers {
		if _, err := exec.LookPath(c.command); err != nil {
			t.Fatalf("%s not found (make test runs .ci/setup-host, which installs it): %v", c.command, err)
		}
	}
	run := func(t *testing.T, command string, env []string, args ...string) testenv.PlaybookResult {
		t.Helper()
		p := play(t, "testdata/fastpath.yml", tg)
		p.Connection, p.Command, p.CollectionsPath = "ssh", command, coll
		p.Env = append([]string{"ANSIBLE_PIPELINING=1"}, env...)
		p.Args = append([]string{"-vvv"}, args...)
		return p.Run(t)
	}
	ok := func(t *testing.T, r testenv.PlaybookResult) {
		t.Helper()
		require.True(t, r.ExitCode == 0 && r.Failed() == 0, "the play failed:\n%s", r.Output)
	}

	for _, c := range controllers {
		t.Run(c.name, func(t *testing.T) {
			tg.MustExec(t, "rm", "-rf", cache)
			reportArch(t, tg, "aarch64")

			runOn(t, c.name, "fast path: the aarch64 build is installed, cached and run", func(t *testing.T) {
				r := run(t, c.command, nil)
				ok(t, r)
				assert.Equal(t, []string{"installed richt-modules-aarch64-" + arm[:12], "ran cached systemd_lifecycle", "ran cached systemd_lifecycle"}, fastLog(r.Output))
				cached := cache + "/richt-modules-aarch64-" + arm
				assert.Equal(t, arm, strings.Fields(tg.MustExec(t, "sha256sum", cached))[0])
				r = run(t, c.command, nil)
				ok(t, r)
				assert.Equal(t, []string{"ran cached systemd_lifecycle", "ran cached systemd_lifecycle"}, fastLog(r.Output))
			})

			runOn(t, c.name, "shared home: each architecture its own build, never the other's", func(t *testing.T) {
				reportArch(t, tg, "ppc64le")
				defer reportArch(t, tg, "aarch64")
				ppc := archHash(t, coll, "ppc64le")
				r := run(t, c.command, nil)
				// This host cannot execute ppc64le: the install's probe finds that before
				// anything is cached, and the normal path's upload of the ppc64le build fails
				// to execute too. What counts is that the aarch64 file was not run.
				assert.NotContains(t, fastLog(r.Output), "ran cached systemd_lifecycle")
				assert.Contains(t, r.Output, "/bin/ppc64le/systemd_lifecycle", "the normal path chose the ppc64le build")
				assert.NotContains(t, tg.MustExec(t, "ls", "-A", cache), "richt-modules-ppc64le-"+ppc, "a build the probe could not run is not cached")
				assert.Contains(t, tg.MustExec(t, "ls", "-A", cache), "richt-modules-aarch64-"+arm, "the other architecture's build stays")
			})

			t.Run("normal path (pipelining off) uploads the aarch64 build", func(t *testing.T) {
				r := run(t, c.command, []string{"ANSIBLE_PIPELINING=0"})
				ok(t, r)
				assert.Contains(t, r.Output, "bin/aarch64/systemd_lifecycle")
				assert.Contains(t, r.Output, "AnsiballZ_systemd_lifecycle")
			})

			runOn(t, c.name, "riscv64 fails before anything runs, naming what there is", func(t *testing.T) {
				reportArch(t, tg, "riscv64")
				defer reportArch(t, tg, "aarch64")
				want := "richt.services.systemd_lifecycle has no build for the target's architecture riscv64 (uname -m); the collection has builds for: aarch64, ppc64le, s390x, x86_64"
				for name, env := range map[string][]string{"fast path": nil, "normal path": {"ANSIBLE_PIPELINING=0"}} {
					r := run(t, c.command, env)
					assert.NotZero(t, r.ExitCode, name)
					assert.Contains(t, r.Output, want, name)
					assert.NotContains(t, r.Output, "AnsiballZ_systemd_lifecycle", "%s: no module was uploaded", name)
					assert.NotContains(t, fastLog(r.Output), "ran cached systemd_lifecycle", name)
				}
			})
		})
	}

	t.Run("Mitogen's path uploads the aarch64 build", func(t *testing.T) {
		reportArch(t, tg, "aarch64")
		r := run(t, "ansible-playbook", []string{"ANSIBLE_STRATEGY_PLUGINS=" + testenv.MitogenStrategyPlugins, "ANSIBLE_STRATEGY=mitogen_linear"},
			"-e", "richt_services_fast_path=false")
		ok(t, r)
		assert.Contains(t, fastLog(r.Output), "not used for systemd_lifecycle: richt_services_fast_path is false")
		tg.MustExec(t, "rm", "-rf", cache)
		r = run(t, "ansible-playbook", []string{"ANSIBLE_STRATEGY_PLUGINS=" + testenv.MitogenStrategyPlugins, "ANSIBLE_STRATEGY=mitogen_linear"})
		ok(t, r)
		assert.Equal(t, "installed richt-modules-aarch64-"+arm[:12], fastLog(r.Output)[0], "the fast path under Mitogen")
	})
}
