package service_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/richt/services/testenv"
	"github.com/richt/services/testenv/fixtures"
)

// The units of the libraries service: fixd loads the fixture library with dlopen (python's
// ctypes), plain maps nothing of it, fixfork is a forking daemon whose master does not map
// it and whose worker child does (LD_PRELOAD), fixstuck maps it and refuses a manual stop.
var libraryUnits = map[string]string{
	"fixd.service":  "[Service]\nExecStart=/usr/bin/python3 -c \"import ctypes, time; ctypes.CDLL('" + fixtures.LibFixPath + "'); time.sleep(1e9)\"\n",
	"plain.service": "[Service]\nExecStart=/bin/sleep infinity\n",
	// $$! is the shell's $!: the master, which execs a sleep after starting its worker.
	"fixfork.service": "[Service]\nType=forking\nPIDFile=/run/fixfork.pid\nExecStart=/bin/sh -c '(LD_PRELOAD=" + fixtures.LibFixPath +
		" /bin/sleep infinity & exec /bin/sleep infinity) & echo $$! > /run/fixfork.pid'\n",
	"fixstuck.service": "[Unit]\nRefuseManualStop=yes\n\n[Service]\nExecStart=" + fixtures.MapsLibFix + "\n",
}

var libraryOrder = []string{"fixd.service", "plain.service", "fixfork.service", "fixstuck.service"}

// librariesService is the service with every process's restart_on set to restartOn.
func librariesService(restartOn []any) map[string]any {
	var units, procs []any
	for _, u := range libraryOrder {
		units = append(units, map[string]any{"unit": u, "content": libraryUnits[u]})
		procs = append(procs, map[string]any{"unit": u, "restart_on": restartOn, "timeout": testenv.ModuleTimeout()})
	}
	return map[string]any{"name": "libfix", "units": units, "processes": procs}
}

func libraryPIDs(t *testing.T, tg *testenv.Target) map[string]int {
	out := map[string]int{}
	for _, u := range libraryOrder {
		out[u] = mainPID(t, tg, u)
	}
	return out
}

// processActions are each process's actions by unit, and its libraries' reaction.
func processActions(t *testing.T, r testenv.Result) (actions, reactions map[string]string) {
	t.Helper()
	actions, reactions = map[string]string{}, map[string]string{}
	procs, _ := r["processes"].([]any)
	require.Len(t, procs, len(libraryOrder), "%v", r)
	for _, p := range procs {
		m := p.(map[string]any)
		unit := m["unit"].(string)
		actions[unit] = fmt.Sprint(m["actions"])
		if l, ok := m["libraries"].(map[string]any); ok {
			reactions[unit] = fmt.Sprint(l["reaction"])
		}
	}
	return actions, reactions
}

func setLibFix(t *testing.T, tg *testenv.Target, version string) {
	t.Helper()
	tg.Shell(t, "dnf -q -y install-nevra libfix-0:"+version+"-1.noarch")
}

// TestLibrariesRestartWhatMapsReplacedFiles is issue 44's end-to-end check: the library
// updated outside the service, check mode predicts the restart of the processes whose
// unit maps it (a dlopen, a forking daemon's worker) and changes nothing; the real run
// restarts each once and leaves the others' main processes alone; the next run is
// unchanged. A unit with RefuseManualStop=yes is reported, not restarted, and the task is
// ok. Not wired: no restart, a warning naming the unit.
func TestLibrariesRestartWhatMapsReplacedFiles(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	var pkgs []testenv.Package
	for _, v := range []string{"1.0", "2.0"} {
		p, err := fixtures.LibFix(v)
		require.NoError(t, err)
		pkgs = append(pkgs, p)
	}
	require.NoError(t, e.t.AddRepo(ctx, "libfix", testenv.Repo(t, pkgs...)))
	setLibFix(t, e.t, "1.0")

	wired := librariesService([]any{"libraries"})
	r := e.run(t, wired)
	require.False(t, r.Failed(), "%v", r)
	before := libraryPIDs(t, e.t)

	setLibFix(t, e.t, "2.0")
	want := map[string]string{"fixd.service": "[restart]", "plain.service": "[]", "fixfork.service": "[restart]", "fixstuck.service": "[]"}
	wantReactions := map[string]string{"fixd.service": "restart", "fixfork.service": "restart", "fixstuck.service": "reported: RefuseManualStop=yes"}

	check := e.run(t, with(wired, "_ansible_check_mode", true))
	require.False(t, check.Failed(), "%v", check)
	actions, reactions := processActions(t, check)
	assert.Equal(t, want, actions, "check mode predicts")
	assert.Equal(t, wantReactions, reactions)
	assert.True(t, check.Changed())
	assert.Equal(t, before, libraryPIDs(t, e.t), "check mode changed nothing")
	assert.Contains(t, strings.Join(check.Strings("warnings"), "\n"), "fixstuck.service maps files replaced since its processes started and has RefuseManualStop=yes")

	real := e.run(t, wired)
	require.False(t, real.Failed(), "%v", real)
	actions, reactions = processActions(t, real)
	assert.Equal(t, want, actions, "the real run does what check mode predicted")
	assert.Equal(t, wantReactions, reactions)
	after := libraryPIDs(t, e.t)
	assert.NotEqual(t, before["fixd.service"], after["fixd.service"], "fixd restarted")
	assert.NotEqual(t, before["fixfork.service"], after["fixfork.service"], "fixfork restarted for its worker")
	assert.Equal(t, before["plain.service"], after["plain.service"], "plain kept its process")
	assert.Equal(t, before["fixstuck.service"], after["fixstuck.service"], "fixstuck is never restarted")
	for _, p := range real["processes"].([]any) {
		m := p.(map[string]any)
		if m["unit"] == "fixd.service" {
			files := m["libraries"].(map[string]any)["processes"].([]any)[0].(map[string]any)["files"].([]any)
			assert.Contains(t, files, map[string]any{"path": fixtures.LibFixPath, "package": "libfix"})
		}
	}
	// fixd was started twice in all: by the first run, and restarted once by this one.
	starts := e.t.MustExec(t, "sh", "-c", "journalctl -q -u fixd.service -o cat | grep -c '^Started' || true")
	assert.Equal(t, "2", strings.TrimSpace(starts), "fixd's starts")

	again := e.run(t, wired)
	require.False(t, again.Failed(), "%v", again)
	assert.False(t, again.Changed(), "the next run is unchanged: %v", again)
	assert.Equal(t, after, libraryPIDs(t, e.t))

	// Not wired: the library moves again, nothing is restarted, the warning names the unit.
	setLibFix(t, e.t, "1.0")
	unwired := e.run(t, librariesService([]any{false}))
	require.False(t, unwired.Failed(), "%v", unwired)
	assert.False(t, unwired.Changed())
	assert.Equal(t, after, libraryPIDs(t, e.t))
	_, reactions = processActions(t, unwired)
	assert.Equal(t, "reported: restart_on does not name libraries", reactions["fixd.service"])
	assert.Contains(t, strings.Join(unwired.Strings("warnings"), "\n"), "fixd.service maps files replaced since its processes started: not restarted, since its restart_on does not name libraries")
}
