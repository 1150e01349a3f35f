package rpm_exact_test

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/richt/services/modules"
	"github.com/richt/services/pkg/rpmexact"
	"github.com/richt/services/testenv"
	"github.com/richt/services/testenv/fixtures"
)

// slowRepo holds "slow" 1.0 and 2.0, whose %pre sleeps 8 s, and "breaks" 1.0 and 2.0,
// whose %pre fails, plus the /bin/sh provider their scriptlets need.
func slowRepo(t *testing.T) string {
	return testenv.Repo(t, fixtures.ShellProvider(),
		testenv.Package{Name: "slow", Version: "1.0"},
		testenv.Package{Name: "slow", Version: "2.0", Scriptlets: map[string]string{"pre": "sleep 8"},
			Files: map[string]testenv.File{"/usr/share/slow/version": {Content: "2.0\n"}}},
		testenv.Package{Name: "breaks", Version: "1.0"},
		testenv.Package{Name: "breaks", Version: "2.0", Scriptlets: map[string]string{"pre": "echo 'breaks: refusing to upgrade here' >&2\nexit 1"}},
	)
}

func faultFixture(t *testing.T) *fixture {
	t.Helper()
	if testing.Short() {
		t.Skip("end-to-end: needs Docker")
	}
	f := &fixture{target: testenv.Start(t), module: testenv.BuildModule(t, modules.Command, testenv.Named("rpm_exact"))}
	require.NoError(t, f.target.AddRepo(context.Background(), "faults", slowRepo(t)))
	return f
}

// slowStart installs slow 1.0 and puts the arguments of a pin to 2.0 (whose %pre sleeps
// 8 s) at path in the target, with timeout; it returns the module's path there. Every test
// that stops or kills something while DNF runs starts so.
func (f *fixture) slowStart(t *testing.T, path, timeout string) string {
	t.Helper()
	r := f.run(t, map[string]any{"name": "slow", "version": "0:1.0-1.noarch", "timeout": "2m"})
	require.False(t, r.Failed(), r.Msg())
	args, err := json.Marshal(map[string]any{"name": "slow", "version": "0:2.0-1.noarch", "timeout": timeout})
	require.NoError(t, err)
	require.NoError(t, f.target.WriteFile(context.Background(), path, args, 0o600))
	bin, err := f.target.InstallModule(context.Background(), f.module)
	require.NoError(t, err)
	return bin
}

// rpmQ is what rpm itself says about name: every installed build, or "absent".
func (f *fixture) rpmQ(t *testing.T, name string) string {
	res, err := f.target.Exec(context.Background(), "rpm", "-q", "--qf", "%{NAME}-%{VERSION}\n", name)
	require.NoError(t, err)
	if res.ExitCode != 0 {
		return "absent"
	}
	return strings.TrimSpace(res.Stdout)
}

