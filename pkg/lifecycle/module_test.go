package lifecycle

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/richt/services/pkg/ansible"
	"github.com/richt/services/pkg/contract"
	"github.com/richt/services/pkg/durable"
	"github.com/richt/services/pkg/override"
	"github.com/richt/services/pkg/rpmexact"
	"github.com/richt/services/pkg/stamp"
)

// fakeSystemd is a small in-memory systemd: enough state to exercise the decision flow.
type fakeSystemd struct {
	p       Props
	calls   []string
	jobFail string // action that fails
}

func (f *fakeSystemd) Show(context.Context, string) (Props, error) {
	f.calls = append(f.calls, "show")
	return f.p, nil
}
func (f *fakeSystemd) DaemonReload(context.Context) error {
	f.calls = append(f.calls, "daemon-reload")
	f.p.NeedDaemonReload = false
	return nil
}
func (f *fakeSystemd) Job(_ context.Context, action, _ string) error {
	f.calls = append(f.calls, action)
	if action == f.jobFail {
		f.p.ActiveState, f.p.SubState = "failed", "failed"
		return nil
	}
	switch action {
	case "start", "restart", "reload":
		f.p.ActiveState, f.p.SubState = "active", "running"
	case "stop":
		f.p.ActiveState, f.p.SubState = "inactive", "dead"
	}
	return nil
}
func (f *fakeSystemd) SetEnabled(_ context.Context, _ string, en bool) error {
	f.calls = append(f.calls, map[bool]string{true: "enable", false: "disable"}[en])
	f.p.UnitFileState = map[bool]string{true: "enabled", false: "disabled"}[en]
	return nil
}
func (f *fakeSystemd) Journal(context.Context, string, int) []string { return []string{"journal line"} }

type memStore struct {
	syncDue bool
	pending map[string]*durable.Pending
}

func (m *memStore) ManagerSync() (durable.Sync, error) {
	if !m.syncDue {
		return durable.Sync{}, nil
	}
	return durable.Sync{Entries: []durable.SyncEntry{{ID: "1", Reason: "test"}}}, nil
}
func (m *memStore) ClearManagerSync(context.Context, durable.Sync) error {
	m.syncDue = false
	return nil
}
func (m *memStore) GetPending(u string) (*durable.Pending, error) {
	return m.pending[u], nil
}
func (m *memStore) SetPending(u string, p durable.Pending) error { m.pending[u] = &p; return nil }
func (m *memStore) ClearPending(u string) error                  { delete(m.pending, u); return nil }

func props(active, fileState string) Props {
	sub := map[string]string{"active": "running", "inactive": "dead"}[active]
	return Props{ID: "demo.service", LoadState: "loaded", ActiveState: active, SubState: sub, UnitFileState: fileState, FragmentPath: ""}
}

func runModule(t *testing.T, sd *fakeSystemd, st *memStore, args map[string]any) map[string]any {
	t.Helper()
	data, _ := json.Marshal(args)
	out := ansible.Execute(context.Background(), Spec(), []string{"-"}, strings.NewReader(string(data)), Handler(Deps{Systemd: sd, Store: st, Now: func() (stamp.Stamp, error) { return testNow, nil }}))
	var res map[string]any
	require.NoError(t, json.Unmarshal(out, &res))
	return res
}

// testNow is systemd's clock in the fake: boot b1, 5 s after boot; pending records are
// stamped at 1 ms.
var (
	testNow      = stamp.Stamp{BootID: "b1", Mono: 5_000_000}
	testRecorded = stamp.Stamp{BootID: "b1", Mono: 1_000}
)

func nonShow(calls []string) []string {
	var out []string
	for _, c := range calls {
		if c != "show" {
			out = append(out, c)
		}
	}
	return out
}

