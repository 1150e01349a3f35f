package lifecycle

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/richt/services/pkg/ansible"
	"github.com/richt/services/pkg/durable"
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

func (m *memStore) ManagerSyncDue() (bool, string, error) { return m.syncDue, "test", nil }
func (m *memStore) ClearManagerSync() error               { m.syncDue = false; return nil }
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
	out := ansible.Execute(context.Background(), Spec(), []string{"-"}, strings.NewReader(string(data)), Handler(Deps{Systemd: sd, Store: st}))
	var res map[string]any
	require.NoError(t, json.Unmarshal(out, &res))
	return res
}

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
	cases := []struct {
		name    string
		p       Props
		syncDue bool
		pending string
		args    map[string]any
		calls   []string
		failed  string
		pendAft bool
	}{
		{name: "converged: one observation, nothing else", p: props("active", "enabled"), args: map[string]any{"unit": "demo", "enabled": true}},
		{name: "start", p: props("inactive", "disabled"), args: map[string]any{"unit": "demo"}, calls: []string{"start"}},
		{name: "enable then start", p: props("inactive", "disabled"), args: map[string]any{"unit": "demo", "enabled": true}, calls: []string{"enable", "start"}},
		{name: "restart trigger", p: props("active", "enabled"), args: map[string]any{"unit": "demo", "restart_on": []any{ch}}, calls: []string{"restart"}},
		{name: "trigger reporting a unit file change syncs first", p: props("active", "enabled"), args: map[string]any{"unit": "demo", "restart_on": []any{map[string]any{"changed": true, "daemon_reload": "needed"}}}, calls: []string{"daemon-reload", "restart"}},
		{name: "recorded sync", p: props("active", "enabled"), syncDue: true, args: map[string]any{"unit": "demo"}, calls: []string{"daemon-reload"}},
		{name: "pending restart without trigger", p: props("active", "enabled"), pending: "restart", args: map[string]any{"unit": "demo"}, calls: []string{"restart"}},
		{name: "pending with desired stopped: ignored, cleared", p: props("inactive", "enabled"), pending: "restart", args: map[string]any{"unit": "demo", "state": "stopped"}},
		{name: "failed restart stays pending", p: props("active", "enabled"), args: map[string]any{"unit": "demo", "restart_on": []any{ch}}, calls: []string{"restart"}, failed: "the restart stays due", pendAft: true},
		{name: "check mode acts on nothing", p: props("inactive", "disabled"), args: map[string]any{"unit": "demo", "enabled": true, "_ansible_check_mode": true}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			sd := &fakeSystemd{p: c.p}
			if c.failed != "" {
				sd.jobFail = "restart"
			}
			st := &memStore{syncDue: c.syncDue, pending: map[string]*durable.Pending{}}
			if c.pending != "" {
				st.pending["demo.service"] = &durable.Pending{Reaction: c.pending}
			}
			res := runModule(t, sd, st, c.args)
			if c.failed != "" {
				assert.Contains(t, res["msg"], c.failed)
			} else {
				assert.Nil(t, res["failed"], res["msg"])
			}
			assert.Equal(t, c.calls, nonShow(sd.calls))
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
