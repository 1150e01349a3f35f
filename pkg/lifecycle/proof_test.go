package lifecycle

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/richt/services/pkg/ansible"
	"github.com/richt/services/pkg/durable"
	"github.com/richt/services/pkg/health"
	"github.com/richt/services/pkg/reaction"
	"github.com/richt/services/pkg/stamp"
	"github.com/richt/services/pkg/systemd"
	"github.com/richt/services/pkg/unitfile"
)

// workersSystemd is fakeSystemd with processes: a reload job replaces the old workers
// (PIDs 11, 12) with new ones (21, 22), and the old ones exit `exit` after the job on the
// fake clock, the way nginx's old workers go a moment after `nginx -s reload` returned.
// The master (PID 1) stays. listings counts the process listings.
type workersSystemd struct {
	fakeSystemd
	clk      *fakeClock
	exit     time.Duration
	jobAt    time.Time
	reloaded bool
	listings int
}

func (f *workersSystemd) Job(ctx context.Context, action, unit string) error {
	if action == "reload" {
		f.reloaded, f.jobAt = true, f.clk.Now()
	}
	return f.fakeSystemd.Job(ctx, action, unit)
}

// gone: the old workers have exited.
func (f *workersSystemd) gone() bool { return f.reloaded && f.clk.Now().Sub(f.jobAt) >= f.exit }

func (f *workersSystemd) UnitProcesses(context.Context, string) ([]int, error) {
	f.listings++
	switch {
	case !f.reloaded:
		return []int{1, 11, 12}, nil
	case !f.gone():
		return []int{1, 11, 12, 21, 22}, nil
	}
	return []int{1, 21, 22}, nil
}

// goneProber answers while the old workers run, then as the new configuration does:
// refused when it moved the listener elsewhere (broken), else answered.
type goneProber struct {
	sd     *workersSystemd
	broken bool
	checks int
}

func (p *goneProber) Wait(ctx context.Context, pr health.Probe) (int, error) {
	return 1, p.Check(ctx, pr)
}

func (p *goneProber) Check(context.Context, health.Probe) error {
	p.checks++
	if p.broken && p.sd.gone() {
		return errors.New("dial tcp 127.0.0.1:8081: connect: connection refused")
	}
	return nil
}

// newWorkers is a running unit whose old workers exit `exit` after a reload job, with
// the deps of a run over it.
func newWorkers(t *testing.T, exit time.Duration, notify bool) (*workersSystemd, *memStore, Deps) {
	t.Helper()
	st := &memStore{pending: map[string]*durable.Pending{}}
	sd := &workersSystemd{fakeSystemd: fakeSystemd{p: props("active", "enabled")}, exit: exit}
	d := testDeps(&sd.fakeSystemd, st)
	sd.clk = d.Clock.(*fakeClock)
	d.Systemd, d.Root = sd, reloadable(t, &sd.fakeSystemd, notify)
	return sd, st, d
}

// reloadable writes a unit file under a temporary root: ExecReload= (a signal), or
// Type=notify-reload when notify.
func reloadable(t *testing.T, sd *fakeSystemd, notify bool) string {
	t.Helper()
	root := t.TempDir()
	unitDir := root + "/etc/systemd/system"
	require.NoError(t, os.MkdirAll(unitDir, 0o755))
	content := "[Service]\nExecStart=/usr/sbin/nginx\nExecReload=/usr/sbin/nginx -s reload\n"
	if notify {
		content = "[Service]\nType=notify-reload\nExecStart=/usr/bin/daemon\n"
	}
	require.NoError(t, os.WriteFile(unitDir+"/demo.service", []byte(content), 0o644))
	sd.p.FragmentPath, sd.p.CanReload, sd.p.InvocationID = "/etc/systemd/system/demo.service", true, "inv"
	return root
}

