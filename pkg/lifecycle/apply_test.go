package lifecycle

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/richt/services/pkg/ansible"
	"github.com/richt/services/pkg/durable"
	"github.com/richt/services/pkg/reaction"
	"github.com/richt/services/pkg/stamp"
	"github.com/richt/services/pkg/systemd"
)

// script is what a plan allows Apply to change, in order; every change the fakes below
// are asked for is checked against it as it happens.
type script struct {
	t    *testing.T
	want []string
	got  []string
}

func (s *script) call(name string) {
	s.t.Helper()
	i := len(s.got)
	s.got = append(s.got, name)
	if i >= len(s.want) || s.want[i] != name {
		s.t.Errorf("change %d %q is not the plan's: the plan names %v", i, name, s.want)
	}
}

// strictSystemd is fakeSystemd that fails the test on any change the script does not name
// (observations and the journal are free).
type strictSystemd struct {
	fakeSystemd
	s *script
}

func (f *strictSystemd) DaemonReload(ctx context.Context) error {
	f.s.call("daemon-reload")
	return f.fakeSystemd.DaemonReload(ctx)
}
func (f *strictSystemd) Job(ctx context.Context, action, unit string) error {
	f.s.call(action)
	return f.fakeSystemd.Job(ctx, action, unit)
}
func (f *strictSystemd) SetEnabled(ctx context.Context, unit string, en bool) error {
	f.s.call(string(enableStep(en)))
	return f.fakeSystemd.SetEnabled(ctx, unit, en)
}
func (f *strictSystemd) SetMasked(ctx context.Context, unit string, masked bool) error {
	f.s.call(map[bool]string{true: "mask", false: "unmask"}[masked])
	return f.fakeSystemd.SetMasked(ctx, unit, masked)
}
func (f *strictSystemd) EnableFiles(ctx context.Context, unit string, en bool) (bool, error) {
	f.s.call(string(enableStep(en)) + "-files")
	return f.fakeSystemd.EnableFiles(ctx, unit, en)
}

// strictStore is memStore under the same script.
type strictStore struct {
	memStore
	s *script
}

func (m *strictStore) ClearManagerSync(ctx context.Context, seen durable.Sync) error {
	m.s.call("clear-sync")
	return m.memStore.ClearManagerSync(ctx, seen)
}
func (m *strictStore) SetPending(u string, p durable.Pending) error {
	m.s.call("set-pending")
	return m.memStore.SetPending(u, p)
}
func (m *strictStore) ClearPending(u string) error {
	m.s.call("clear-pending")
	return m.memStore.ClearPending(u)
}

// changesOf is what a plan's names ask of systemd and the store, in order.
func changesOf(p Plan) []string {
	out := []string{}
	for _, s := range p.Prep.Steps {
		switch s {
		case StepRecordPending:
			out = append(out, "set-pending")
		case StepEnable, StepDisable:
			out = append(out, string(s)+"-files")
		case StepDaemonReload:
			out = append(out, "daemon-reload", "clear-sync")
		}
	}
	if p.Refusal != nil {
		return out
	}
	for _, n := range p.Decision.Names() {
		switch {
		case n == EntryStampPending:
			out = append(out, "set-pending")
		case n == EntryClearPending:
			out = append(out, "clear-pending")
		case n == EntryProbe || strings.HasPrefix(n, EntrySettle):
		default:
			out = append(out, n)
		}
	}
	return out
}

// rowState turns a row of Decide's table into what Plan observes: the unit, the triggers,
// the pending record and the unit's files. skip says why a row's facts cannot be observed.
func rowState(t *testing.T, root string, c decideRow) (req Request, unit systemd.Props, pending *durable.Pending, skip string) {
	w := c.w
	w.Unit = "demo.service"
	u := c.f.Unit
	u.ID = "demo.service"
	var trig reaction.Triggers
	changed := reaction.Trigger{Ref: "restart_on[0]", Changed: true}
	switch {
	case c.f.Served:
		pending = &durable.Pending{Reaction: "restart", At: testRecorded}
		u.ActiveEnterMono = 2_000
	case c.f.Pending:
		pending = &durable.Pending{Reaction: string(c.f.Due), At: testRecorded}
	case c.f.Due == reaction.Restart:
		trig.Restart = []reaction.Trigger{changed}
	}
	if c.f.RestartServed {
		placed := testRecorded
		trig.Restart = []reaction.Trigger{{Ref: "restart_on[0]", Changed: true, FilesPlaced: &placed}}
		u.ActiveEnterMono = 2_000
	}
	if c.f.Due == reaction.Reload && !c.f.Pending {
		trig.Reload = []reaction.Trigger{{Ref: "reload_on[0]", Changed: true}}
	}
	if w.ReloadOn {
		if c.f.Capability == nil {
			return req, u, nil, "the module always reads the reload capability"
		}
		body := "[Service]\nExecStart=/bin/true\n"
		if c.f.Capability.Capable {
			body += "ExecReload=/bin/true\n"
		}
		dir := filepath.Join(root, "etc/systemd/system")
		require.NoError(t, os.MkdirAll(dir, 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(dir, "demo.service"), []byte(body), 0o644))
		u.FragmentPath, u.CanReload = "/etc/systemd/system/demo.service", c.f.Capability.Capable
	}
	return Request{Want: w, Triggers: trig, Limit: 5e9}, u, pending, ""
}