// A deadline ends the wait, never the transaction: DNF runs on, the next run waits for it
// (or fails naming who holds the lock) and reports its outcome.
func TestDeadlineDoesNotKillTransaction(t *testing.T) {
	t.Parallel()
	f := faultFixture(t)
	r := f.run(t, map[string]any{"name": "slow", "version": "0:1.0-1.noarch", "timeout": "2m"})
	require.False(t, r.Failed(), r.Msg())

	r = f.run(t, map[string]any{"name": "slow", "version": "0:2.0-1.noarch", "timeout": "3s"})
	require.True(t, r.Failed(), "the deadline passed while %pre sleeps")
	assert.Contains(t, r.Msg(), "still running at the deadline")
	assert.Contains(t, r.Msg(), "was not stopped")
	assert.True(t, r.Changed(), "DNF may act: a change cannot be ruled out")
	assert.Equal(t, "needed", r.String("daemon_reload"), "nor a changed unit file")
	log := r.String("transaction_log")
	require.True(t, strings.HasPrefix(log, "/var/lib/richt/transactions/"), log)
	assert.Contains(t, r.Msg(), log)
	assert.Equal(t, "slow-1.0", f.rpmQ(t, "slow"), "the transaction is still in its %pre")
	// Written ahead, so a systemd_lifecycle run in between still reloads the manager.
	assert.Contains(t, f.target.MustExec(t, "cat", "/var/lib/richt/manager-sync-due"), "transaction under way")

	// A run whose own deadline is too short to wait fails and names the holder: DNF.
	r = f.run(t, map[string]any{"name": "slow", "version": "0:2.0-1.noarch", "timeout": "1s"})
	require.True(t, r.Failed())
	assert.Contains(t, r.Msg(), "an earlier package transaction is still running and was not stopped")
	assert.Regexp(t, `PID [0-9]+: [^)]*dnf -y install-nevra -- slow-0:2.0-1.noarch`, r.Msg())
	assert.Contains(t, r.Msg(), log)
	assert.False(t, r.Changed())

	// The next run with time enough waits, sees the transaction's outcome and reports it.
	r = f.run(t, map[string]any{"name": "slow", "version": "0:2.0-1.noarch", "timeout": "1m"})
	require.False(t, r.Failed(), r.Msg())
	assert.True(t, r.Changed(), "the earlier transaction installed 2.0: its change is reported here, once, so triggers fire")
	assert.Equal(t, true, r["package_changed"])
	assert.Equal(t, "none", r.String("operation"), "no transaction of its own")
	earlier := r.Map("earlier_transaction")
	require.NotNil(t, earlier, "the outcome nobody reported yet")
	assert.Equal(t, "succeeded", earlier["outcome"])
	assert.Equal(t, log, earlier["log"])
	assert.Equal(t, "slow-2.0", f.rpmQ(t, "slow"), "exactly one version: nothing was killed half-way")
	assert.Contains(t, f.target.MustExec(t, "cat", log+"/stdout"), "slow")
	// Settled: slow ships no unit file, so the entry written ahead is gone.
	f.target.MustExec(t, "test", "!", "-e", "/var/lib/richt/manager-sync-due")

	// Reported once.
	r = f.run(t, map[string]any{"name": "slow", "version": "0:2.0-1.noarch"})
	require.False(t, r.Failed(), r.Msg())
	assert.Nil(t, r.Map("earlier_transaction"))
	assert.False(t, r.Changed())
}

// A module killed while it waits leaves DNF running; the next run reports the outcome.
func TestKilledModuleDoesNotKillTransaction(t *testing.T) {
	t.Parallel()
	f := faultFixture(t)
	bin := f.slowStart(t, "/var/tmp/slow-args.json", "5m")
	// SIGKILL the module once DNF runs, as the OOM killer or a killed ansible-playbook
	// over a local connection would.
	out := f.target.Shell(t, fmt.Sprintf(`%s /var/tmp/slow-args.json >/dev/null 2>&1 & p=$!
until pgrep -x dnf >/dev/null; do sleep 0.1; done
kill -9 $p; wait $p; echo "module exit $?"`, bin))
	assert.Contains(t, out, "module exit 137", "killed by SIGKILL")
	assert.Equal(t, "slow-1.0", f.rpmQ(t, "slow"))
	r := f.run(t, map[string]any{"name": "slow", "version": "0:2.0-1.noarch", "timeout": "1m"})
	require.False(t, r.Failed(), r.Msg())
	assert.True(t, r.Changed(), "the killed run's change, reported once")
	require.NotNil(t, r.Map("earlier_transaction"))
	assert.Equal(t, "succeeded", r.Map("earlier_transaction")["outcome"])
	assert.Equal(t, "slow-2.0", f.rpmQ(t, "slow"))
}

// The module gone before its supervisor starts (its deadline, a SIGKILL, a lost SSH
// session between systemd-run's start and its executing the supervisor; here a systemd-run
// that kills its caller and waits before it goes on): the supervisor still starts, from
// the executable the module passed it rather than through the module's PID, DNF runs, and
// the next run reports the outcome.
func TestModuleGoneBeforeTheSupervisorStarts(t *testing.T) {
	t.Parallel()
	f := faultFixture(t)
	bin := f.slowStart(t, "/var/tmp/slow-args.json", "5m")
	late := "#!/bin/sh\nkill -9 $PPID\nsleep 2\nexec /usr/bin/systemd-run \"$@\"\n"
	require.NoError(t, f.target.WriteFile(context.Background(), "/var/tmp/late-bin/systemd-run", []byte(late), 0o755))
	out := f.target.Shell(t, fmt.Sprintf(`PATH=/var/tmp/late-bin:$PATH %s /var/tmp/slow-args.json >/dev/null 2>&1; echo "module exit $?"`, bin))
	assert.Contains(t, out, "module exit 137", "killed by SIGKILL")

	r := f.run(t, map[string]any{"name": "slow", "version": "0:2.0-1.noarch", "timeout": "2m"})
	require.False(t, r.Failed(), r.Msg())
	earlier := r.Map("earlier_transaction")
	require.NotNil(t, earlier, "the killed run's transaction")
	assert.Equal(t, "succeeded", earlier["outcome"], "DNF ran although the module was gone")
	assert.Equal(t, "none", r.String("operation"), "no transaction of its own")
	assert.True(t, r.Changed())
	assert.Equal(t, "slow-2.0", f.rpmQ(t, "slow"))
}

