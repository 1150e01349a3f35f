package modules_test

import (
	"context"
	"fmt"
	"os/exec"
	"runtime"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/richt/services/modules"
	"github.com/richt/services/testenv"
	"github.com/richt/services/testenv/fixtures"
)

// foreignArches are the builds this test runs under QEMU's user-mode emulator next to the
// host's own: every architecture EL ships but the build machine's.
func foreignArches() []string {
	var out []string
	for a := range machines {
		if a != runtime.GOARCH {
			out = append(out, a)
		}
	}
	sort.Strings(out)
	return out
}

// step is one module run of the scenario: which module, with what.
type step struct {
	name, module string
	args         map[string]any
	// backend is systemd_lifecycle's way to systemd (RICHT_SYSTEMD_BACKEND), "" for the
	// other modules.
	backend string
}

const (
	demoV1 = "0:1.0-1.noarch"
	demoV2 = "0:2.0-1.noarch"
)

// scenario is what the issue asks every build to do on a real target: rpm_exact install,
// converge and a set; unit_override create and converge; systemd_lifecycle start, converge
// and restart_on, on both of its backends. Each backend has a unit of its own so that both
// see a start.
func scenario() []step {
	// A transaction still running at the module's deadline is left to finish, and the run
	// fails: with the module's own 10 minutes, a hung emulator cost the suite that long.
	tmo := testenv.ModuleTimeout()
	s := []step{
		{name: "rpm_exact install", module: "rpm_exact", args: map[string]any{"name": "demo", "version": demoV1, "timeout": tmo}},
		{name: "rpm_exact converged", module: "rpm_exact", args: map[string]any{"name": "demo", "version": demoV1, "timeout": tmo}},
		{name: "rpm_exact set", module: "rpm_exact", args: map[string]any{"timeout": tmo, "packages": []any{
			map[string]any{"name": "demo", "version": demoV2},
			map[string]any{"name": "acc-lib", "version": "0:1.0-1.noarch"},
		}}},
		{name: "rpm_exact set converged", module: "rpm_exact", args: map[string]any{"timeout": tmo, "packages": []any{
			map[string]any{"name": "demo", "version": demoV2},
			map[string]any{"name": "acc-lib", "version": "0:1.0-1.noarch"},
		}}},
	}
	for _, b := range []string{"dbus", "systemctl"} {
		unit := "arch-" + b + ".service"
		content := "[Unit]\nDescription=arch test " + b + "\n\n[Service]\nExecStart=/usr/bin/demo-daemon\n"
		s = append(s,
			step{name: "unit_override create " + unit, module: "unit_override", args: map[string]any{"unit": unit, "content": content}},
			step{name: "unit_override converged " + unit, module: "unit_override", args: map[string]any{"unit": unit, "content": content}},
			step{name: "unit_override drop-in " + unit, module: "unit_override", args: map[string]any{"unit": unit, "name": "10-env.conf",
				"content": "[Service]\nEnvironment=LEVEL=" + b + "\n"}},
			// The module's 5s default is for an idle host, not for an emulated build on a
			// loaded test machine.
			step{name: b + " start " + unit, module: "systemd_lifecycle", backend: b, args: map[string]any{"unit": unit, "state": "running",
				"timeout": testenv.ModuleTimeout()}},
			step{name: b + " converged " + unit, module: "systemd_lifecycle", backend: b, args: map[string]any{"unit": unit, "state": "running",
				"timeout": testenv.ModuleTimeout()}},
			step{name: b + " restart_on " + unit, module: "systemd_lifecycle", backend: b, args: map[string]any{"unit": unit, "state": "running",
				"timeout": testenv.ModuleTimeout(), "restart_on": []any{map[string]any{"changed": true}}}},
		)
	}
	return s
}

// volatile are result keys whose values differ between any two runs (times, process IDs,
// the journal, DNF's own chatter), whatever the build.
var volatile = map[string]bool{
	"elapsed": true, "duration_ms": true, "main_pid": true, "invocation_id": true, "journal": true,
	"stdout": true, "stderr": true, "stdout_lines": true, "stderr_lines": true, "log": true, "transaction_log": true,
	"since": true, "timings": true, "started_at": true, "active_enter_timestamp": true, "changed_at": true, "monotonic_us": true,
}

