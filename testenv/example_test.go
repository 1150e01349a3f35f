package testenv_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/richt/services/testenv"
)

// Start a systemd target, run a command in it, and remove it.
func ExampleStartContext() {
	ctx := context.Background()
	t, err := testenv.StartContext(ctx)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer t.Terminate(ctx)
	res, _ := t.Exec(ctx, "systemctl", "is-system-running")
	fmt.Println(strings.TrimSpace(res.Stdout))
	// Output: running
}

// Build an RPM fixture repository and install from it with DNF 4 in a target.
func ExampleBuildRepoDir() {
	ctx := context.Background()
	repo := "/tmp/richt-example-repo"
	if err := testenv.BuildRepoDir(repo, testenv.DemoPackage("1.0")); err != nil {
		fmt.Println(err)
		return
	}
	t, err := testenv.StartContext(ctx)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer t.Terminate(ctx)
	_ = t.AddRepo(ctx, "fixtures", repo)
	_, _ = t.Exec(ctx, "dnf", "-y", "-q", "install-nevra", "demo-0:1.0-1.noarch")
	res, _ := t.Exec(ctx, "rpm", "-q", "demo")
	fmt.Println(strings.TrimSpace(res.Stdout))
	// Output: demo-1.0-1.noarch
}

// Tell which action a run took on a unit, from systemd's own properties.
func ExampleClassify() {
	var tb testing.TB // the test's *testing.T
	if tb == nil {
		return // (compiled, not run)
	}
	t := testenv.Start(tb)
	before := t.Snapshot(tb, "dbus.service")
	t.MustExec(tb, "systemctl", "restart", "dbus.service")
	fmt.Println(testenv.Classify(before, t.Snapshot(tb, "dbus.service")))
}

// A Molecule-style scenario: the role's playbook converges twice (the second run must
// change nothing), then Go code verifies the result.
func ExampleScenario() {
	var t *testing.T // the test's *testing.T
	if t == nil {
		return // (compiled, not run)
	}
	testenv.Scenario{
		Name:            "demo",
		CollectionsPath: "build",
		Converge:        testenv.Step{Playbook: "playbooks/demo.yml"},
		Verify: testenv.Step{Func: func(tb testing.TB, ts []*testenv.Target) []string {
			if s := ts[0].Snapshot(tb, "demo.service"); s.ActiveState != "active" {
				tb.Errorf("demo.service is %s", s.ActiveState)
			}
			return nil
		}},
	}.Run(t)
}