// A failing scriptlet fails the task with DNF's words, and nothing is half-done.
func TestFailingScriptlet(t *testing.T) {
	t.Parallel()
	f := faultFixture(t)
	r := f.run(t, map[string]any{"name": "breaks", "version": "0:1.0-1.noarch"})
	require.False(t, r.Failed(), r.Msg())
	r = f.run(t, map[string]any{"name": "breaks", "version": "0:2.0-1.noarch"})
	require.True(t, r.Failed())
	assert.Contains(t, r.Msg(), "dnf -y install-nevra -- breaks-0:2.0-1.noarch failed")
	assert.Contains(t, r.Msg(), "scriptlet", "DNF's own words")
	assert.Contains(t, r.String("stdout")+r.String("stderr"), "breaks: refusing to upgrade here", "the scriptlet's own output")
	assert.False(t, r.Changed(), "rpm shows no change")
	assert.Equal(t, "breaks-1.0", f.rpmQ(t, "breaks"), "still exactly the old version")
	assert.NotEmpty(t, r.String("transaction_log"))
}

// A repository whose URL carries a password (a private mirror, user:password@host): DNF
// names the URL in its error, and the result must not carry the password on, in check
// mode or in a real run.
func TestRepositoryPasswordNeverInTheResult(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("end-to-end: needs Docker")
	}
	tg := testenv.Start(t)
	module := testenv.BuildModule(t, modules.Command, testenv.Named("rpm_exact"))
	const password = "s3cr3t-mirror-pw"
	// Port 9 (discard) on the target's loopback: nothing listens, the download fails at once.
	repo := "[private]\nname=private mirror\nbaseurl=http://deploy:" + password + "@127.0.0.1:9/el/\ngpgcheck=0\nskip_if_unavailable=0\n"
	require.NoError(t, tg.WriteFile(context.Background(), "/etc/yum.repos.d/private.repo", []byte(repo), 0o644))
	for _, check := range []bool{true, false} {
		out, err := tg.RunModuleRaw(context.Background(), module, map[string]any{"name": "demo", "version": "0:1.0-1.noarch", "_ansible_check_mode": check})
		require.NoError(t, err)
		assert.Contains(t, out, `"failed":true`, "the mirror cannot be reached")
		assert.Contains(t, out, "deploy:********@127.0.0.1:9", "the URL is still named, its password masked")
		assert.NotContains(t, out, password, "check=%v", check)
	}
}

