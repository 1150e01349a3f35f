package systemd_lifecycle_test

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/richt/services/testenv"
	"github.com/richt/services/testenv/fixtures"
)

// noStartLimit lifts systemd's start rate limit (5 starts in 10 s) for a unit these tests
// restart many times in a row.
func (e *env) noStartLimit(t *testing.T, unit string) {
	t.Helper()
	require.NoError(t, e.t.WriteFile(context.Background(), "/etc/systemd/system/"+unit+".d/no-start-limit.conf",
		[]byte("[Unit]\nStartLimitIntervalSec=0\n"), 0o644))
	e.t.MustExec(t, "systemctl", "daemon-reload")
}

// Six runs started together on one unit, each with a changed restart trigger: each run's
// change gets a restart of its own (runs on one unit wait for each other), none is merged
// into a restart another run had already begun.
func TestConcurrentRestartsAreSerialized(t *testing.T) {
	t.Parallel()
	forBackends(t, func(t *testing.T, e *env) {
		u := e.unit(t, "cc")
		e.noStartLimit(t, u)
		e.t.MustExec(t, "systemctl", "start", u)
		startsBefore := journalStarts(t, e.t, u)
		const runs = 6
		results := make([]testenv.Result, runs)
		var wg sync.WaitGroup
		for i := range runs {
			wg.Add(1)
			go func(i int) {
				defer wg.Done()
				results[i] = e.run(t, map[string]any{"unit": u, "restart_on": []any{changed}})
			}(i)
		}
		wg.Wait()
		for i, r := range results {
			ok(t, r)
			assert.Equal(t, []string{"restart"}, actions(r), "run %d", i)
		}
		assert.Equal(t, runs, journalStarts(t, e.t, u)-startsBefore, "one restart per run")
	})
}

// unitStarted is the journal's MESSAGE_ID of systemd's "Started UNIT" (SD_MESSAGE_UNIT_STARTED).
const unitStarted = "39f53479d3a045ac8e11786248231fbf"

// journalStarts counts the starts of unit that systemd logged, once the count stayed the
// same for a second (journald takes the messages in a moment after the jobs end; at most
// about 15 s). Six restarts in one second leave a daemon killed before it could record
// its own start (TestDaemon's count missed one under load); systemd's own message cannot
// be missed that way.
func journalStarts(t *testing.T, tg *testenv.Target, unit string) int {
	t.Helper()
	count := func() int {
		out := tg.MustExec(t, "/bin/sh", "-c", "journalctl --no-pager -o cat -u \"$1\" MESSAGE_ID="+unitStarted+" | wc -l", "starts", unit)
		n, err := strconv.Atoi(strings.TrimSpace(out))
		require.NoError(t, err, "journalctl | wc -l printed %q", out)
		return n
	}
	last := count()
	for range 15 {
		time.Sleep(time.Second)
		n := count()
		if n == last {
			break
		}
		last = n
	}
	return last
}

