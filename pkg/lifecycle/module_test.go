package lifecycle

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/richt/services/pkg/ansible"
	"github.com/richt/services/pkg/contract"
	"github.com/richt/services/pkg/durable"
	"github.com/richt/services/pkg/health"
	"github.com/richt/services/pkg/override"
	"github.com/richt/services/pkg/rpmexact"
	"github.com/richt/services/pkg/stamp"
	"github.com/richt/services/pkg/systemd"
)

// fakeSystemd is a small in-memory systemd: enough state to exercise the decision flow.
type fakeSystemd struct {
	p       systemd.Props
	calls   []string
	jobFail string // action that fails
	// dieAfter: the unit fails on the Nth observation after a start or restart (a
	// process that exits a moment after it started).
	dieAfter int
	// reinvokeAfter: systemd restarts the unit by itself on the Nth observation after a
	// start (Restart=always behind a crashing process).
	reinvokeAfter int
	// reloadFails: daemon-reload fails; reloadRestarts: a reload job brings a new process.
	reloadFails, reloadRestarts bool
	shows                       int
	started                     int
	// disk is the unit's file state on disk when it is not the one the manager shows
	// (its UnitFileState is cached until a reload); "" when they agree. unmasked is the
	// file state an unmask leaves ("" for disabled). loadOnReload: a reload loads the
	// not-found unit, whose file is on disk (a package installed it).
	disk, unmasked string
	loadOnReload   bool
	// unitsLoaded is the manager's UnitsLoadTimestampMonotonic (0: never reloaded); a
	// daemon-reload sets it to the test's clock.
	unitsLoaded uint64
}

// UnitsLoaded implements systemd.LoadReader.
func (f *fakeSystemd) UnitsLoaded(context.Context) (uint64, error) { return f.unitsLoaded, nil }

// UnitFileState implements systemd.FileStater: the state on disk.
func (f *fakeSystemd) UnitFileState(context.Context, string) (string, error) {
	if f.disk != "" {
		return f.disk, nil
	}
	if f.p.LoadState == "not-found" {
		return "", systemd.ErrNoUnitFile
	}
	return f.p.UnitFileState, nil
}

// setFileState is an enable or disable: it changes the files on disk; a unit without
// enablement of its own (static, ...) keeps its state.
func (f *fakeSystemd) setFileState(en bool) (changed bool) {
	cur := f.p.UnitFileState
	if f.disk != "" {
		cur = f.disk
	}
	if unobservable[cur] {
		return false
	}
	state := map[bool]string{true: "enabled", false: "disabled"}[en]
	f.p.UnitFileState, f.disk = state, ""
	return cur != state
}

func (f *fakeSystemd) Show(context.Context, string) (systemd.Props, error) {
	f.calls = append(f.calls, "show")
	f.shows++
	if f.dieAfter > 0 && f.started > 0 && f.shows-f.started >= f.dieAfter {
		f.p.ActiveState, f.p.SubState = "failed", "failed"
	}
	if f.reinvokeAfter > 0 && f.started > 0 && f.shows-f.started == f.reinvokeAfter {
		f.p.InvocationID += "y"
	}
	return f.p, nil
}
func (f *fakeSystemd) SetMasked(_ context.Context, _ string, masked bool) error {
	f.calls = append(f.calls, map[bool]string{true: "mask", false: "unmask"}[masked])
	if masked {
		f.p.LoadState, f.p.UnitFileState = "masked", "masked"
	} else {
		f.p.LoadState, f.p.UnitFileState = "loaded", "disabled"
		if f.unmasked != "" {
			f.p.UnitFileState = f.unmasked
		}
	}
	return nil
}
func (f *fakeSystemd) DaemonReload(context.Context) error {
	f.calls = append(f.calls, "daemon-reload")
	if f.reloadFails {
		return errors.New("connection timed out")
	}
	f.p.NeedDaemonReload = false
	f.unitsLoaded = testNow.Mono
	if f.loadOnReload && f.p.LoadState == "not-found" {
		f.p.LoadState = "loaded"
		if f.p.UnitFileState == "" {
			f.p.UnitFileState = "disabled"
		}
	}
	if f.disk != "" {
		f.p.UnitFileState, f.disk = f.disk, ""
	}
	return nil
}
func (f *fakeSystemd) Job(_ context.Context, action, _ string) error {
	f.calls = append(f.calls, action)
	if action == f.jobFail {
		f.p.ActiveState, f.p.SubState = "failed", "failed"
		return nil
	}
	switch action {
	case "start", "restart":
		f.p.ActiveState, f.p.SubState = "active", "running"
		f.p.InvocationID += "x"
		f.started = f.shows
	case "reload":
		f.p.ActiveState, f.p.SubState = "active", "running"
		if f.reloadRestarts {
			f.p.InvocationID += "r"
		}
	case "stop":
		f.p.ActiveState, f.p.SubState = "inactive", "dead"
	}
	return nil
}
func (f *fakeSystemd) SetEnabled(_ context.Context, _ string, en bool) error {
	f.calls = append(f.calls, map[bool]string{true: "enable", false: "disable"}[en])
	f.setFileState(en)
	return nil
}
func (f *fakeSystemd) EnableFiles(_ context.Context, _ string, en bool) (bool, error) {
	f.calls = append(f.calls, map[bool]string{true: "enable-files", false: "disable-files"}[en])
	return f.setFileState(en), nil
}
func (f *fakeSystemd) Journal(context.Context, string, int) []string { return []string{"journal line"} }