// Two builds of one package in the RPM database (what an interrupted rpm -U or a killed
// transaction leaves) are never reported converged: the pin to either build fails, naming
// both builds and the command that repairs them, in check mode too, and changes nothing;
// after that repair the pin holds (a downgrade when it named the older build).
func TestTwoBuildsOfOnePackageAreNeverConverged(t *testing.T) {
	t.Parallel()
	f := newFixture(t, true)
	r := f.run(t, map[string]any{"name": "demo", "version": v1})
	require.False(t, r.Failed(), r.Msg())
	f.target.Shell(t, "rpm -i --justdb --nodeps --replacefiles $(find /srv/richt-repos/fixtures -name 'demo-2.0-1.noarch.rpm' | head -1)")
	both := strings.TrimSpace(f.target.MustExec(t, "rpm", "-q", "demo"))
	require.Equal(t, "demo-1.0-1.noarch\ndemo-2.0-1.noarch", both)

	for _, args := range []map[string]any{
		{"name": "demo", "version": v2},
		{"name": "demo", "version": v1, "_ansible_check_mode": true},
		{"name": "demo"},
		{"packages": []any{map[string]any{"name": "demo", "version": v2}}},
	} {
		r := f.run(t, args)
		assert.True(t, r.Failed(), "%v", args)
		assert.False(t, r.Changed())
		assert.Contains(t, r.Msg(), "demo has 2 builds of noarch installed (demo-0:1.0-1.noarch, demo-0:2.0-1.noarch)")
		assert.Contains(t, r.Msg(), "dnf remove --duplicates demo")
		assert.Equal(t, both, strings.TrimSpace(f.target.MustExec(t, "rpm", "-q", "demo")), "nothing changed")
	}

	f.target.MustExec(t, "dnf", "-y", "-q", "remove", "--duplicates", "demo")
	assert.Equal(t, "demo-2.0-1.noarch", strings.TrimSpace(f.target.MustExec(t, "rpm", "-q", "demo")), "DNF kept the newest")
	r = f.run(t, map[string]any{"name": "demo", "version": v1})
	require.False(t, r.Failed(), r.Msg())
	assert.True(t, r.Changed())
	assert.Equal(t, "demo-"+v1, f.installed(t))
}

// The supervisor's entry (an environment variable naming a transaction directory) is no
// way to make rpm_exact run a command: a task's environment that sets it leaves a module
// run a module run, and a supervisor started on a directory or request someone else could
// have written refuses it before reading it.
func TestSupervisorEntryRunsNothingPlanted(t *testing.T) {
	t.Parallel()
	f := newFixture(t, true)
	planted := `{"argv":["/bin/sh","-c","touch /root/planted-ran"],"transaction":"x"}`
	f.target.Shell(t, `mkdir -p /var/tmp/evil/tx && printf '%s' '`+planted+`' > /var/tmp/evil/tx/request.json &&
		chown -R nobody /var/tmp/evil && chmod -R 0777 /var/tmp/evil`)
	ran := func() bool {
		res, err := f.target.Exec(context.Background(), "test", "-e", "/root/planted-ran")
		require.NoError(t, err)
		return res.ExitCode == 0
	}

	// A module run with the variable set: the module's own work, nothing planted.
	r := f.target.RunModuleEnv(t, f.module, map[string]any{"name": "demo", "version": v1}, rpmexact.SuperviseEnv+"=/var/tmp/evil/tx")
	require.False(t, r.Failed(), r.Msg())
	assert.Equal(t, "demo-"+v1, f.installed(t))
	assert.False(t, ran(), "the planted request never ran")

	// The binary started as a supervisor on that directory: refused, nothing written there.
	bin, err := f.target.InstallModule(context.Background(), f.module)
	require.NoError(t, err)
	res, err := f.target.ExecEnv(context.Background(), []string{rpmexact.SuperviseEnv + "=/var/tmp/evil/tx"}, bin)
	require.NoError(t, err)
	assert.Equal(t, 2, res.ExitCode)
	assert.Contains(t, res.Stderr, "not a transaction this module started")
	assert.False(t, ran())
	assert.Equal(t, "request.json", strings.TrimSpace(f.target.MustExec(t, "ls", "/var/tmp/evil/tx")), "no outcome written into it")

	// Root's own 0700 directory elsewhere is no transaction either: only the transactions
	// directory's entries are.
	f.target.Shell(t, `chown -R root /var/tmp/evil && chmod 0700 /var/tmp/evil /var/tmp/evil/tx && chmod 0600 /var/tmp/evil/tx/request.json`)
	res, err = f.target.ExecEnv(context.Background(), []string{rpmexact.SuperviseEnv + "=/var/tmp/evil/tx"}, bin)
	require.NoError(t, err)
	assert.Equal(t, 2, res.ExitCode)
	assert.Contains(t, res.Stderr, "is not a transaction in "+rpmexact.DefaultTransactionDir)
	assert.False(t, ran())

	// In the transactions directory, a request of another owner is refused.
	plantedDir := rpmexact.DefaultTransactionDir + "/000000000099-planted-1"
	f.target.Shell(t, `cp -a /var/tmp/evil/tx `+plantedDir+` && chmod 0755 `+plantedDir+` && chmod 0666 `+plantedDir+`/request.json`)
	res, err = f.target.ExecEnv(context.Background(), []string{rpmexact.SuperviseEnv + "=" + plantedDir}, bin)
	require.NoError(t, err)
	assert.Equal(t, 2, res.ExitCode)
	assert.Contains(t, res.Stderr, "writable by group or others")
	assert.False(t, ran())

	// The transaction of the module run above ran once: started on it again, the
	// supervisor refuses, and its outcome stays.
	f.target.MustExec(t, "rm", "-rf", plantedDir)
	done := strings.TrimSpace(f.target.MustExec(t, "sh", "-c", "ls -d "+rpmexact.DefaultTransactionDir+"/*/outcome.json | tail -1"))
	outcome := f.target.MustExec(t, "cat", done)
	res, err = f.target.ExecEnv(context.Background(), []string{rpmexact.SuperviseEnv + "=" + filepath.Dir(done)}, bin)
	require.NoError(t, err)
	assert.Equal(t, 2, res.ExitCode)
	assert.Contains(t, res.Stderr, "has an outcome already")
	assert.Equal(t, outcome, f.target.MustExec(t, "cat", done))
}