// world is the state a plan is made in: the unit as the manager shows it, its pending
// record, the manager-sync record, and what the fake systemd does beyond that (files on
// disk that the manager's cache does not show yet, the state an unmask leaves).
type world struct {
	req     Request
	unit    systemd.Props
	pending *durable.Pending
	root    string
	syncDue bool
	sd      func(*fakeSystemd)
	err     string
}

// planEqualsApplied runs a world through check mode and through a real run: check mode's
// plan and actions are the real run's, Plan changes nothing, and Apply asks systemd and
// the store for exactly the plan's changes, in its order.
func planEqualsApplied(t *testing.T, w world) (checkRes, res *Result, warnings []string) {
	t.Helper()
	req := w.req
	setup := func(s *script) Deps {
		sd := &strictSystemd{fakeSystemd: fakeSystemd{p: w.unit}, s: s}
		if w.sd != nil {
			w.sd(&sd.fakeSystemd)
		}
		st := &strictStore{memStore: memStore{syncDue: w.syncDue, pending: map[string]*durable.Pending{}}, s: s}
		if w.pending != nil {
			rec := *w.pending
			st.pending[req.Want.Unit] = &rec
		}
		d := testDeps(nil, nil)
		d.Systemd, d.Store, d.Root = sd, st, w.root
		d.Now = func() (stamp.Stamp, error) { return testNow, nil }
		return d
	}
	noWarn := func(string, ...any) {}

	// Check mode: Plan only, and Plan changes nothing.
	none := &script{t: t}
	d := setup(none)
	checked, err := d.Plan(context.Background(), req)
	require.NoError(t, err)
	checkRes = newResult(req.Want.Unit)
	Describe(checked, checkRes)
	Predict(checked, checkRes, noWarn)
	assert.Empty(t, none.got, "Plan changes nothing")

	// The real run from the same state.
	s := &script{t: t, got: []string{}}
	d = setup(s)
	p, err := d.Plan(context.Background(), req)
	require.NoError(t, err)
	assert.Equal(t, checked.Names(), p.Names(), "check mode's plan is the applied plan")
	s.want = changesOf(p)
	res = newResult(req.Want.Unit)
	Describe(p, res)
	err = d.Apply(context.Background(), p, res, func(format string, args ...any) {
		warnings = append(warnings, fmt.Sprintf(format, args...))
	})
	assert.Equal(t, s.want, s.got, "Apply carries out exactly the plan's changes")
	assert.Equal(t, checkRes.Plan, res.Plan)
	assert.Equal(t, checkRes.Actions, res.Actions, "check mode's actions are the real run's")
	if w.err != "" {
		require.Error(t, err)
		assert.Contains(t, err.Error(), w.err)
		return checkRes, res, warnings
	}
	require.NoError(t, err)
	assert.Equal(t, checkRes.Reaction, res.Reaction)
	return checkRes, res, warnings
}

// For every row of Decide's table: check mode's plan is the plan a real run applies, and
// Apply asks systemd and the store for exactly the plan's changes, in its order.
func TestPlanEqualsApplied(t *testing.T) {
	for _, c := range decideRows() {
		t.Run(c.name, func(t *testing.T) {
			root := t.TempDir()
			req, unit, pending, skip := rowState(t, root, c)
			if skip != "" {
				t.Skip(skip)
			}
			_, _, _ = planEqualsApplied(t, world{req: req, unit: unit, pending: pending, root: root, err: c.err})
		})
	}
}

