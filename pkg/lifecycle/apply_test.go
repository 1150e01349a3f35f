package lifecycle

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

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
	case c.f.SyncPredicted:
		return req, u, nil, "Plan predicts the unit a sync loads; it never sets SyncPredicted"
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
			setup := func(s *script) (Deps, *strictSystemd) {
				sd := &strictSystemd{fakeSystemd: fakeSystemd{p: unit}, s: s}
				st := &strictStore{memStore: memStore{pending: map[string]*durable.Pending{}}, s: s}
				if pending != nil {
					rec := *pending
					st.pending["demo.service"] = &rec
				}
				d := testDeps(nil, nil)
				d.Systemd, d.Store, d.Root = sd, st, root
				d.Now = func() (stamp.Stamp, error) { return testNow, nil }
				return d, sd
			}
			noWarn := func(string, ...any) {}

			// Check mode: Plan only, and Plan changes nothing.
			none := &script{t: t}
			d, _ := setup(none)
			checked, err := d.Plan(context.Background(), req)
			require.NoError(t, err)
			checkRes := newResult(req.Want.Unit)
			Describe(checked, checkRes)
			Predict(checked, checkRes, noWarn)
			assert.Empty(t, none.got, "Plan changes nothing")

			// The real run from the same state.
			s := &script{t: t, got: []string{}}
			d, _ = setup(s)
			p, err := d.Plan(context.Background(), req)
			require.NoError(t, err)
			assert.Equal(t, checked.Names(), p.Names(), "check mode's plan is the applied plan")
			s.want = changesOf(p)
			res := newResult(req.Want.Unit)
			Describe(p, res)
			err = d.Apply(context.Background(), p, res, noWarn)
			assert.Equal(t, s.want, s.got, "Apply carries out exactly the plan's changes")
			assert.Equal(t, checkRes.Plan, res.Plan)
			if c.err != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), c.err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, checkRes.Actions, res.Actions, "check mode's actions are the real run's")
			assert.Equal(t, checkRes.Reaction, res.Reaction)
		})
	}
}