// Records named in the future (a clock that stepped back since they were written): a new
// transaction still counts as the newest, is never pruned while it runs, and reports its
// outcome; the old records beyond what is kept go.
func TestTransactionRecordsSurviveAClockSteppedBack(t *testing.T) {
	t.Parallel()
	f := newFixture(t, true)
	f.target.Shell(t, `mkdir -p -m 0700 /var/lib/richt/transactions && cd /var/lib/richt/transactions &&
		for i in $(seq 1 120); do d=20990101T000000.000000000Z-$i; mkdir -m 0700 $d && touch $d/reported $d/outcome.json; done`)
	r := f.run(t, map[string]any{"name": "demo", "version": v1})
	require.False(t, r.Failed(), r.Msg())
	assert.True(t, r.Changed())
	assert.Equal(t, "demo-"+v1, f.installed(t))
	log := r.String("transaction_log")
	require.NotEmpty(t, log)
	f.target.MustExec(t, "test", "-s", log+"/outcome.json")
	// The kept records: the newest 20, this transaction the last of them.
	left := strings.Fields(f.target.MustExec(t, "ls", "/var/lib/richt/transactions"))
	assert.Contains(t, left, filepath.Base(log))
	assert.LessOrEqual(t, len(left), 21)
}

// The run that finds an unreported transaction marks it reported only when it returns
// its result: killed before that (here while its rpm query hangs), it leaves the report to
// the next run, which carries the earlier change on.
func TestAKilledRunLeavesTheEarlierReport(t *testing.T) {
	t.Parallel()
	f := faultFixture(t)
	r := f.run(t, map[string]any{"name": "slow", "version": "0:1.0-1.noarch", "timeout": "2m"})
	require.False(t, r.Failed(), r.Msg())
	r = f.run(t, map[string]any{"name": "slow", "version": "0:2.0-1.noarch", "timeout": "2s"})
	require.True(t, r.Failed(), "left running at the deadline")
	log := r.String("transaction_log")
	f.target.Shell(t, "until [ -e "+log+"/outcome.json ]; do sleep 0.2; done")

	args, err := json.Marshal(map[string]any{"name": "slow", "version": "0:2.0-1.noarch", "timeout": "1m"})
	require.NoError(t, err)
	require.NoError(t, f.target.WriteFile(context.Background(), "/var/tmp/report-args.json", args, 0o600))
	bin, err := f.target.InstallModule(context.Background(), f.module)
	require.NoError(t, err)
	// An rpm that hangs: the run has found the report (under the lock) when it queries.
	require.NoError(t, f.target.WriteFile(context.Background(), "/usr/local/bin/rpm", []byte("#!/bin/sh\ntouch /var/tmp/rpm-called\nexec sleep 61\n"), 0o755))
	out := f.target.Shell(t, fmt.Sprintf(`%s /var/tmp/report-args.json >/dev/null 2>&1 & p=$!
until [ -e /var/tmp/rpm-called ]; do sleep 0.1; done
kill -9 $p; wait $p; echo "module exit $?"; rm -f /usr/local/bin/rpm; pkill -f '^sleep 61$' || true`, bin))
	assert.Contains(t, out, "module exit 137")
	f.target.MustExec(t, "test", "!", "-e", log+"/reported")

	r = f.run(t, map[string]any{"name": "slow", "version": "0:2.0-1.noarch", "timeout": "1m"})
	require.False(t, r.Failed(), r.Msg())
	require.NotNil(t, r.Map("earlier_transaction"), "the killed run did not take the report with it")
	assert.Equal(t, "succeeded", r.Map("earlier_transaction")["outcome"])
	assert.True(t, r.Changed())
	f.target.MustExec(t, "test", "-e", log+"/reported")
}