// A run killed between a changed trigger and the end of its restart loses nothing: the
// next run, without any trigger, restarts the unit, or reports that the restart the
// killed run had sent already happened. Either way exactly one restart follows the kill.
func TestKilledBetweenTriggerAndRestart(t *testing.T) {
	t.Parallel()
	forBackends(t, func(t *testing.T, e *env) {
		// A slow start widens the window in which a sent restart is still under way.
		u := e.unit(t, "kr", "ExecStartPre=/bin/sleep 0.5")
		e.noStartLimit(t, u)
		e.t.MustExec(t, "systemctl", "start", u)
		// Installs the binary in the target and writes the args file the loop runs with.
		ok(t, e.run(t, map[string]any{"unit": u}))
		bin, err := e.t.InstallModule(context.Background(), e.module)
		require.NoError(t, err)
		args := `{"unit": "` + u + `", "timeout": "30s", "restart_on": [{"changed": true}]}`
		require.NoError(t, e.t.WriteFile(context.Background(), "/var/tmp/kr-args.json", []byte(args), 0o600))
		pending := "/var/lib/richt/pending/" + u + ".json"
		served, restarted := 0, 0
		for i := range 6 {
			startsBefore, _ := fixtures.Events(t, e.t, "kr")
			// Kill the module the moment its pending reaction is on disk, sometimes a
			// little later (after it sent the restart).
			e.t.Shell(t, fmt.Sprintf(`RICHT_SYSTEMD_BACKEND=%s %s /var/tmp/kr-args.json >/dev/null & p=$!
while [ ! -e %s ]; do :; done; sleep 0.0%d; kill -9 $p; wait $p || true`, e.backend, bin, pending, i*3))
			r := e.run(t, map[string]any{"unit": u, "restart_on": []any{unchanged}})
			ok(t, r)
			assert.Contains(t, r.String("pending_from_earlier_run"), "restart due since", "round %d", i)
			if strings.Contains(r.String("pending_from_earlier_run"), "already served") {
				served++
			} else {
				restarted++
			}
			e.t.MustExec(t, "test", "!", "-e", pending)
			starts, _ := fixtures.Events(t, e.t, "kr")
			assert.Equal(t, 1, starts-startsBefore, "round %d: exactly one restart after the kill (%v)", i, actions(r))
		}
		t.Logf("%s: after 6 kills the next run restarted %d times and found the sent restart done %d times", e.backend, restarted, served)
	})
}

// A unit's lock held too long: the run fails on its deadline naming the holder.
func TestUnitLockHolderNamed(t *testing.T) {
	t.Parallel()
	e := newEnv(t, "dbus")
	u := e.unit(t, "lk")
	lockFile := "/run/richt/lock/unit-" + u + ".lock"
	// The holder keeps the lock until the test lets it go, however long the machine takes
	// to begin the run (a holder that slept 4 s was gone before a run on a loaded machine
	// got to the lock). flock -o keeps the lock in flock itself, so killing it frees it.
	e.t.Shell(t, fmt.Sprintf(`mkdir -p -m 0700 /run/richt/lock; sh -c 'echo $$ > %[1]s; exec flock -o %[1]s sleep 600' >/dev/null 2>&1 &
while ! grep -q . %[1]s 2>/dev/null; do :; done`, lockFile))
	holder := strings.TrimSpace(e.t.MustExec(t, "cat", lockFile))
	r := e.run(t, map[string]any{"unit": u, "timeout": "1s"})
	require.True(t, r.Failed())
	assert.Contains(t, r.Msg(), "another run for "+u+" did not finish within the timeout of 1s")
	assert.Regexp(t, `held by another run \(PID [0-9]+: flock .*sleep 600\)`, r.Msg())
	assert.Empty(t, actions(r))
	// Once the holder is gone, the same run goes through.
	e.t.MustExec(t, "kill", holder)
	ok(t, e.run(t, map[string]any{"unit": u}))
}