func runWith(t *testing.T, d Deps, args map[string]any) map[string]any {
	t.Helper()
	data, _ := json.Marshal(args)
	var res map[string]any
	require.NoError(t, json.Unmarshal(ansible.Execute(context.Background(), Spec(), []string{"-"}, strings.NewReader(string(data)), Handler(d)), &res))
	return res
}

var probed = map[string]any{"tcp": "127.0.0.1:8081"}

// A signalled reload counts only once it took effect: the probe that the old workers
// answer right after `nginx -s reload` returned does not pass the task. The workers go
// after a few listings; with a configuration that moved the listener the probe fails
// inside the settle, and that is the reload's failure.
func TestASignalledReloadIsProvenAfterItsOldProcessesWent(t *testing.T) {
	for _, tc := range []struct {
		name   string
		broken bool
		exit   time.Duration
		settle any // the task's settle; nil: the default
		failed string
	}{
		{name: "a configuration that works passes", exit: 150 * time.Millisecond},
		{name: "a configuration that moved the listener fails the reload", broken: true, exit: 150 * time.Millisecond, failed: "reload of demo.service not proven"},
		{name: "the old workers go late, inside the settle: still caught", broken: true, exit: 750 * time.Millisecond, failed: "reload of demo.service not proven"},
		{name: "a settle the task gives holds the probe as long", broken: true, exit: 2 * time.Second, settle: "5s", failed: "every attempt during the settle of 5s must pass"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sd, st, d := newWorkers(t, tc.exit, false)
			pr := &goneProber{sd: sd, broken: tc.broken}
			d.Prober = pr
			args := map[string]any{"unit": "demo", "reload_on": []any{true}, "health": probed, "timeout": "1m"}
			if tc.settle != nil {
				args["settle"] = tc.settle
			}
			res := runWith(t, d, args)
			assert.Equal(t, []any{"reload"}, res["actions"])
			plan := []any{"record-pending", "stamp-pending", "reload", "quiet 250ms", "settle 1s", "clear-pending", "probe"}
			if tc.settle != nil {
				plan[4] = "settle " + tc.settle.(string)
			}
			assert.Equal(t, plan, res["plan"])
			assert.Nil(t, st.pending["demo.service"], "the reload was carried out either way: not due again")
			if tc.failed == "" {
				assert.Greater(t, pr.checks, 10, "the probe is held through the settle, not passed once")
				require.Nil(t, res["failed"], res["msg"])
				assert.Equal(t, true, res["health"].(map[string]any)["healthy"])
				rec, ok := st.reloaded["demo.service"]
				require.True(t, ok, "the verified reload is recorded")
				assert.Equal(t, testNow, rec.At, "stamped before the job was sent")
				assert.Equal(t, "inv", rec.Invocation)
				return
			}
			require.Equal(t, true, res["failed"], "the old workers answered at first: %v", res)
			assert.Contains(t, res["msg"], tc.failed)
			assert.Contains(t, res["msg"], "connection refused")
			assert.Equal(t, false, res["health"].(map[string]any)["healthy"])
			_, ok := st.reloaded["demo.service"]
			assert.False(t, ok, "an unproven reload serves nothing")
		})
	}
}

// The quiet wait is what a probe's passing depends on: while old processes keep exiting,
// it waits; it ends QuietAfterReload after the last one went, and a deadline inside it
// fails the reload.
func TestQuietWaitsForTheOldProcessesToStopExiting(t *testing.T) {
	sd, _, _ := newWorkers(t, 200*time.Millisecond, false)
	clk := sd.clk
	sd.reloaded, sd.jobAt = true, clk.Now()
	v := &watcher{sd: sd, unit: "demo.service", clk: clk, poll: 50 * time.Millisecond, res: newResult("demo.service")}
	start := clk.Now()
	require.NoError(t, v.quiet(context.Background(), map[int]bool{1: true, 11: true, 12: true}, QuietAfterReload))
	// The old workers were listed until 200 ms, then gone; quiet 250 ms after that.
	assert.Equal(t, 450*time.Millisecond, clk.Now().Sub(start))

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	sd.jobAt = clk.Now()
	err := v.quiet(ctx, map[int]bool{1: true, 11: true, 12: true}, QuietAfterReload)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "still exiting")

	// A backend that cannot list processes has nothing to wait for.
	v.sd = &sd.fakeSystemd
	assert.NoError(t, v.quiet(context.Background(), map[int]bool{1: true}, QuietAfterReload))
}

