package service_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/richt/services/modules"
	"github.com/richt/services/testenv"
	"github.com/richt/services/testenv/fixtures"
)

const (
	// startsFile gets a line from the unit's ExecStartPre at every start: the start job
	// waits for it, so a start that systemctl reported done is counted, with no settling.
	startsFile = "/run/demo/starts"
	// preFile gets a line from the 2.0 build's %pre when a transaction installing it is
	// under way.
	preFile = "/run/demo/pre"
	// preSleep is how long the 2.0 build's %pre sleeps: the window in which the next run
	// predicts from an RPM database that the running transaction has not changed yet. Far
	// longer than a module's start, also on a loaded 2-core machine (a docker exec there
	// has taken seconds).
	preSleep = "15"
)

// scriptletEnv is a target with the demo package built as the soak builds it
// (cmd/richt-soak's soakPackage), and the service module: 1.0 as the fixture is; 2.0
// restarts demo.service from its %postun when a transaction moves away from it (EL's
// %systemd_postun_with_restart, testenv's SystemdUnits), and its %pre says it runs and
// sleeps preSleep seconds.
func scriptletEnv(t *testing.T) *env {
	t.Helper()
	if testing.Short() {
		t.Skip("end-to-end: needs Docker")
	}
	e := &env{t: testenv.Start(t), module: testenv.BuildModule(t, modules.Command, testenv.Named("service"))}
	v2 := fixtures.DemoPackage("2.0")
	v2.SystemdUnits = []string{"demo.service"}
	v2.Scriptlets = map[string]string{"pre": "mkdir -p /run/demo\necho 'pre 2.0' >> " + preFile + "\nsleep " + preSleep}
	require.NoError(t, e.t.AddRepo(context.Background(), "scriptlets", testenv.Repo(t, fixtures.DemoPackage("1.0"), v2)))
	e.t.LogUnitOnFailure(t, "demo.service")
	return e
}

// countedDemo is the demo service (demo) with a drop-in whose ExecStartPre writes a line
// into startsFile at each start of the unit.
func countedDemo(version, level string) map[string]any {
	args := demo(version, level)
	args["dropins"] = append(args["dropins"].([]any), map[string]any{"unit": "demo.service", "name": "30-starts.conf",
		"content": "[Service]\nExecStartPre=/bin/sh -c 'mkdir -p /run/demo && echo start >> " + startsFile + "'\n"})
	return args
}

func (e *env) starts(t *testing.T) int {
	res, err := e.t.Exec(context.Background(), "cat", startsFile)
	require.NoError(t, err)
	return strings.Count(res.Stdout, "start\n")
}

// An rpm_exact run pins demo to 2.0 and its transaction's supervisor is killed (the
// transaction goes on in its scope). The next service run, wanting 1.0, starts while that
// transaction is in its %pre. At c365c90 the service predicted its packages step then,
// from the RPM database: 1.0 installed, no change; the step then waited, found 2.0 and
// moved back to 1.0, and the restart owed for the missed change was stamped after the
// 2.0 build's %postun had restarted demo.service, which restarted again (soak seeds
// 20261205 and 20261206, kill-supervisor). Now the packages step is planned under the
// transaction lock after the wait for that transaction (rpmexact.Deps.Hold), so the plan
// sees 2.0 and records the restart ahead, before the transaction whose %postun serves it;
// a change a plan still misses (a DNF run outside richt.services) is stamped at the
// step's files_placed (TestAMissedPackageChangeIsStampedWhenItsFilesWereInPlace). Either
// way the unit starts once in the run, not twice.
func TestAMissedPackageChangeServedByTheScriptletIsNotRestartedAgain(t *testing.T) {
	t.Parallel()
	e := scriptletEnv(t)
	r := e.run(t, countedDemo(v1, "info"))
	require.False(t, r.Failed(), r.Msg())
	require.Equal(t, 1, e.starts(t), "installed and started once")

	bin, err := e.t.InstallModule(context.Background(), e.module)
	require.NoError(t, err)
	args, err := json.Marshal(map[string]any{"name": "demo", "version": v2, "timeout": "5m"})
	require.NoError(t, err)
	require.NoError(t, e.t.WriteFile(context.Background(), "/var/tmp/pin-args.json", args, 0o600))
	// rpm_exact from the same multi-call binary, named by a link. The supervisor is the
	// process in the transaction's scope that runs the module's executable (DNF runs
	// beside it): killed once 2.0's %pre runs, which leaves preSleep seconds of it.
	out := e.t.Shell(t, fmt.Sprintf(`mkdir -p /var/tmp/richt-bin && ln -sf %[1]s /var/tmp/richt-bin/rpm_exact
/var/tmp/richt-bin/rpm_exact /var/tmp/pin-args.json >/var/tmp/pin-out 2>&1 & p=$!
i=0; until grep -qx 'pre 2.0' %[2]s 2>/dev/null; do i=$((i+1)); [ $i -lt 1200 ] || break; sleep 0.1; done
exe=$(readlink -f %[1]s); hit=0
for u in $(systemctl list-units --no-legend --plain 'richt-rpm-transaction-*' | awk '{print $1}'); do
  cg=$(systemctl show -p ControlGroup --value "$u")
  for q in $(cat /sys/fs/cgroup$cg/cgroup.procs 2>/dev/null); do
    [ "$(readlink /proc/$q/exe)" = "$exe" ] && kill -9 $q && hit=$((hit+1))
  done
done
wait $p; rc=$?
pgrep -x dnf >/dev/null && echo "dnf still running"
echo "killed $hit supervisor(s); rpm_exact exit $rc"`, bin, preFile))
	// Started at once, while the transaction sleeps in its %pre.
	r = e.run(t, countedDemo(v1, "info"))
	t.Logf("the kill: %s", strings.TrimSpace(out))
	t.Logf("the killed run: %s", strings.TrimSpace(e.t.MustExec(t, "cat", "/var/tmp/pin-out")))
	t.Logf("the service's plan: %v", r["plan"])
	require.Contains(t, out, "killed 1 supervisor(s)", "the supervisor was found in the transaction's scope")
	require.Contains(t, out, "dnf still running", "the transaction went on without its supervisor")
	require.False(t, r.Failed(), r.Msg())

	plan, _ := r["plan"].([]any)
	require.NotEmpty(t, plan)
	assert.Equal(t, "record-pending demo.service restart", plan[0],
		"the packages step was planned after the earlier transaction ended: the move back to 1.0 is planned, its restart recorded ahead")
	assert.Contains(t, plan, "packages: install-nevra demo-"+v1)
	assert.True(t, r.Changed())
	assert.Equal(t, "demo-1.0-1.noarch\n", e.t.MustExec(t, "rpm", "-q", "demo"))
	assert.Equal(t, "active\n", e.t.MustExec(t, "systemctl", "is-active", "demo.service"))
	assert.Equal(t, 2, e.starts(t), "one start in the service run: the 2.0 build's %postun restart served the missed change")
	e.t.MustExec(t, "test", "!", "-e", "/var/lib/richt/pending/demo.service.json")

	r = e.run(t, countedDemo(v1, "info"))
	require.False(t, r.Failed(), r.Msg())
	assert.False(t, r.Changed())
	assert.Equal(t, 2, e.starts(t), "nothing owed")
}