// State that the module reads as facts is trusted only from where nobody else can write:
// the rpm query memo in a directory others can write is not an answer (a record swapped
// from another name would skip a transaction), a planted record of the package-manager
// check vouches for nothing, and a transactions directory others can write is refused.
func TestStateOthersCanWriteIsNotTrusted(t *testing.T) {
	t.Parallel()
	f := newFixture(t, true)
	converged := map[string]any{"name": "demo", "version": v1}
	r := f.run(t, converged)
	require.False(t, r.Failed(), r.Msg())
	time.Sleep(rpmexact.Settle + 200*time.Millisecond)
	r = f.run(t, converged)
	require.False(t, r.Failed(), r.Msg())
	r = f.run(t, converged)
	require.Equal(t, "memo", r.String("observed"), "remembered while its directory is root's")

	f.target.MustExec(t, "chmod", "0777", "/var/cache/richt/rpm-query")
	r = f.run(t, converged)
	require.False(t, r.Failed(), r.Msg())
	assert.Equal(t, "rpm-query", r.String("observed"), "a directory others can write holds no answers")
	f.target.MustExec(t, "chmod", "0755", "/var/cache/richt/rpm-query")
	f.target.MustExec(t, "chmod", "0666", "/var/cache/richt/rpm-query/demo.json")
	r = f.run(t, converged)
	assert.Equal(t, "rpm-query", r.String("observed"), "nor a record others can write")

	f.target.MustExec(t, "chmod", "0777", "/var/lib/richt/transactions")
	r = f.run(t, map[string]any{"name": "demo", "version": v2})
	assert.True(t, r.Failed())
	assert.Contains(t, r.Msg(), "/var/lib/richt/transactions has mode 0777, writable by group or others")
	assert.Equal(t, "demo-"+v1, f.installed(t), "nothing ran")
}

// rpm_exact run from a oneshot unit (ansible-pull under a timer), the unit stopped while
// the package's %pre runs: DNF runs in a transient scope of its own, so the stop does not
// reach it; the transaction completes and the next run reports its outcome.
func TestStoppingTheCallersUnitDoesNotStopDNF(t *testing.T) {
	t.Parallel()
	f := faultFixture(t)
	bin := f.slowStart(t, "/var/tmp/pull-args.json", "5m")
	out := f.target.Shell(t, fmt.Sprintf(`systemd-run --unit=richt-pull --service-type=oneshot --no-block %s /var/tmp/pull-args.json
until pgrep -x dnf >/dev/null; do sleep 0.1; done
systemctl stop richt-pull.service; echo "stopped: $(systemctl is-active richt-pull.service)"
pgrep -x dnf >/dev/null && echo "dnf still running"`, bin))
	assert.Contains(t, out, "dnf still running", "stopping the caller's unit left DNF alone")
	f.target.Shell(t, "while pgrep -x dnf >/dev/null; do sleep 0.2; done")
	assert.Equal(t, "slow-2.0", f.rpmQ(t, "slow"), "the transaction completed")

	r := f.run(t, map[string]any{"name": "slow", "version": "0:2.0-1.noarch", "timeout": "1m"})
	require.False(t, r.Failed(), r.Msg())
	require.NotNil(t, r.Map("earlier_transaction"))
	assert.Equal(t, "succeeded", r.Map("earlier_transaction")["outcome"])
	assert.True(t, r.Changed(), "the stopped run's change, reported here")
	r = f.run(t, map[string]any{"name": "slow", "version": "0:1.0-1.noarch", "timeout": "1m"})
	require.False(t, r.Failed(), r.Msg())
	assert.Contains(t, r.String("transaction_scope"), "richt-rpm-transaction-", "a transaction says which scope it ran in")
}