// Only a reload whose end systemd cannot see is proven by waiting, and only with a probe:
// Type=notify-reload's job ends when the service said it is done; without a probe there is
// nothing to prove.
func TestWhichReloadsAreProvenByWaiting(t *testing.T) {
	running := props("active", "enabled")
	probe := &health.Probe{}
	signal := &unitfile.Capability{Capable: true, Reason: "ExecReload="}
	notify := &unitfile.Capability{Capable: true, Reason: "Type=notify-reload", NotifyReload: true}
	three := 3 * time.Second
	for _, tc := range []struct {
		name   string
		w      Want
		f      Facts
		quiet  time.Duration
		settle time.Duration
	}{
		{"signalled, with a probe", Want{Running: true, ReloadOn: true, Health: probe}, Facts{Unit: running, Due: reaction.Reload, Capability: signal}, QuietAfterReload, DefaultSignalledReloadSettle},
		{"signalled, with a probe and the task's settle", Want{Running: true, ReloadOn: true, Health: probe, Settle: &three}, Facts{Unit: running, Due: reaction.Reload, Capability: signal}, QuietAfterReload, three},
		{"a record's reload, files not read: signalled", Want{Running: true, Health: probe}, Facts{Unit: running, Due: reaction.Reload}, QuietAfterReload, DefaultSignalledReloadSettle},
		{"notify-reload: the job is the proof", Want{Running: true, ReloadOn: true, Health: probe}, Facts{Unit: running, Due: reaction.Reload, Capability: notify}, 0, 0},
		{"no probe: nothing to prove", Want{Running: true, ReloadOn: true}, Facts{Unit: running, Due: reaction.Reload, Capability: signal}, 0, 0},
		{"a restart with a probe: not a reload", Want{Running: true, Health: probe}, Facts{Unit: running, Due: reaction.Restart}, 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := Decide(tc.w, tc.f)
			require.NoError(t, err)
			assert.Equal(t, tc.quiet, p.Quiet)
			assert.Equal(t, tc.settle, p.Settle)
		})
	}
}

// A notify-reload unit's reload is not held: one probe after the job, as before.
func TestANotifyReloadIsNotHeld(t *testing.T) {
	sd, st, d := newWorkers(t, 150*time.Millisecond, true)
	pr := &goneProber{sd: sd}
	d.Prober = pr
	res := runWith(t, d, map[string]any{"unit": "demo", "reload_on": []any{true}, "health": probed})
	require.Nil(t, res["failed"], res["msg"])
	assert.Equal(t, []any{"record-pending", "stamp-pending", "reload", "clear-pending", "probe"}, res["plan"])
	assert.Zero(t, sd.listings, "no process is watched")
	_, ok := st.reloaded["demo.service"]
	assert.True(t, ok, "a verified reload is recorded whatever proved it")
}

