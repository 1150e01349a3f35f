package testenv_test

// Every example that starts a target needs Docker, so none has an Output comment: go test
// compiles them and runs none of them, and `go test -short` stays Docker-free. Each body
// is written as the inside of a test function; `var t *testing.T` stands for that test's
// own t.

import (
	"context"
	"fmt"
	"log"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/richt/services/testenv"
	"github.com/richt/services/testenv/fixtures"
)

// A whole end-to-end test of a module: start a target, build the module, run it twice
// (the second run must change nothing), and check what systemd did.
func Example() {
	var t *testing.T // the test's own t: func TestDbusRunning(t *testing.T) { ... }
	if testing.Short() {
		t.Skip("end-to-end: needs Docker")
	}
	tg := testenv.Start(t)
	tg.MustExec(t, "systemctl", "is-system-running") // fails the test unless it exits 0
	module := testenv.BuildModule(t, "./cmd/richt-modules", testenv.Named("systemd_lifecycle"))
	args := map[string]any{"unit": "dbus.service", "state": "running"}

	before := tg.Snapshot(t, "dbus.service")
	r := tg.RunModule(t, module, args)
	if r.Failed() {
		t.Fatalf("module failed: %s", r.Msg())
	}
	if again := tg.RunModule(t, module, args); again.Changed() {
		t.Errorf("second run changed: %v", again)
	}
	if a := testenv.Classify(before, tg.Snapshot(t, "dbus.service")); a != testenv.Untouched {
		t.Errorf("dbus.service was %s; it was running already", a)
	}
}

// Start a target in a test: it is removed when the test ends, and a failing test logs
// its systemd state first.
func ExampleStart() {
	var t *testing.T // the test's own t
	unit := "[Service]\nExecStart=/bin/sleep infinity\n"
	tg := testenv.Start(t,
		// In place before systemd boots: a unit, and a drop-in that makes the boot start it.
		testenv.WithFile("/etc/systemd/system/app.service", []byte(unit), 0o644),
		testenv.WithFile("/etc/systemd/system/multi-user.target.d/app.conf", []byte("[Unit]\nWants=app.service\n"), 0o644),
		testenv.WithReadyTimeout(90*time.Second))
	fmt.Print(tg.MustExec(t, "systemctl", "is-active", "app.service")) // active
}

// Start a target outside a test, for example in a command or in TestMain; the caller
// removes it.
func ExampleStartContext() {
	ctx := context.Background()
	tg, err := testenv.StartContext(ctx, testenv.WithName("demo"), testenv.WithLogger(log.Default()))
	if tg != nil {
		defer tg.Terminate(ctx)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return
	}
	res, err := tg.Exec(ctx, "systemctl", "is-system-running")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return
	}
	fmt.Println(strings.TrimSpace(res.Stdout)) // running
}

// Options check their arguments: a refused one is an error before anything starts.
func ExampleWithMount() {
	_, err := testenv.StartContext(context.Background(), testenv.WithMount("/srv/data", "/srv/data", "readonly"))
	fmt.Println(err)
	// Output: WithMount /srv/data: mode "readonly", want "ro" or "rw"
}

// Run a module in check mode, then for real, and read its result. Ansible's check and
// diff switches are keys of the arguments.
func ExampleTarget_RunModule() {
	var t *testing.T // the test's own t
	unit := "[Service]\nExecStart=/bin/sleep infinity\n"
	tg := testenv.Start(t, testenv.WithFile("/etc/systemd/system/app.service", []byte(unit), 0o644))
	module := testenv.BuildModule(t, "./cmd/richt-modules", testenv.Named("systemd_lifecycle"))
	check := tg.RunModule(t, module, map[string]any{"unit": "app.service", "state": "running", "_ansible_check_mode": true})
	r := tg.RunModule(t, module, map[string]any{"unit": "app.service", "state": "running"})
	fmt.Println(check.Changed(), r.Changed(), r.Failed(), tg.Snapshot(t, "app.service").ActiveState) // true true false active
}

// Tell which action a run took on a unit, from systemd's own properties.
func ExampleClassify() {
	var t *testing.T // the test's own t
	tg := testenv.Start(t)
	before := tg.Snapshot(t, "dbus.service")
	tg.MustExec(t, "systemctl", "restart", "dbus.service")
	fmt.Println(testenv.Classify(before, tg.Snapshot(t, "dbus.service"))) // restarted
}

// Build RPM fixtures into a repository, add it to a target and install from it with DNF.
func ExampleBuildRepo() {
	var t *testing.T // the test's own t
	unit := "[Service]\nExecStart=/bin/sleep infinity\n[Install]\nWantedBy=multi-user.target\n"
	repo := testenv.BuildRepo(t, testenv.Package{
		Name: "app", Version: "2.0",
		Files:        map[string]testenv.File{"/usr/lib/systemd/system/app.service": {Content: unit}},
		SystemdUnits: []string{"app.service"}, // EL's %systemd_post, %systemd_preun, %systemd_postun_with_restart
	})
	tg := testenv.Start(t)
	if err := tg.AddRepo(context.Background(), "fixtures", repo); err != nil {
		t.Fatal(err)
	}
	tg.MustExec(t, "dnf", "-y", "-q", "install", "app")
	fmt.Print(tg.MustExec(t, "rpm", "-q", "app")) // app-2.0-1.noarch
}

// Run a playbook against two targets and read the recap.
func ExamplePlaybook() {
	var t *testing.T // the test's own t
	repo := testenv.Repo(t, fixtures.DemoPackage("1.0"), fixtures.DemoPackage("2.0"))
	a, b := testenv.Start(t), testenv.Start(t)
	for _, tg := range []*testenv.Target{a, b} {
		// demo.yml writes the .repo file itself; the packages must be there.
		if err := tg.CopyDir(context.Background(), repo, "/srv/richt-repos/fixtures"); err != nil {
			t.Fatal(err)
		}
	}
	r := testenv.Playbook{
		Path:            "playbooks/demo.yml",
		Targets:         []*testenv.Target{a, b}, // the hosts of the group "targets"
		CollectionsPath: "build",                 // the collection under test (make build)
		ExtraVars:       map[string]any{"demo_version": "0:2.0-1.noarch"},
		Args:            []string{"--forks", "2"},
	}.RunOK(t) // fails the test unless every host finished without failures
	fmt.Println(r.Recap[a.Name()].Changed, r.ChangedTasks)
}

// A Molecule-style scenario: create → prepare → converge → idempotence (the second
// converge must change nothing) → verify → destroy.
func ExampleScenario() {
	var t *testing.T // the test's own t
	repo := testenv.Repo(t, fixtures.DemoPackage("1.0"))
	testenv.Scenario{
		Name:            "demo",
		CollectionsPath: "build",
		Prepare: testenv.Step{Func: func(tb testing.TB, ts []*testenv.Target) []string {
			if err := ts[0].CopyDir(context.Background(), repo, "/srv/richt-repos/fixtures"); err != nil {
				tb.Fatal(err)
			}
			return nil
		}},
		Converge: testenv.Step{Playbook: "playbooks/demo.yml"},
		Verify: testenv.Step{Func: func(tb testing.TB, ts []*testenv.Target) []string {
			if s := ts[0].Snapshot(tb, "demo.service"); s.ActiveState != "active" {
				tb.Errorf("demo.service is %s", s.ActiveState)
			}
			return nil
		}},
	}.Run(t)
}