// Stopping the transaction's own scope (an administrator, a shutdown) stops DNF; the
// supervisor, stopped too, stays to see DNF end and writes an outcome that says so, which
// the next run reports: never "unknown", never lost.
func TestStoppingTheTransactionsScopeLeavesAnOutcome(t *testing.T) {
	t.Parallel()
	f := faultFixture(t)
	bin := f.slowStart(t, "/var/tmp/stop-args.json", "5m")
	f.target.Shell(t, fmt.Sprintf(`%s /var/tmp/stop-args.json >/var/tmp/stop-out 2>&1 &
until pgrep -x dnf >/dev/null; do sleep 0.1; done
systemctl stop 'richt-rpm-transaction-*.scope'
while pgrep -x dnf >/dev/null; do sleep 0.2; done; wait`, bin))
	first := f.target.MustExec(t, "cat", "/var/tmp/stop-out")
	assert.NotContains(t, first, "without a readable outcome", "the supervisor wrote its outcome")

	r := f.run(t, map[string]any{"name": "slow", "version": "0:2.0-1.noarch", "timeout": "2m"})
	require.False(t, r.Failed(), r.Msg())
	assert.Equal(t, "slow-2.0", f.rpmQ(t, "slow"), "exactly one build, the pin")
	if e := r.Map("earlier_transaction"); e != nil {
		assert.NotContains(t, e["outcome"], "unknown")
	}
}

// A restart of the host while DNF runs (a clean reboot: systemd stops the transaction's
// scope; a power loss: everything ends at once) leaves the package database as DNF left it,
// and the next run reports the interrupted transaction and converges from what rpm says.
func TestARebootDuringATransaction(t *testing.T) {
	t.Parallel()
	for _, hard := range []bool{false, true} {
		name := map[bool]string{false: "clean reboot", true: "power loss"}[hard]
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			f := faultFixture(t)
			bin := f.slowStart(t, "/var/tmp/reboot-args.json", "5m")
			f.target.Shell(t, fmt.Sprintf(`systemd-run --quiet --unit=reboot-caller --service-type=oneshot --no-block %s /var/tmp/reboot-args.json
until pgrep -x dnf >/dev/null; do sleep 0.1; done; sleep 1`, bin))
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()
			require.NoError(t, f.target.Reboot(ctx, hard, 20*time.Second))
			assert.Equal(t, "slow-1.0", f.rpmQ(t, "slow"), "the restart came during %pre: nothing moved")

			r := f.run(t, map[string]any{"name": "slow", "version": "0:2.0-1.noarch", "timeout": "2m"})
			require.False(t, r.Failed(), r.Msg())
			assert.True(t, r.Changed())
			assert.Equal(t, "slow-2.0", f.rpmQ(t, "slow"), "exactly one build, the pin")
			e := r.Map("earlier_transaction")
			require.NotNil(t, e, "the interrupted transaction is reported: %v", r)
			if !hard {
				assert.NotContains(t, e["outcome"], "unknown", "the supervisor saw the stop and wrote its outcome")
			}
			r = f.run(t, map[string]any{"name": "slow", "version": "0:2.0-1.noarch"})
			require.False(t, r.Failed(), r.Msg())
			assert.False(t, r.Changed())
			assert.Nil(t, r.Map("earlier_transaction"), "reported once")
		})
	}
}

// gatedRPM puts an rpm first in PATH for a module run whose every call passes through, but
// whose listing of every installed package (the supervisor's snapshot before DNF, taken
// while DNF's interpreter waits at its gate: pkg/rpmexact/launcher.go) does what fault
// says instead. The remembered listing is dropped so that the snapshot lists.
func (f *fixture) gatedRPM(t *testing.T, fault string) string {
	t.Helper()
	wrapper := "#!/bin/sh\ncase \" $* \" in *\" -qa \"*) " + fault + " ;; esac\nexec /usr/bin/rpm \"$@\"\n"
	require.NoError(t, f.target.WriteFile(context.Background(), "/var/tmp/gate-bin/rpm", []byte(wrapper), 0o755))
	f.target.MustExec(t, "rm", "-f", rpmexact.DefaultListingDir+"/listing.json")
	return "PATH=/var/tmp/gate-bin:$PATH"
}