// One reaction per change, however many runs race: a reload owed for files placed before
// the unit's last verified reload was sent (another run's, which this one waited for) was
// served by it; one owed for files placed after it is carried out. A pending reload
// recorded before that reload is served too; a restart is not served by a reload.
func TestAReloadOwedForFilesAnotherRunsReloadReadIsServed(t *testing.T) {
	now := stamp.Stamp{BootID: "b", Mono: 10_000}
	unit := systemd.Props{LoadState: "loaded", ActiveState: "active", SubState: "running", ActiveEnterMono: 1_000, CanReload: true}
	at := func(mono uint64) *stamp.Stamp { return &stamp.Stamp{BootID: "b", Mono: mono} }
	cfg := func(placed *stamp.Stamp) reaction.Triggers {
		return reaction.Triggers{Reload: []reaction.Trigger{{Ref: "reload_on.config", Changed: true, FilesPlaced: placed}}}
	}
	reloaded := &durable.Reloaded{At: stamp.Stamp{BootID: "b", Mono: 6_000}}
	for _, tc := range []struct {
		name     string
		trig     reaction.Triggers
		pending  *durable.Pending
		reloaded *durable.Reloaded
		unit     systemd.Props
		due      reaction.Kind
		served   bool
	}{
		{name: "placed before the other run's reload: served", trig: cfg(at(5_000)), reloaded: reloaded, unit: unit, due: reaction.None, served: true},
		{name: "placed after it: reload", trig: cfg(at(7_000)), reloaded: reloaded, unit: unit, due: reaction.Reload},
		{name: "no reload known: reload", trig: cfg(at(5_000)), unit: unit, due: reaction.Reload},
		{name: "a reload on another boot serves nothing", trig: cfg(at(5_000)), reloaded: &durable.Reloaded{At: stamp.Stamp{BootID: "a", Mono: 9_000}}, unit: unit, due: reaction.Reload},
		{name: "a trigger that cannot say when: reload", trig: cfg(nil), reloaded: reloaded, unit: unit, due: reaction.Reload},
		{name: "a start after the files served it too", trig: cfg(at(5_000)), unit: systemd.Props{LoadState: "loaded", ActiveState: "active", SubState: "running", ActiveEnterMono: 5_500, CanReload: true}, due: reaction.None, served: true},
		{name: "a pending reload recorded before the reload: served", pending: &durable.Pending{Reaction: "reload", At: *at(5_000)}, reloaded: reloaded, unit: unit, due: reaction.None},
		{name: "a pending reload recorded after it: due", pending: &durable.Pending{Reaction: "reload", At: *at(7_000)}, reloaded: reloaded, unit: unit, due: reaction.Reload},
		{name: "a pending restart is no reload's to serve", pending: &durable.Pending{Reaction: "restart", At: *at(5_000)}, reloaded: reloaded, unit: unit, due: reaction.Restart},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := Observation{Unit: tc.unit, Now: now, Pending: tc.pending, Reloaded: tc.reloaded}
			p := Prepare(Want{Unit: "demo.service", Running: true, ReloadOn: true}, tc.trig, o)
			assert.Equal(t, tc.due, p.Due)
			assert.Equal(t, tc.served, p.ReloadServed != "", "reload served: %q", p.ReloadServed)
		})
	}
}

// The module end to end over fakes: the run that waited finds the other run's verified
// reload recorded and reports the reaction served, with no job.
func TestTheRunThatWaitedDoesNotReloadAgain(t *testing.T) {
	sd := &fakeSystemd{p: props("active", "enabled")}
	st := &memStore{pending: map[string]*durable.Pending{}, reloaded: map[string]durable.Reloaded{
		"demo.service": {At: stamp.Stamp{BootID: "b1", Mono: 4_000_000}}}}
	d := testDeps(sd, st)
	d.Root = reloadable(t, sd, false)
	placed := map[string]any{"boot_id": "b1", "monotonic_us": 3_000_000}
	res := runWith(t, d, map[string]any{"unit": "demo", "reload_on": []any{map[string]any{"changed": true, "files_placed": placed}}})
	require.Nil(t, res["failed"], res["msg"])
	assert.Equal(t, "served", res["reaction"])
	assert.Empty(t, res["actions"])
	assert.Contains(t, res["reload_served"], "already done")
	assert.Empty(t, nonShow(sd.calls))

	placed["monotonic_us"] = 4_500_000 // placed after that reload was sent
	res = runWith(t, d, map[string]any{"unit": "demo", "reload_on": []any{map[string]any{"changed": true, "files_placed": placed}}})
	require.Nil(t, res["failed"], res["msg"])
	assert.Equal(t, []any{"reload"}, res["actions"])
}
