package molecule

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/richt/services/testenv"
)

// These tests run richt-molecule's runner on the scenarios of testdata/webrole, a role of
// built-in modules only, against real targets. They run in parallel: each has its own
// state root, so its scenarios' state directories, inventories and target labels are its
// own (TestE2EParallel checks the same for scenarios within one run).

// elVersion is the EL generation of the suite under test: the docs-style scenario names
// its image with ${EL_VERSION:-10}, so TESTENV_SUITE=bookworm runs it on the EL 9 target.
func elVersion() string {
	if testenv.Suite() == "bookworm" {
		return "9"
	}
	return "10"
}

// syncBuffer is the runner's output, written by scenarios running at once.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func e2eRunner(t *testing.T, project string) (*Runner, *syncBuffer) {
	t.Helper()
	if testing.Short() {
		t.Skip("end-to-end: needs Docker and ansible-playbook")
	}
	out := &syncBuffer{}
	r := &Runner{ProjectDir: project, StateRoot: t.TempDir(), Out: out,
		Getenv: func(k string) string {
			if k == "EL_VERSION" {
				return elVersion()
			}
			return os.Getenv(k)
		}}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("richt-molecule output:\n%s", out.String())
		}
		// Whatever happened, no target of these scenarios outlives the test.
		for _, name := range []string{"default", "twogen", "failverify", "notidem", "upgrade", "upgradewrong", "badsyntax", "testinfra"} {
			dir, _ := StateDir(r.StateRoot, project, name)
			if n, err := (DockerCLI{}).Remove(context.Background(), labelState, dir); n > 0 || err != nil {
				t.Errorf("scenario %s left %d target(s) behind (%v)", name, n, err)
			}
		}
	})
	return r, out
}

func exitCode(err error) int {
	var ee *ExitError
	if errors.As(err, &ee) {
		return ee.Code
	}
	if err != nil {
		return -1
	}
	return 0
}

func mustContain(t *testing.T, out string, wants ...string) {
	t.Helper()
	for _, w := range wants {
		if !strings.Contains(out, w) {
			t.Errorf("output lacks %q", w)
		}
	}
}

// The docs-style scenario, one sub-command at a time as a role author iterates: each
// command is a new Runner (a new process, as far as state goes), and they share only the
// scenario's state directory.
func TestE2ESubcommands(t *testing.T) {
	t.Parallel()
	r, out := e2eRunner(t, "testdata/webrole")
	ctx := context.Background()
	step := func(command string, want int) {
		t.Helper()
		next := *r
		if err := next.Run(ctx, command, []string{"default"}); exitCode(err) != want {
			t.Fatalf("%s: %v (exit %d), want exit %d", command, err, exitCode(err), want)
		}
	}
	step("create", 0)
	// A run killed after create loses nothing: with its state file gone, the next create
	// finds the target by its label and replaces it.
	dir, _ := StateDir(r.StateRoot, r.ProjectDir, "default")
	if err := os.Remove(filepath.Join(dir, "state.json")); err != nil {
		t.Fatal(err)
	}
	step("create", 0)
	step("create", 0)
	mustContain(t, out.String(), "create: removed 1 leftover target(s) of an earlier run", "create: Skipping, instances already created.",
		"create: instance (docker.io/geerlingguy/docker-rockylinux"+elVersion()+"-ansible:latest) ← testenv's Debian "+testenv.Suite()+" target",
		"cgroupns_mode, command, pre_build_image, privileged, volumes: testenv's target boots systemd its own way")
	step("converge", 0)
	mustContain(t, out.String(), "converge: systemd instance: web.service started 1, restarted 1")
	step("idempotence", 0)
	mustContain(t, out.String(), "idempotence: systemd instance: no unit started, restarted, reloaded or stopped",
		"Idempotence completed successfully.")
	step("verify", 0) // group_vars, host_vars, provisioner.env and MOLECULE_* reach the play
	var list bytes.Buffer
	lr := *r
	lr.Out = &list
	if err := lr.List([]string{"default"}); err != nil || !strings.Contains(list.String(), "true     true") {
		t.Errorf("list after converge: %v\n%s", err, list.String())
	}
	// A second run of the same scenario while this one holds it is refused, not shared.
	unlock, err := lockState(dir)
	if err != nil {
		t.Fatal(err)
	}
	busy := *r
	if err := busy.Run(ctx, "verify", []string{"default"}); exitCode(err) != 1 || !strings.Contains(err.Error(), "in use by another richt-molecule run") {
		t.Errorf("a run while the scenario is held: %v", err)
	}
	unlock()
	step("destroy", 0)
	step("verify", 1) // nothing to verify any more
	mustContain(t, out.String(), "destroy: removed 1 target(s)", "Instances not created.")
}