// dnfLogSize is the size of DNF's log, which every DNF run writes to as it starts.
func (f *fixture) dnfLogSize(t *testing.T) string {
	return strings.TrimSpace(f.target.MustExec(t, "sh", "-c", "stat -c %s /var/log/dnf.log 2>/dev/null || echo none"))
}

// The supervisor SIGKILLed while DNF's interpreter waits at the gate (killed by the
// snapshot's own rpm, so always at that moment): the gate's pipe closes unopened, the
// launcher leaves without running DNF, nothing changes, the run fails naming the record,
// and the next run waits for the lock and upgrades.
func TestSupervisorKilledBeforeTheGateOpens(t *testing.T) {
	t.Parallel()
	f := faultFixture(t)
	bin := f.slowStart(t, "/var/tmp/gate-args.json", "5m")
	path := f.gatedRPM(t, "kill -9 $PPID; exit 1")
	logSize := f.dnfLogSize(t)
	out := f.target.Shell(t, fmt.Sprintf(`%s %s /var/tmp/gate-args.json; echo "module exit $?"
while pgrep -x dnf >/dev/null; do sleep 0.1; done`, path, bin))
	assert.Contains(t, out, "without a readable outcome", "its supervisor was killed")
	log := strings.TrimSpace(f.target.MustExec(t, "sh", "-c", "ls -d "+rpmexact.DefaultTransactionDir+"/* | tail -1"))
	assert.Contains(t, out, log, "the run names the record")
	f.target.MustExec(t, "test", "-x", log+"/bin/dnf") // DNF was to start through its launcher
	assert.Empty(t, f.target.MustExec(t, "cat", log+"/stdout"), "DNF printed nothing")
	assert.Equal(t, logSize, f.dnfLogSize(t), "DNF never started: its log is as it was")
	assert.Equal(t, "slow-1.0", f.rpmQ(t, "slow"), "nothing changed")

	r := f.run(t, map[string]any{"name": "slow", "version": "0:2.0-1.noarch", "timeout": "2m"})
	require.False(t, r.Failed(), r.Msg())
	assert.Nil(t, r.Map("earlier_transaction"), "the run whose supervisor was killed reported it")
	assert.Equal(t, "install-nevra", r.String("operation"), "its own transaction")
	assert.True(t, r.Changed())
	assert.Equal(t, "slow-2.0", f.rpmQ(t, "slow"))
	r = f.run(t, map[string]any{"name": "slow", "version": "0:2.0-1.noarch"})
	require.False(t, r.Failed(), r.Msg())
	assert.False(t, r.Changed())
	assert.Nil(t, r.Map("earlier_transaction"))
}

// A snapshot before DNF that fails closes the gate: the task fails saying the transaction
// was not started, with rpm's words; DNF never ran (its interpreter has left by the time the
// task returns), nothing changed, and the next run upgrades.
func TestASnapshotFailureStartsNothing(t *testing.T) {
	t.Parallel()
	f := faultFixture(t)
	bin := f.slowStart(t, "/var/tmp/snap-args.json", "5m")
	path := f.gatedRPM(t, "echo 'error: rpmdb: listing refused here' >&2; exit 1")
	logSize := f.dnfLogSize(t)
	out := f.target.Shell(t, fmt.Sprintf(`%s %s /var/tmp/snap-args.json; echo "module exit $?"
pgrep -x dnf >/dev/null && echo "dnf still there"; true`, path, bin))
	assert.Contains(t, out, "transaction not started")
	assert.Contains(t, out, "listing refused here")
	assert.Regexp(t, `"changed": ?false`, out)
	assert.NotContains(t, out, "dnf still there", "the supervisor waited for DNF's interpreter to leave")
	assert.Equal(t, logSize, f.dnfLogSize(t), "DNF never started")
	assert.Equal(t, "slow-1.0", f.rpmQ(t, "slow"))

	r := f.run(t, map[string]any{"name": "slow", "version": "0:2.0-1.noarch", "timeout": "2m"})
	require.False(t, r.Failed(), r.Msg())
	assert.True(t, r.Changed())
	assert.Nil(t, r.Map("earlier_transaction"), "the failed run reported its own")
	assert.Equal(t, "slow-2.0", f.rpmQ(t, "slow"))
}