// Records that cannot be trusted are never read as "nothing due".
func TestUntrustedRecords(t *testing.T) {
	t.Parallel()
	e := newEnv(t, "dbus")
	u := e.unit(t, "rec")
	e.t.MustExec(t, "systemctl", "start", u)
	ok(t, e.run(t, map[string]any{"unit": u}))
	e.t.MustExec(t, "mkdir", "-p", "/var/lib/richt")

	t.Run("corrupt manager-sync record: the reload is carried out", func(t *testing.T) {
		e.t.Shell(t, "printf '{\"entries\": [' > /var/lib/richt/manager-sync-due")
		r := e.run(t, map[string]any{"unit": u})
		ok(t, r)
		assert.Equal(t, []string{"daemon-reload"}, actions(r))
		assert.Contains(t, strings.Join(r.Strings("daemon_reload_reasons"), "\n"), "/var/lib/richt/manager-sync-due could not be read")
		e.t.MustExec(t, "test", "!", "-e", "/var/lib/richt/manager-sync-due")
	})

	t.Run("unreadable manager-sync record: the reload is carried out", func(t *testing.T) {
		e.t.MustExec(t, "mkdir", "/var/lib/richt/manager-sync-due")
		defer e.t.MustExec(t, "rmdir", "/var/lib/richt/manager-sync-due")
		r := e.run(t, map[string]any{"unit": u})
		// The reload happens; the record (a directory) cannot be replaced, and that is said.
		assert.Equal(t, []string{"daemon-reload"}, actions(r))
		if r.Failed() {
			assert.Contains(t, r.Msg(), "/var/lib/richt/manager-sync-due")
		}
	})

	t.Run("corrupt pending reaction: one run fails naming the file, later runs warn", func(t *testing.T) {
		path := "/var/lib/richt/pending/" + u + ".json"
		e.t.Shell(t, "mkdir -p /var/lib/richt/pending && echo '{\"reaction\": \"rest' > "+path)
		r := e.run(t, map[string]any{"unit": u})
		require.True(t, r.Failed())
		assert.Contains(t, r.Msg(), path)
		assert.Contains(t, r.Msg(), "cannot be carried out as recorded")
		assert.Contains(t, r.Msg(), "not a record this version can read")
		assert.Empty(t, actions(r))
		r = e.run(t, map[string]any{"unit": u})
		ok(t, r)
		assert.Contains(t, strings.Join(r.Strings("warnings"), "\n"), path)
		assert.Empty(t, actions(r))
		e.t.MustExec(t, "rm", path)
	})

	t.Run("state directory writable by others: refused", func(t *testing.T) {
		e.t.MustExec(t, "chmod", "0777", "/var/lib/richt")
		defer e.t.MustExec(t, "chmod", "0755", "/var/lib/richt")
		r := e.run(t, map[string]any{"unit": u})
		require.True(t, r.Failed())
		assert.Contains(t, r.Msg(), "/var/lib/richt has mode 0777, writable by group or others")
	})

	t.Run("a changed, reloaded drop-in is not a package change", func(t *testing.T) {
		// The shape of a unit_override result (it has an operation key, as rpm_exact's
		// has): for a unit that is not found it must not cause a daemon-reload "after a
		// package change".
		dropIn := map[string]any{"changed": true, "operation": "update", "daemon_reload": "performed",
			"unit_files_changed": true, "package_changed": false, "path": "/etc/systemd/system/ghost.service.d/x.conf"}
		r := e.run(t, map[string]any{"unit": "ghost", "restart_on": []any{dropIn}})
		require.True(t, r.Failed())
		assert.Contains(t, r.Msg(), "not found")
		assert.Empty(t, actions(r), "no daemon-reload")
		// An rpm_exact result that changed a package does sync first.
		pkg := map[string]any{"changed": true, "operation": "install-nevra", "package_changed": true, "unit_files_changed": false, "daemon_reload": "none"}
		r = e.run(t, map[string]any{"unit": "ghost", "restart_on": []any{pkg}})
		require.True(t, r.Failed())
		assert.Equal(t, []string{"daemon-reload"}, actions(r))
		assert.Contains(t, strings.Join(r.Strings("daemon_reload_reasons"), "\n"), "unit not found after a package change")
	})

	t.Run("main_pid only after a start or restart", func(t *testing.T) {
		r := e.run(t, map[string]any{"unit": u, "state": "stopped"})
		ok(t, r)
		assert.Equal(t, []string{"stop"}, actions(r))
		assert.NotContains(t, r, "main_pid")
		r = e.run(t, map[string]any{"unit": u})
		ok(t, r)
		assert.Equal(t, []string{"start"}, actions(r))
		assert.NotZero(t, r["main_pid"])
	})

	t.Run("state directory owned by another user: refused", func(t *testing.T) {
		e.t.MustExec(t, "chown", "nobody", "/var/lib/richt")
		defer e.t.MustExec(t, "chown", "root", "/var/lib/richt")
		r := e.run(t, map[string]any{"unit": u})
		require.True(t, r.Failed())
		assert.Contains(t, r.Msg(), "/var/lib/richt is owned by uid")
	})
}