// Two platforms of two generations in one scenario: each gets its own generation's
// target (verify.yml checks systemd's version on each).
func TestE2ETwoGenerations(t *testing.T) {
	t.Parallel()
	r, out := e2eRunner(t, "testdata/webrole")
	if err := r.Run(context.Background(), "test", []string{"twogen"}); err != nil {
		t.Fatalf("twogen: %v", err)
	}
	mustContain(t, out.String(),
		"el9 (quay.io/almalinuxorg/almalinux:9) ← testenv's Debian bookworm target (systemd 252, DNF 4.14) for EL 9",
		"el10 (quay.io/almalinuxorg/almalinux:10) ← testenv's Debian trixie target (systemd 257, DNF 4.23) for EL 10",
		"converge: systemd el9: web.service started 1, restarted 1",
		"converge: systemd el10: web.service started 1, restarted 1")
}

// Three scenarios at once, all with an instance named "instance": each has its own state
// directory, inventory and targets, and the failing one fails alone, with Molecule's exit
// code and message for a failed verify.
func TestE2EParallel(t *testing.T) {
	t.Parallel()
	r, out := e2eRunner(t, "testdata/webrole")
	r.Parallel = 3
	errs := r.RunAll(context.Background(), "test", []string{"default", "upgrade", "failverify"})
	if errs[0] != nil || errs[1] != nil {
		t.Errorf("default: %v; upgrade: %v", errs[0], errs[1])
	}
	var ee *ExitError
	if !errors.As(errs[2], &ee) || ee.Code != 2 || !strings.HasPrefix(ee.Msg, "Ansible return code was 2, command was: ansible-playbook -i ") ||
		!strings.HasSuffix(ee.Msg, "verify.yml") {
		t.Errorf("failverify: %#v, want exit 2 and Molecule's message", errs[2])
	}
	mustContain(t, out.String(),
		"[upgrade] INFO     upgrade ➜ upgrade: [instance] web.service restarted 1, as expected",
		"[failverify] CRITICAL failverify ➜ verify: Ansible return code was 2",
		"[failverify] INFO     failverify ➜ destroy: removed 1 target(s)",
		"[default] INFO     default ➜ destroy: removed 1 target(s)")
	dirs := map[string]bool{}
	for _, name := range []string{"default", "upgrade", "failverify"} {
		dir, _ := StateDir(r.StateRoot, r.ProjectDir, name)
		dirs[dir] = true
		if _, err := os.Stat(filepath.Join(dir, "inventory.yml")); err != nil {
			t.Errorf("%s has no inventory of its own: %v", name, err)
		}
	}
	if len(dirs) != 3 {
		t.Errorf("state directories shared: %v", dirs)
	}
}