type memStore struct {
	syncDue  bool
	pending  map[string]*durable.Pending
	reloaded map[string]durable.Reloaded
}

func (m *memStore) LastReload(u string) *durable.Reloaded {
	if r, ok := m.reloaded[u]; ok {
		return &r
	}
	return nil
}
func (m *memStore) SetReloaded(u string, r durable.Reloaded) error {
	if m.reloaded == nil {
		m.reloaded = map[string]durable.Reloaded{}
	}
	m.reloaded[u] = r
	return nil
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

func props(active, fileState string) systemd.Props {
	sub := map[string]string{"active": "running", "inactive": "dead"}[active]
	return systemd.Props{ID: "demo.service", LoadState: "loaded", ActiveState: active, SubState: sub, UnitFileState: fileState, FragmentPath: ""}
}

func runModule(t *testing.T, sd *fakeSystemd, st *memStore, args map[string]any) map[string]any {
	t.Helper()
	data, _ := json.Marshal(args)
	out := ansible.Execute(context.Background(), Spec(), []string{"-"}, strings.NewReader(string(data)), Handler(testDeps(sd, st)))
	var res map[string]any
	require.NoError(t, json.Unmarshal(out, &res))
	return res
}

// fakeClock never sleeps: each wait moves its time on by the wait.
type fakeClock struct{ now time.Time }

func (c *fakeClock) Now() time.Time { return c.now }
func (c *fakeClock) After(d time.Duration) <-chan time.Time {
	c.now = c.now.Add(d)
	ch := make(chan time.Time, 1)
	ch <- c.now
	return ch
}

// fakeProber answers from a script: the error of each attempt in turn (nil: healthy).
type fakeProber struct{ errs []error }

func (p *fakeProber) Wait(_ context.Context, _ health.Probe) (int, error) {
	for i, err := range p.errs {
		if err == nil {
			return i + 1, nil
		}
	}
	return len(p.errs), fmt.Errorf("last attempt: %w", p.errs[len(p.errs)-1])
}

// Check is one attempt: the script's next error, the last one once it is used up.
func (p *fakeProber) Check(context.Context, health.Probe) error {
	err := p.errs[0]
	if len(p.errs) > 1 {
		p.errs = p.errs[1:]
	}
	return err
}

var testProber = &fakeProber{errs: []error{nil}}

func testDeps(sd *fakeSystemd, st *memStore) Deps {
	return Deps{Systemd: sd, Store: st, Now: func() (stamp.Stamp, error) { return testNow, nil },
		Clock: &fakeClock{now: time.Unix(1000, 0)}, Prober: testProber}
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
	packageChanged := registered(t, rpmexact.Result{Report: rpmexact.Report{Changed: true, Change: contract.Change{PackageChanged: true, ChangedAt: "2025-03-04T05:06:07.000000000Z"}},
		Name: "demo", Before: []string{}, After: []string{"demo-0:1.0-1.noarch"}, Operation: rpmexact.OpInstallN, Command: []string{"dnf", "-y", "install-n", "--", "demo"}})
	notFound := systemd.Props{ID: "demo.service", LoadState: "not-found", ActiveState: "inactive", SubState: "dead"}
	cases := []struct {
		name    string
		p       systemd.Props
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
		// The enable goes first, so the sync's one reload serves both.
		{name: "sync and enable: one reload", p: props("inactive", "disabled"), syncDue: true, args: map[string]any{"unit": "demo", "enabled": true}, calls: []string{"enable-files", "daemon-reload", "start"}, actions: []string{"enable", "daemon-reload", "start"}},
		{name: "sync and disable: one reload", p: props("active", "enabled"), syncDue: true, args: map[string]any{"unit": "demo", "enabled": false}, calls: []string{"disable-files", "daemon-reload"}, actions: []string{"disable", "daemon-reload"}},
		{name: "sync, already enabled: no enable", p: props("inactive", "enabled"), syncDue: true, args: map[string]any{"unit": "demo", "enabled": true}, calls: []string{"daemon-reload", "start"}, actions: []string{"daemon-reload", "start"}},
		{name: "sync, a static unit: left to the plan", p: props("inactive", "static"), syncDue: true, args: map[string]any{"unit": "demo", "enabled": true}, calls: []string{"daemon-reload", "start"}},
		{name: "sync and enable with the mask named: in plan order", p: props("inactive", "disabled"), syncDue: true, args: map[string]any{"unit": "demo", "enabled": true, "masked": false}, calls: []string{"daemon-reload", "enable", "start"}},
		// Check mode reports what the real run ("sync and enable: one reload") does, in its order.
		{name: "sync and enable in check mode: nothing done", p: props("inactive", "disabled"), syncDue: true, args: map[string]any{"unit": "demo", "enabled": true, "_ansible_check_mode": true}, actions: []string{"enable", "daemon-reload", "start"}},
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
			if c.pending == "" {
				assert.NotContains(t, fmt.Sprint(res["triggers"]), "from an earlier run", "this run's own record is not an earlier run's")
			} else if c.enter < 1_000 {
				assert.Contains(t, fmt.Sprint(res["triggers"]), "pending "+c.pending+" from an earlier run")
			}
			assert.Equal(t, c.calls, nonShow(sd.calls))
			if c.actions != nil {
				assert.Equal(t, c.actions, strs(res["actions"]))
			}
			assert.Equal(t, c.pendAft, st.pending["demo.service"] != nil, "pending after the run")

			// The same case in check mode, from the same state: the same plan and the same
			// actions as the real run, nothing done. A failing job is the real run's only.
			if c.failed != "" || c.args["_ansible_check_mode"] == true {
				return
			}
			csd := &fakeSystemd{p: c.p}
			csd.p.ActiveEnterMono = c.enter
			cst := &memStore{syncDue: c.syncDue, pending: map[string]*durable.Pending{}}
			if c.pending != "" {
				cst.pending["demo.service"] = &durable.Pending{Reaction: c.pending, At: testRecorded}
			}
			args := map[string]any{"_ansible_check_mode": true}
			for k, v := range c.args {
				args[k] = v
			}
			check := runModule(t, csd, cst, args)
			assert.Nil(t, check["failed"], check["msg"])
			assert.Equal(t, res["plan"], check["plan"], "check mode's plan is the real run's")
			assert.Equal(t, res["actions"], check["actions"], "check mode's actions are the real run's")
			assert.Empty(t, nonShow(csd.calls), "check mode calls nothing that changes")
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
		p    systemd.Props
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

// The handler's flows over the plan, with a fake clock: nothing here sleeps.
func TestApplyFlows(t *testing.T) {
	masked := props("inactive", "masked")
	masked.LoadState = "masked"
	cases := []struct {
		name   string
		p      systemd.Props
		args   map[string]any
		sd     func(*fakeSystemd)
		prober *fakeProber
		calls  []string
		failed string
		check  func(t *testing.T, res map[string]any)
	}{
		{name: "mask a running unit: stop, then mask", p: props("active", "enabled"),
			args: map[string]any{"unit": "demo", "state": "stopped", "masked": true}, calls: []string{"stop", "mask"}},
		{name: "mask: idempotent", p: masked, args: map[string]any{"unit": "demo", "state": "stopped", "masked": true}},
		{name: "unmask, then enable and start (decided after the unmask)", p: masked,
			args: map[string]any{"unit": "demo", "masked": false, "enabled": true}, calls: []string{"unmask", "enable", "start"}},
		{name: "a unit dying after its start fails the settle", p: props("inactive", "enabled"),
			args: map[string]any{"unit": "demo", "settle": "3s", "timeout": "10s"}, sd: func(f *fakeSystemd) { f.dieAfter = 5 },
			calls: []string{"start"}, failed: "did not stay up after start"},
		{name: "a unit restarted by systemd while it settles fails", p: props("inactive", "enabled"),
			args: map[string]any{"unit": "demo", "settle": "1s"}, sd: func(f *fakeSystemd) { f.reinvokeAfter = 4 },
			calls: []string{"start"}, failed: "was started again while it settled"},
		{name: "unhealthy after a start: fails, names the probe, restarts nothing", p: props("inactive", "enabled"),
			args: map[string]any{"unit": "demo", "health": map[string]any{"tcp": "127.0.0.1:8080"}}, prober: &fakeProber{errs: []error{errors.New("connection refused"), errors.New("connection refused")}},
			calls: []string{"start"}, failed: "probe tcp 127.0.0.1:8080 failed after 2 attempt(s)",
			check: func(t *testing.T, res map[string]any) {
				assert.Contains(t, res["msg"], "this run's start was carried out; a failing probe does not restart anything")
				assert.NotContains(t, res["msg"], "nothing was restarted", "said next to the start this run did")
				assert.Contains(t, res["msg"], "journal line")
				assert.Equal(t, false, res["health"].(map[string]any)["healthy"])
			}},
		{name: "converged but unhealthy: fails without acting", p: props("active", "enabled"),
			args: map[string]any{"unit": "demo", "health": map[string]any{"http": "http://127.0.0.1:8080/"}}, prober: &fakeProber{errs: []error{errors.New("HTTP 503 Service Unavailable")}},
			failed: "503"},
		{name: "healthy on the third attempt", p: props("inactive", "enabled"),
			args: map[string]any{"unit": "demo", "health": map[string]any{"tcp": "127.0.0.1:8080"}}, prober: &fakeProber{errs: []error{errors.New("refused"), errors.New("refused"), nil}},
			calls: []string{"start"}, check: func(t *testing.T, res map[string]any) {
				assert.Equal(t, float64(3), res["health"].(map[string]any)["attempts"])
			}},
		{name: "check mode: a mask is reported, not done", p: props("active", "enabled"),
			args: map[string]any{"unit": "demo", "state": "stopped", "masked": true, "_ansible_check_mode": true},
			check: func(t *testing.T, res map[string]any) {
				assert.Equal(t, []any{"stop", "mask"}, res["actions"])
				assert.Equal(t, "masked", res["after"].(map[string]any)["load_state"])
			}},
		// Issue 30: check mode plans what follows the unmask too, as the real run does.
		{name: "check mode: an unmask and what follows it are reported", p: masked,
			args: map[string]any{"unit": "demo", "masked": false, "_ansible_check_mode": true},
			check: func(t *testing.T, res map[string]any) {
				assert.Equal(t, []any{"unmask", "start"}, res["actions"])
				assert.Equal(t, []any{"unmask", "start", "settle 300ms"}, res["plan"])
			}},
		{name: "masked: true with state running is refused", p: props("active", "enabled"),
			args: map[string]any{"unit": "demo", "masked": true}, failed: "masked: true cannot be combined with state: running"},
		{name: "a malformed probe is refused before anything", p: props("active", "enabled"),
			args: map[string]any{"unit": "demo", "health": map[string]any{"tcp": "127.0.0.1"}}, failed: "health.tcp"},
		{name: "a negative settle is refused", p: props("active", "enabled"),
			args: map[string]any{"unit": "demo", "settle": "-1s"}, failed: "settle:"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			sd := &fakeSystemd{p: c.p}
			if c.sd != nil {
				c.sd(sd)
			}
			st := &memStore{pending: map[string]*durable.Pending{}}
			d := testDeps(sd, st)
			if c.prober != nil {
				d.Prober = c.prober
			}
			data, _ := json.Marshal(c.args)
			out := ansible.Execute(context.Background(), Spec(), []string{"-"}, strings.NewReader(string(data)), Handler(d))
			var res map[string]any
			require.NoError(t, json.Unmarshal(out, &res))
			if c.failed != "" {
				assert.Contains(t, res["msg"], c.failed)
			} else {
				assert.Nil(t, res["failed"], res["msg"])
			}
			calls := nonShow(sd.calls)
			if c.calls == nil {
				calls = nonShowNil(calls)
			}
			assert.Equal(t, c.calls, calls)
			if c.check != nil {
				c.check(t, res)
			}
		})
	}
}

func nonShowNil(c []string) []string {
	if len(c) == 0 {
		return nil
	}
	return c
}

// A restart trigger is on disk before the daemon-reload that precedes it: when that fails,
// the next run still restarts.
func TestPendingRecordedBeforeAnythingCanFail(t *testing.T) {
	sd := &fakeSystemd{p: props("active", "enabled"), reloadFails: true}
	st := &memStore{syncDue: true, pending: map[string]*durable.Pending{}}
	res := runModule(t, sd, st, map[string]any{"unit": "demo", "restart_on": []any{map[string]any{"changed": true}}})
	assert.Contains(t, res["msg"], "daemon-reload")
	require.NotNil(t, st.pending["demo.service"], "the restart stays due")
	assert.Equal(t, "restart", st.pending["demo.service"].Reaction)
	assert.Empty(t, res["actions"].([]any)[1:], "no restart was sent")

	sd.reloadFails = false
	res = runModule(t, sd, st, map[string]any{"unit": "demo", "restart_on": []any{map[string]any{"changed": false}}})
	require.Nil(t, res["failed"], res["msg"])
	assert.Equal(t, []any{"daemon-reload", "restart"}, res["actions"])
	assert.Nil(t, st.pending["demo.service"])
}

// A reload keeps its process: a new invocation after it is no successful reload.
func TestReloadThatRestartsFails(t *testing.T) {
	sd := &fakeSystemd{p: props("active", "enabled"), reloadRestarts: true}
	sd.p.InvocationID = "a"
	d := testDeps(sd, &memStore{pending: map[string]*durable.Pending{}})
	d.Root = t.TempDir()
	unitDir := d.Root + "/etc/systemd/system"
	require.NoError(t, os.MkdirAll(unitDir, 0o755))
	require.NoError(t, os.WriteFile(unitDir+"/demo.service", []byte("[Service]\nExecStart=/bin/true\nExecReload=/bin/true\n"), 0o644))
	sd.p.FragmentPath, sd.p.CanReload = "/etc/systemd/system/demo.service", true
	data, _ := json.Marshal(map[string]any{"unit": "demo", "reload_on": []any{true}})
	out := ansible.Execute(context.Background(), Spec(), []string{"-"}, strings.NewReader(string(data)), Handler(d))
	var res map[string]any
	require.NoError(t, json.Unmarshal(out, &res))
	assert.Contains(t, res["msg"], "started anew during its reload")
}

// settlingSystemd holds every observation after a start until the probe has begun, so a
// run that probed only after the settle time would never see its probe.
type settlingSystemd struct {
	fakeSystemd
	probed  chan struct{}
	waited  bool // an observation gave up waiting for the probe
	started bool
}

func (s *settlingSystemd) Job(ctx context.Context, action, unit string) error {
	s.started = true
	return s.fakeSystemd.Job(ctx, action, unit)
}

func (s *settlingSystemd) Show(ctx context.Context, unit string) (systemd.Props, error) {
	if s.started {
		select {
		case <-s.probed:
		case <-time.After(2 * time.Second):
			s.waited = true
		}
	}
	return s.fakeSystemd.Show(ctx, unit)
}

type signallingProber struct{ probed chan struct{} }

func (p signallingProber) Wait(context.Context, health.Probe) (int, error) {
	close(p.probed)
	return 1, nil
}

func (p signallingProber) Check(context.Context, health.Probe) error { return nil }

// The probe runs while the unit settles after its start, not after the settle time.
func TestProbeRunsDuringSettle(t *testing.T) {
	probed := make(chan struct{})
	sd := &settlingSystemd{fakeSystemd: fakeSystemd{p: props("inactive", "enabled")}, probed: probed}
	d := Deps{Systemd: sd, Store: &memStore{pending: map[string]*durable.Pending{}}, Now: func() (stamp.Stamp, error) { return testNow, nil },
		Clock: &fakeClock{now: time.Unix(1000, 0)}, Prober: signallingProber{probed: probed}}
	data, _ := json.Marshal(map[string]any{"unit": "demo", "health": map[string]any{"tcp": "127.0.0.1:8080"}})
	var res map[string]any
	require.NoError(t, json.Unmarshal(ansible.Execute(context.Background(), Spec(), []string{"-"}, strings.NewReader(string(data)), Handler(d)), &res))
	assert.Nil(t, res["failed"], res["msg"])
	assert.False(t, sd.waited, "the settle's observations waited for a probe that had not begun")
	assert.Equal(t, true, res["health"].(map[string]any)["healthy"])
}

// In check mode a unit that a predicted package change installs is planned for, not a
// failure: the packages task's own check mode said it would install it.
func TestCheckModePlansForTheUnitAPackageInstalls(t *testing.T) {
	packageChanged := registered(t, rpmexact.Result{Report: rpmexact.Report{Changed: true, Change: contract.Change{PackageChanged: true}},
		Name: "demo", Before: []string{}, After: []string{"demo-0:1.0-1.noarch"}, Operation: rpmexact.OpInstallN, Command: []string{"dnf", "-y", "install-n", "--", "demo"}})
	notFound := systemd.Props{ID: "demo.service", LoadState: "not-found", ActiveState: "inactive", SubState: "dead"}
	cases := []struct {
		name    string
		args    map[string]any
		actions []string
		failed  string
	}{
		// The real run, once the package is in, enables ahead of the sync: check mode says the same.
		{"running and enabled", map[string]any{"enabled": true}, []string{"enable", "daemon-reload", "start"}, ""},
		{"running, reload_on too: capability not known yet", map[string]any{"reload_on": []any{packageChanged}}, []string{"daemon-reload", "start"}, ""},
		{"stopped", map[string]any{"state": "stopped"}, []string{"daemon-reload"}, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			sd := &fakeSystemd{p: notFound}
			args := map[string]any{"unit": "demo", "restart_on": []any{packageChanged}, "_ansible_check_mode": true}
			for k, v := range c.args {
				args[k] = v
			}
			res := runModule(t, sd, &memStore{pending: map[string]*durable.Pending{}}, args)
			require.Nil(t, res["failed"], res["msg"])
			assert.Equal(t, c.actions, strs(res["actions"]))
			assert.Contains(t, fmt.Sprint(res["warnings"]), "not installed yet")
			assert.Empty(t, nonShow(sd.calls))
		})
	}
	// Without a package change predicted, a missing unit still fails in check mode.
	res := runModule(t, &fakeSystemd{p: notFound}, &memStore{pending: map[string]*durable.Pending{}},
		map[string]any{"unit": "demo", "_ansible_check_mode": true})
	assert.Contains(t, res["msg"], "unit demo.service not found")
}

// A unit the manager does not find, with a sync due for another reason: check mode plans
// for it only when a file of it is on disk, since it cannot run the daemon-reload that
// would load it; a misspelled name fails there as the real run fails after its sync.
func TestCheckModeRefusesAUnitWithNoFileWhenOnlyASyncCouldLoadIt(t *testing.T) {
	notFound := systemd.Props{ID: "demo.service", LoadState: "not-found", ActiveState: "inactive", SubState: "dead"}
	for _, tc := range []struct {
		name    string
		onDisk  bool
		failed  string
		actions []string
	}{
		{"no file on disk: refused", false, "unit demo.service not found (LoadState=not-found): expected a unit file for it; in check mode the daemon-reload that might load it was not performed, and no file of it is on disk", nil},
		{"a file on disk: planned", true, "", []string{"daemon-reload", "start"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			if tc.onDisk {
				dir := filepath.Join(root, "etc/systemd/system")
				require.NoError(t, os.MkdirAll(dir, 0o755))
				require.NoError(t, os.WriteFile(filepath.Join(dir, "demo.service"), []byte("[Service]\nExecStart=/bin/true\n"), 0o644))
			}
			sd := &fakeSystemd{p: notFound}
			d := testDeps(sd, &memStore{syncDue: true, pending: map[string]*durable.Pending{}})
			d.Root = root
			data, _ := json.Marshal(map[string]any{"unit": "demo", "_ansible_check_mode": true})
			out := ansible.Execute(context.Background(), Spec(), []string{"-"}, strings.NewReader(string(data)), Handler(d))
			var res map[string]any
			require.NoError(t, json.Unmarshal(out, &res))
			assert.Empty(t, nonShow(sd.calls), "check mode changes nothing")
			if tc.failed != "" {
				assert.Equal(t, true, res["failed"])
				assert.Equal(t, tc.failed, res["msg"])
				return
			}
			require.Nil(t, res["failed"], res["msg"])
			assert.Equal(t, tc.actions, strs(res["actions"]))
		})
	}
}

// A package change the manager was reloaded after (an earlier process step of the
// service) that did not bring the unit: the real run plans no sync for it, and fails with
// the not-found refusal before sending a job for a unit the manager does not have.
func TestALoadedPackageChangeWithoutTheUnitIsRefused(t *testing.T) {
	sd := &fakeSystemd{p: systemd.Props{ID: "demo.service", LoadState: "not-found", ActiveState: "inactive", SubState: "dead"}}
	res := runModule(t, sd, &memStore{pending: map[string]*durable.Pending{}}, map[string]any{"unit": "demo",
		"facts_from": []any{map[string]any{"changed": true, "package_changed": true, "unit_files_changed": true, "daemon_reload": "performed"}}})
	assert.Equal(t, true, res["failed"])
	assert.Equal(t, "unit demo.service not found (LoadState=not-found): expected a unit file for it", res["msg"])
	assert.Empty(t, nonShow(sd.calls), "no daemon-reload, no job")
}

// An unmask loads the unit's real fragment, the next one in the search path after the
// mask link: reload_on is judged from it, not from the /dev/null the mask links to.
func TestUnmaskJudgesTheRealFragment(t *testing.T) {
	const lib = "/usr/lib/systemd/system/demo.service"
	for _, c := range []struct{ name, content, wantErr string }{
		{name: "the real fragment can reload", content: "[Service]\nExecStart=/bin/true\nExecReload=/bin/true\n"},
		{name: "the real fragment cannot: refused for it", content: "[Service]\nExecStart=/bin/true\n",
			wantErr: "no ExecReload= and no Type=notify-reload in " + lib},
	} {
		t.Run(c.name, func(t *testing.T) {
			sd := &fakeSystemd{p: props("inactive", "masked")}
			sd.p.LoadState, sd.p.FragmentPath = "masked", lib
			d := testDeps(sd, &memStore{pending: map[string]*durable.Pending{}})
			d.Root = t.TempDir()
			require.NoError(t, os.MkdirAll(d.Root+"/etc/systemd/system", 0o755))
			require.NoError(t, os.Symlink("/dev/null", d.Root+"/etc/systemd/system/demo.service"))
			require.NoError(t, os.MkdirAll(d.Root+"/usr/lib/systemd/system", 0o755))
			require.NoError(t, os.WriteFile(d.Root+lib, []byte(c.content), 0o644))
			data, _ := json.Marshal(map[string]any{"unit": "demo", "masked": false, "reload_on": []any{true}})
			var res map[string]any
			require.NoError(t, json.Unmarshal(ansible.Execute(context.Background(), Spec(), []string{"-"}, strings.NewReader(string(data)), Handler(d)), &res))
			if c.wantErr != "" {
				require.Equal(t, true, res["failed"])
				assert.Contains(t, res["msg"], c.wantErr)
				assert.NotContains(t, sd.calls, "unmask", "refused before the unmask")
				return
			}
			require.Nil(t, res["failed"], res["msg"])
			assert.Equal(t, []any{"unmask", "start"}, res["actions"])
		})
	}
}