// The facts a plan cannot take from the manager's view before a step: the boot state after
// a sync (on disk, where the manager's cache may be older), and after an unmask. Check
// mode's plan and actions are still the real run's, and Apply carries out exactly the
// plan's steps, where the unit ends as asked.
func TestPlanEqualsAppliedAcrossSyncAndUnmask(t *testing.T) {
	yes, no := true, false
	running, stopped := unitIn("loaded", "active", "enabled"), unitIn("loaded", "inactive", "disabled")
	staleEnabled := unitIn("loaded", "inactive", "enabled")
	masked := unitIn("masked", "inactive", "masked")
	notFound := unitIn("not-found", "inactive", "")
	pkg := reaction.Triggers{Restart: []reaction.Trigger{{Ref: "restart_on[0]", Changed: true, PackageChanged: true, PackageUnsynced: true}}}
	cases := []struct {
		name    string
		w       Want
		trig    reaction.Triggers
		unit    systemd.Props
		syncDue bool
		sd      func(*fakeSystemd)
		actions []string
		enabled string // the unit file state the run leaves
		warn    string
	}{
		{name: "sync: the files say disabled, the manager's cache enabled: enable", w: Want{Running: true, Enabled: &yes}, unit: staleEnabled, syncDue: true,
			sd: func(f *fakeSystemd) { f.disk = "disabled" }, actions: []string{"enable", "daemon-reload", "start"}, enabled: "enabled"},
		{name: "sync: the files say enabled, the manager's cache disabled: no enable", w: Want{Running: true, Enabled: &yes}, unit: stopped, syncDue: true,
			sd: func(f *fakeSystemd) { f.disk = "enabled" }, actions: []string{"daemon-reload", "start"}, enabled: "enabled"},
		{name: "sync: the files say disabled, the manager's cache enabled: no disable", w: Want{Running: true, Enabled: &no}, unit: running, syncDue: true,
			sd: func(f *fakeSystemd) { f.disk = "disabled" }, actions: []string{"daemon-reload"}, enabled: "disabled"},
		{name: "sync: the files say static: a warning, no enable", w: Want{Running: true, Enabled: &yes}, unit: stopped, syncDue: true,
			sd: func(f *fakeSystemd) { f.disk = "static" }, actions: []string{"daemon-reload", "start"}, enabled: "static"},
		{name: "package change: the unit it installed is enabled by its preset: no enable", w: Want{Running: true, Enabled: &yes}, trig: pkg, unit: notFound,
			sd: func(f *fakeSystemd) { f.disk, f.loadOnReload = "enabled", true }, actions: []string{"daemon-reload", "start"}, enabled: "enabled"},
		{name: "package change: the unit it installed is disabled: enabled ahead of the sync", w: Want{Running: true, Enabled: &yes}, trig: pkg, unit: notFound,
			sd: func(f *fakeSystemd) { f.disk, f.loadOnReload = "disabled", true }, actions: []string{"enable", "daemon-reload", "start"}, enabled: "enabled"},
		{name: "unmask: disabled after it, enabled wanted", w: Want{Running: true, Masked: &no, Enabled: &yes}, unit: masked,
			actions: []string{"unmask", "enable", "start"}, enabled: "enabled"},
		{name: "unmask: enabled after it already: the plan's enable is carried out", w: Want{Running: true, Masked: &no, Enabled: &yes}, unit: masked,
			sd: func(f *fakeSystemd) { f.unmasked = "enabled" }, actions: []string{"unmask", "enable", "start"}, enabled: "enabled"},
		{name: "unmask: disabled after it already: the plan's disable is carried out", w: Want{Masked: &no, Enabled: &no}, unit: masked,
			actions: []string{"unmask", "disable"}, enabled: "disabled"},
		{name: "unmask: static after it: the enable changes nothing and warns", w: Want{Running: true, Masked: &no, Enabled: &yes}, unit: masked,
			sd: func(f *fakeSystemd) { f.unmasked = "static" }, actions: []string{"unmask", "enable", "start"}, enabled: "static", warn: "not observable"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			c.w.Unit = "demo.service"
			var fake *fakeSystemd
			sd := func(f *fakeSystemd) {
				if c.sd != nil {
					c.sd(f)
				}
				fake = f
			}
			checkRes, res, warnings := planEqualsApplied(t, world{req: Request{Want: c.w, Triggers: c.trig, Limit: 5e9}, unit: c.unit, syncDue: c.syncDue, sd: sd})
			assert.Equal(t, c.actions, res.Actions)
			assert.Equal(t, c.actions, checkRes.Actions)
			assert.Equal(t, c.enabled, fake.p.UnitFileState, "the boot state the run leaves")
			if c.warn != "" {
				assert.Contains(t, fmt.Sprint(warnings), c.warn)
			}
		})
	}
}

// A unit whose files cannot be read for its reload capability fails the task, but only
// after the due reaction is on disk: its trigger will not report the change again.
func TestPendingRecordedBeforeAnUnreadableUnitFile(t *testing.T) {
	unit := props("active", "enabled")
	unit.FragmentPath = "/etc/systemd/system/demo.service" // not under the test's root
	sd := &fakeSystemd{p: unit}
	st := &memStore{pending: map[string]*durable.Pending{}}
	d := testDeps(sd, st)
	d.Root = t.TempDir()
	args := `{"unit": "demo", "restart_on": [{"changed": true}], "reload_on": [{"changed": false}]}`
	out := ansible.Execute(context.Background(), Spec(), []string{"-"}, strings.NewReader(args), Handler(d))
	var res map[string]any
	require.NoError(t, json.Unmarshal(out, &res))
	assert.Equal(t, true, res["failed"])
	assert.Contains(t, res["msg"], "reload capability of demo.service")
	require.NotNil(t, st.pending["demo.service"], "the restart stays due")
	assert.Equal(t, "restart", st.pending["demo.service"].Reaction)
	assert.Equal(t, []any{"record-pending"}, res["plan"])
	assert.Empty(t, nonShow(sd.calls), "nothing was sent to systemd")
}