// A converge that changes something every time fails idempotence naming the task and what
// it changed; an upgrade that restarts where the scenario expects a reload fails saying
// what it got (both exit 1, as Molecule's idempotence failure does); a converge.yml that
// does not parse fails the syntax check with ansible-playbook's code.
func TestE2EFailures(t *testing.T) {
	t.Parallel()
	r, out := e2eRunner(t, "testdata/webrole")
	r.Parallel = 3
	errs := r.RunAll(context.Background(), "test", []string{"notidem", "upgradewrong", "badsyntax", "testinfra"})
	var ee *ExitError
	if !errors.As(errs[0], &ee) || ee.Code != 1 || ee.Msg != "Idempotence test failed because of the following tasks:\n"+
		"* [instance] => Stamp the time\n    changed: cmd=date +%s%N > /var/tmp/stamp" {
		t.Errorf("notidem: %#v", errs[0])
	}
	if !errors.As(errs[1], &ee) || ee.Code != 1 || !strings.Contains(ee.Msg, "* [instance] web.service: want reloaded once, got restarted 1") {
		t.Errorf("upgradewrong: %#v", errs[1])
	}
	// The syntax check runs beside create: its failure is still the run's, with
	// ansible-playbook's exit code, and the target created meanwhile goes.
	if !errors.As(errs[2], &ee) || ee.Code != 4 || !strings.HasPrefix(ee.Msg, "Ansible return code was 4, command was: ansible-playbook") ||
		!strings.Contains(ee.Msg, "--syntax-check") {
		t.Errorf("badsyntax: %#v", errs[2])
	}
	mustContain(t, out.String(), "[notidem] INFO     notidem ➜ destroy: removed 1 target(s)",
		"[badsyntax] CRITICAL badsyntax ➜ syntax: Ansible return code was 4",
		"[badsyntax] INFO     badsyntax ➜ destroy: removed 1 target(s)")
}

// Molecule's testinfra verifier: pytest with testinfra over the scenario's tests/ (and the
// file verifier.additional_files_or_dirs adds), reaching the instance through the
// runner's inventory; then the same instance against checks that fail, which exit with
// pytest's code and name the failed tests.
func TestE2ETestinfra(t *testing.T) {
	r, out := e2eRunner(t, "testdata/webrole")
	if _, err := testinfraPython(defaultPythons); err != nil {
		t.Fatalf("%v (make test's setup installs it)", err)
	}
	ctx := context.Background()
	if err := r.Run(ctx, "converge", []string{"testinfra"}); err != nil {
		t.Fatalf("converge: %v", err)
	}
	if err := r.Run(ctx, "verify", []string{"testinfra"}); err != nil {
		t.Fatalf("verify: %v", err)
	}
	mustContain(t, out.String(), "verify: Executing Testinfra tests found in ",
		"test_default.py::test_web_running_and_enabled[ansible://instance] PASSED", "test_default.py::test_unit_file_names_the_version[ansible://instance] PASSED",
		"check_journal.py::test_web_started_once[ansible://instance] PASSED", "4 passed", "verify: Verifier completed successfully.")
	failing := *r
	failing.Getenv = func(k string) string {
		if k == "TESTINFRA_DIR" {
			return "failing"
		}
		return r.Getenv(k)
	}
	err := failing.Run(ctx, "verify", []string{"testinfra"})
	var ee *ExitError
	if !errors.As(err, &ee) || ee.Code != 1 || !strings.HasPrefix(ee.Msg, "Testinfra return code was 1, command was: ") ||
		!strings.Contains(ee.Msg, "\nFAILED failing/test_failing.py::test_web_stopped[ansible://instance] - AssertionError: web.service is running\n") || !strings.HasSuffix(ee.Msg, "\n1 failed, 1 passed in "+afterIn(ee.Msg)) {
		t.Errorf("failing verify: %#v, want pytest's exit code 1 naming the failed test", err)
	}
	if err := r.Run(ctx, "destroy", []string{"testinfra"}); err != nil {
		t.Fatalf("destroy: %v", err)
	}
}

// afterIn is what follows the last " in " of s: pytest's duration, which no test can know.
func afterIn(s string) string {
	return s[strings.LastIndex(s, " in ")+len(" in "):]
}
