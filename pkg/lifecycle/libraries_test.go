package lifecycle

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/richt/services/pkg/ansible"
	"github.com/richt/services/pkg/durable"
	"github.com/richt/services/pkg/libmaps"
	"github.com/richt/services/pkg/systemd"
)

// groupSystemd is the fake systemd with a control group (systemd.GroupReader).
type groupSystemd struct {
	*fakeSystemd
	refuse bool
}

func (g groupSystemd) Group(context.Context, string) (systemd.Group, error) {
	return systemd.Group{ControlGroup: "/system.slice/demo.service", RefuseManualStop: g.refuse}, nil
}

// fakeLibraries reports the unit's stale mappings until the unit is restarted or started.
type fakeLibraries struct {
	sd            *fakeSystemd
	unit, manager libmaps.Report
	err           error
}

func (f fakeLibraries) Stale(context.Context, string) (libmaps.Report, libmaps.Report, error) {
	if f.sd.started > 0 {
		return libmaps.Report{}, f.manager, f.err
	}
	return f.unit, f.manager, f.err
}

var staleFix = libmaps.Report{Processes: []libmaps.Process{{PID: 41, Command: "fixd", Files: []libmaps.File{{Path: "/usr/lib/libfix.so.1", Package: "libfix"}}}}}

func runLibraries(t *testing.T, refuse bool, libs fakeLibraries, check bool, args map[string]any) (map[string]any, *fakeSystemd) {
	t.Helper()
	sd := &fakeSystemd{p: props("active", "enabled")}
	libs.sd = sd
	d := testDeps(sd, &memStore{pending: map[string]*durable.Pending{}})
	d.Systemd, d.Libraries = groupSystemd{fakeSystemd: sd, refuse: refuse}, libs
	if check {
		args["_ansible_check_mode"] = true
	}
	data, _ := json.Marshal(args)
	out := ansible.Execute(context.Background(), Spec(), []string{"-"}, strings.NewReader(string(data)), Handler(d))
	var res map[string]any
	require.NoError(t, json.Unmarshal(out, &res))
	return res, sd
}

// TestLibrariesTrigger: a process mapping a replaced file restarts a unit whose restart_on
// names libraries (check mode predicts the same, changing nothing), is only reported when
// it does not or when the unit refuses a manual stop (task ok, a warning naming the unit),
// and merges as any trigger: one restart for two restart triggers.
func TestLibrariesTrigger(t *testing.T) {
	cases := []struct {
		name      string
		refuse    bool
		unit      libmaps.Report
		restartOn []any
		reloadOn  []any
		actions   []any
		reaction  string
		warn      string
	}{
		{name: "wired", unit: staleFix, restartOn: []any{"libraries"}, actions: []any{"restart"}, reaction: LibrariesRestart},
		{name: "wired, with another restart", unit: staleFix, restartOn: []any{true, "libraries"}, actions: []any{"restart"}, reaction: LibrariesRestart},
		{name: "nothing stale", restartOn: []any{"libraries"}, actions: []any{}},
		{name: "not wired", unit: staleFix, restartOn: []any{false}, actions: []any{}, reaction: LibrariesNotWired, warn: "demo.service maps files replaced since its processes started: not restarted, since its restart_on does not name libraries: 41 (fixd): /usr/lib/libfix.so.1 (libfix)"},
		{name: "refuses manual stop", refuse: true, unit: staleFix, restartOn: []any{"libraries"}, actions: []any{}, reaction: LibrariesRefused, warn: "demo.service maps files replaced since its processes started and has RefuseManualStop=yes: not restarted"},
	}
	for _, c := range cases {
		for _, check := range []bool{true, false} {
			args := map[string]any{"unit": "demo", "restart_on": c.restartOn, "settle": "0s"}
			if c.reloadOn != nil {
				args["reload_on"] = c.reloadOn
			}
			res, sd := runLibraries(t, c.refuse, fakeLibraries{unit: c.unit}, check, args)
			assert.Equal(t, c.actions, res["actions"], "%s (check %v): %v", c.name, check, res)
			assert.Equal(t, len(c.actions) > 0, res["changed"], c.name)
			if check || len(c.actions) == 0 {
				assert.Equal(t, 0, sd.started, "%s: check mode or a report restarted nothing", c.name)
			}
			libs, _ := res["libraries"].(map[string]any)
			if c.reaction == "" {
				assert.Nil(t, libs, c.name)
			} else {
				require.NotNil(t, libs, c.name)
				assert.Equal(t, c.reaction, libs["reaction"], c.name)
				assert.Equal(t, float64(41), libs["processes"].([]any)[0].(map[string]any)["pid"], c.name)
			}
			warnings, _ := res["warnings"].([]any)
			if c.warn == "" {
				assert.Empty(t, warnings, c.name)
			} else {
				require.Len(t, warnings, 1, c.name)
				assert.Contains(t, warnings[0], c.warn, c.name)
			}
		}
	}
}

// TestLibrariesManagerReported: the manager's own stale files are reported and warned
// about, never acted on.
func TestLibrariesManagerReported(t *testing.T) {
	res, sd := runLibraries(t, false, fakeLibraries{manager: staleFix}, false, map[string]any{"unit": "demo", "restart_on": []any{"libraries"}})
	assert.Equal(t, []any{}, res["actions"])
	assert.Equal(t, 0, sd.started)
	libs := res["libraries"].(map[string]any)
	assert.NotNil(t, libs["manager"])
	assert.Equal(t, []any{}, libs["processes"])
	assert.Contains(t, res["warnings"].([]any)[0], "the service manager (PID 1) maps files replaced")
}

// TestLibrariesUnreadable: a scan that fails fails a run wired to libraries (it cannot
// decide) and is a warning for any other.
func TestLibrariesUnreadable(t *testing.T) {
	broken := fakeLibraries{err: errors.New("permission denied")}
	res, _ := runLibraries(t, false, broken, false, map[string]any{"unit": "demo", "restart_on": []any{"libraries"}})
	assert.Equal(t, true, res["failed"])
	assert.Contains(t, res["msg"], "restart_on names libraries, and the files demo.service's processes map could not be read: permission denied")
	res, _ = runLibraries(t, false, broken, false, map[string]any{"unit": "demo"})
	assert.NotEqual(t, true, res["failed"])
	assert.Contains(t, res["warnings"].([]any)[0], "could not read which files its processes map: permission denied")
}

// TestLibrariesOnlyRestartOn: reload_on and facts_from refuse libraries before anything.
func TestLibrariesOnlyRestartOn(t *testing.T) {
	for _, key := range []string{"reload_on", "facts_from"} {
		res, sd := runLibraries(t, false, fakeLibraries{unit: staleFix}, false, map[string]any{"unit": "demo", key: []any{"libraries"}})
		assert.Equal(t, true, res["failed"], key)
		assert.Contains(t, res["msg"], key+"[0]: libraries is a restart_on item only", key)
		assert.Empty(t, sd.calls, key)
	}
}