func TestFlow(t *testing.T) {
	ch := map[string]any{"changed": true}
	// Real results of the other modules, as the next task gets them.
	dropInReloaded := registered(t, override.Result{Changed: true, Unit: "demo.service", Path: "/etc/systemd/system/demo.service.d/10.conf", State: "present", Operation: override.OpUpdate,
		Change: contract.Change{UnitFilesChanged: true, DaemonReload: contract.ReloadPerformed, ChangedAt: "2025-03-04T05:06:07.000000000Z"}})
	packageChanged := registered(t, rpmexact.Result{Changed: true, Name: "demo", Before: []string{}, After: []string{"demo-0:1.0-1.noarch"}, Operation: rpmexact.OpInstallN, Command: []string{"dnf", "-y", "install-n", "--", "demo"},
		Change: contract.Change{PackageChanged: true, ChangedAt: "2025-03-04T05:06:07.000000000Z"}})
	notFound := Props{ID: "demo.service", LoadState: "not-found", ActiveState: "inactive", SubState: "dead"}
	cases := []struct {
		name    string
		p       Props
		syncDue bool
		pending string
		args    map[string]any
		calls   []string
		failed  string
		pendAft bool
		actions []string
		enter   uint64 // ActiveEnterTimestampMonotonic
	}{
		{name: "converged: one observation, nothing else", p: props("active", "enabled"), args: map[string]any{"unit": "demo", "enabled": true}},
		{name: "start", p: props("inactive", "disabled"), args: map[string]any{"unit": "demo"}, calls: []string{"start"}},
		{name: "enable then start", p: props("inactive", "disabled"), args: map[string]any{"unit": "demo", "enabled": true}, calls: []string{"enable", "start"}},
		{name: "restart trigger", p: props("active", "enabled"), args: map[string]any{"unit": "demo", "restart_on": []any{ch}}, calls: []string{"restart"}},
		{name: "trigger reporting a unit file change syncs first", p: props("active", "enabled"), args: map[string]any{"unit": "demo", "restart_on": []any{map[string]any{"changed": true, "daemon_reload": "needed"}}}, calls: []string{"daemon-reload", "restart"}},
		{name: "recorded sync", p: props("active", "enabled"), syncDue: true, args: map[string]any{"unit": "demo"}, calls: []string{"daemon-reload"}},
		{name: "pending restart without trigger", p: props("active", "enabled"), pending: "restart", args: map[string]any{"unit": "demo"}, calls: []string{"restart"}},
		{name: "pending restart served by a later activation: nothing more, cleared", p: props("active", "enabled"), enter: 2_000, pending: "restart", args: map[string]any{"unit": "demo"}},
		{name: "pending reload served by a later activation", p: props("active", "enabled"), enter: 2_000, pending: "reload", args: map[string]any{"unit": "demo"}},
		{name: "pending restart recorded after the last activation", p: props("active", "enabled"), enter: 500, pending: "restart", args: map[string]any{"unit": "demo"}, calls: []string{"restart"}},
		{name: "served pending, a new trigger still restarts", p: props("active", "enabled"), enter: 2_000, pending: "restart", args: map[string]any{"unit": "demo", "restart_on": []any{ch}}, calls: []string{"restart"}},
		{name: "pending with desired stopped: ignored, cleared", p: props("inactive", "enabled"), pending: "restart", args: map[string]any{"unit": "demo", "state": "stopped"}},
		{name: "failed restart stays pending", p: props("active", "enabled"), args: map[string]any{"unit": "demo", "restart_on": []any{ch}}, calls: []string{"restart"}, failed: "the restart stays due", pendAft: true},
		{name: "check mode acts on nothing", p: props("inactive", "disabled"), args: map[string]any{"unit": "demo", "enabled": true, "_ansible_check_mode": true}},
		// A changed drop-in has an `operation` too; it is no package change.
		{name: "not found, trigger a reloaded drop-in: no daemon-reload", p: notFound, args: map[string]any{"unit": "demo", "restart_on": []any{dropInReloaded}}, failed: "unit demo.service not found", actions: []string{}},
		{name: "not found after a package change: daemon-reload, still not found", p: notFound, args: map[string]any{"unit": "demo", "restart_on": []any{packageChanged}}, calls: []string{"daemon-reload"}, failed: "unit demo.service not found", actions: []string{"daemon-reload"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			sd := &fakeSystemd{p: c.p}
			sd.p.ActiveEnterMono = c.enter
			if c.failed != "" {
				sd.jobFail = "restart"
			}
			st := &memStore{syncDue: c.syncDue, pending: map[string]*durable.Pending{}}
			if c.pending != "" {
				st.pending["demo.service"] = &durable.Pending{Reaction: c.pending, At: testRecorded}
			}
			res := runModule(t, sd, st, c.args)
			if c.failed != "" {
				assert.Contains(t, res["msg"], c.failed)
			} else {
				assert.Nil(t, res["failed"], res["msg"])
			}
			assert.Equal(t, c.calls, nonShow(sd.calls))
			if c.actions != nil {
				assert.Equal(t, c.actions, strs(res["actions"]))
			}
			assert.Equal(t, c.pendAft, st.pending["demo.service"] != nil, "pending after the run")
		})
	}
}

// A converged run asks systemd one question (the D-Bus backend answers it with one call).
func TestConvergedRunIsOneObservation(t *testing.T) {
	sd := &fakeSystemd{p: props("active", "enabled")}
	res := runModule(t, sd, &memStore{pending: map[string]*durable.Pending{}}, map[string]any{"unit": "demo", "state": "running", "enabled": true})
	assert.Nil(t, res["failed"], res["msg"])
	assert.Equal(t, []string{"show"}, sd.calls)
}

// main_pid is the process a start or restart left running, and nothing after a stop or a
// reload (a reload keeps the old process; a stop leaves none).
func TestMainPIDOnlyAfterStartOrRestart(t *testing.T) {
	ch := map[string]any{"changed": true}
	reloadable := props("active", "enabled")
	reloadable.CanReload = true
	cases := []struct {
		name string
		p    Props
		args map[string]any
		pid  bool
	}{
		{"start", props("inactive", "enabled"), map[string]any{"unit": "demo"}, true},
		{"restart", props("active", "enabled"), map[string]any{"unit": "demo", "restart_on": []any{ch}}, true},
		{"stop", props("active", "enabled"), map[string]any{"unit": "demo", "state": "stopped"}, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			sd := &fakeSystemd{p: c.p}
			sd.p.MainPID = 42
			res := runModule(t, sd, &memStore{pending: map[string]*durable.Pending{}}, c.args)
			require.Nil(t, res["failed"], res["msg"])
			_, has := res["main_pid"]
			assert.Equal(t, c.pid, has)
		})
	}
}

// registered is a module's result as Ansible hands it to the next task: JSON, decoded.
func registered(t *testing.T, v any) map[string]any {
	t.Helper()
	data, err := json.Marshal(v)
	require.NoError(t, err)
	var m map[string]any
	require.NoError(t, json.Unmarshal(data, &m))
	return m
}

func strs(v any) []string {
	out := []string{}
	l, _ := v.([]any)
	for _, x := range l {
		s, _ := x.(string)
		out = append(out, s)
	}
	return out
}