// comparable is a result with the volatile keys removed, at any depth.
func comparable(v any) any {
	switch x := v.(type) {
	case map[string]any:
		out := map[string]any{}
		for k, val := range x {
			if !volatile[k] {
				out[k] = comparable(val)
			}
		}
		return out
	case testenv.Result:
		return comparable(map[string]any(x))
	case []any:
		out := make([]any, len(x))
		for i, val := range x {
			out[i] = comparable(val)
		}
		return out
	}
	return v
}

// runScenario runs every step with the builds of goarch on a new target and returns the
// results in order, with how long the converged runs took.
func runScenario(t *testing.T, goarch string) ([]testenv.Result, map[string]time.Duration) {
	tg := testenv.Start(t)
	repo := testenv.Repo(t, append([]testenv.Package{fixtures.DemoPackage("1.0"), fixtures.DemoPackage("2.0")}, fixtures.PinnedSet("1.0")...)...)
	require.NoError(t, tg.AddRepo(context.Background(), "fixtures", repo))
	var results []testenv.Result
	converged := map[string]time.Duration{}
	for _, s := range scenario() {
		bin := testenv.BuildModule(t, modules.Command, testenv.Named(s.module), testenv.Arch(goarch))
		var env []string
		if s.backend != "" {
			env = append(env, "RICHT_SYSTEMD_BACKEND="+s.backend)
			tg.LogUnitOnFailure(t, s.args["unit"].(string))
		}
		start := time.Now()
		r := tg.RunModuleEnv(t, bin, s.args, env...)
		if strings.Contains(s.name, "converged") {
			converged[s.name] = time.Since(start)
		}
		require.False(t, r.Failed(), "%s (%s build): %s", s.name, goarch, r.Msg())
		results = append(results, r)
	}
	// What the runs did, seen from the target itself.
	assert.Equal(t, "demo-2.0-1.noarch\n", tg.MustExec(t, "rpm", "-q", "demo"))
	for _, b := range []string{"dbus", "systemctl"} {
		assert.Equal(t, "active\n", tg.MustExec(t, "systemctl", "is-active", "arch-"+b+".service"))
		assert.Equal(t, "LEVEL="+b+"\n", tg.MustExec(t, "systemctl", "show", "--value", "-p", "Environment", "arch-"+b+".service"))
	}
	return results, converged
}

// Every build EL ships runs the modules on a real target, under QEMU where the target
// cannot execute it natively, with the host's rpm, dnf and systemd as its children and
// peers (the D-Bus backend included: a big-endian build talking to a little-endian
// systemd), and each step's result equals the native build's.
func TestForeignBuildsOnRealTargets(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end: needs Docker")
	}
	t.Parallel()
	native := make(chan []testenv.Result, 1)
	t.Run(runtime.GOARCH+" (native)", func(t *testing.T) {
		results, converged := runScenario(t, runtime.GOARCH)
		logConverged(t, runtime.GOARCH, converged)
		native <- results
	})
	want := <-native
	for _, goarch := range foreignArches() {
		t.Run(goarch+" under "+testenv.Emulator(goarch), func(t *testing.T) {
			emu, err := testenv.EmulatorPath(goarch)
			require.NoError(t, err)
			version, err := exec.Command(emu, "--version").Output()
			require.NoError(t, err, "%s --version", emu)
			t.Logf("emulator: %s, %s", emu, strings.SplitN(string(version), "\n", 2)[0])
			got, converged := runScenario(t, goarch)
			logConverged(t, goarch, converged)
			for i, s := range scenario() {
				assert.Equal(t, comparable(want[i]), comparable(got[i]), "%s: the %s build's result differs from the native build's", s.name, goarch)
			}
		})
	}
}

func logConverged(t *testing.T, goarch string, d map[string]time.Duration) {
	names := make([]string, 0, len(d))
	for n := range d {
		names = append(names, n)
	}
	sort.Strings(names)
	var b strings.Builder
	for _, n := range names {
		fmt.Fprintf(&b, " %s=%dms", n, d[n].Milliseconds())
	}
	t.Logf("%s converged runs:%s", goarch, b.String())
}
