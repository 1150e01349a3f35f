package lifecycle

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/richt/services/pkg/ansible"
	"github.com/richt/services/pkg/durable"
	"github.com/richt/services/pkg/reaction"
	"github.com/richt/services/pkg/stamp"
	"github.com/richt/services/pkg/systemd"
	"github.com/richt/services/pkg/unitfile"
)

// execute runs the module over d with args and returns its result.
func execute(t *testing.T, d Deps, args map[string]any) map[string]any {
	t.Helper()
	data, _ := json.Marshal(args)
	out := ansible.Execute(context.Background(), Spec(), []string{"-"}, strings.NewReader(string(data)), Handler(d))
	var res map[string]any
	require.NoError(t, json.Unmarshal(out, &res))
	return res
}

// withUnitFile gives d a root holding the unit's file with content, as the manager names it.
func withUnitFile(t *testing.T, d *Deps, sd *fakeSystemd, content string) {
	t.Helper()
	d.Root = t.TempDir()
	require.NoError(t, os.MkdirAll(d.Root+"/etc/systemd/system", 0o755))
	require.NoError(t, os.WriteFile(d.Root+"/etc/systemd/system/demo.service", []byte(content), 0o644))
	sd.p.FragmentPath = "/etc/systemd/system/demo.service"
	sd.p.CanReload = strings.Contains(content, "ExecReload=")
}

// Issue 42: reload_on on a unit that cannot reload (redis has no ExecReload=) is refused
// before anything is done, and leaves no record: a record of a reload no run can carry out
// failed every later run for the unit, even runs that name no trigger. A restart a trigger
// of the same run owes is still recorded: any later run can carry it out.
func TestARefusedReloadLeavesNoRecord(t *testing.T) {
	for _, tc := range []struct {
		name    string
		args    map[string]any
		want    string // the record left: "" none
		wantErr string
	}{
		{"reload_on changed", map[string]any{"reload_on": []any{true}}, "", "reload_on needs demo.service to be reload-capable"},
		{"reload_on changed, sync due", map[string]any{"reload_on": []any{true}}, "", "reload_on needs demo.service to be reload-capable"},
		{"restart_on and reload_on changed: the restart stays owed", map[string]any{"reload_on": []any{true}, "restart_on": []any{true}}, "restart", "reload_on needs"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sd := &fakeSystemd{p: props("active", "enabled")}
			st := &memStore{pending: map[string]*durable.Pending{}, syncDue: strings.Contains(tc.name, "sync due")}
			d := testDeps(sd, st)
			withUnitFile(t, &d, sd, "[Service]\nExecStart=/bin/true\n")
			args := map[string]any{"unit": "demo"}
			for k, v := range tc.args {
				args[k] = v
			}
			res := execute(t, d, args)
			assert.Equal(t, true, res["failed"])
			assert.Contains(t, res["msg"], tc.wantErr)
			got := st.pending["demo.service"]
			if tc.want == "" {
				assert.Nil(t, got, "a refused reload is no debt")
				assert.NotContains(t, res["plan"], string(StepRecordPending))
			} else {
				require.NotNil(t, got)
				assert.Equal(t, tc.want, got.Reaction)
			}
			for _, c := range nonShow(sd.calls) {
				assert.NotEqual(t, "reload", c, "no reload job was sent")
			}
			// The next runs pass unchanged: one that names no trigger, and one whose
			// restart trigger did not change.
			for _, next := range []map[string]any{{"unit": "demo"}, {"unit": "demo", "restart_on": []any{false}}} {
				sd.calls = nil
				res = execute(t, d, next)
				if tc.want == "restart" {
					// The restart owed is carried out, once.
					require.Nil(t, res["failed"], res["msg"])
					assert.Equal(t, []any{"restart"}, res["actions"])
					tc.want = ""
					continue
				}
				require.Nil(t, res["failed"], res["msg"])
				assert.Equal(t, []any{}, res["actions"])
				assert.Equal(t, false, res["changed"])
			}
		})
	}
}

// A pending record that cannot be carried out as recorded (one this version cannot
// read, a reload of a unit that lost ExecReload=) fails one run, which marks it reported,
// with what it says and how to clear it; later runs warn; a restart clears it.
func TestADebtFailsOnceThenWarnsUntilARestart(t *testing.T) {
	unreadable := durable.Pending{Reaction: durable.Unknown, Unreadable: "it is not a record this version can read (unknown reaction \"bounce\")",
		Path: "/var/lib/richt/pending/demo.service.json", At: testRecorded}
	reload := durable.Pending{Reaction: "reload", Path: "/var/lib/richt/pending/demo.service.json", At: testRecorded}
	for _, tc := range []struct {
		name   string
		rec    durable.Pending
		unit   string
		saying string
		clear  string // how the debt is cleared: "restart_on", "by hand"
	}{
		{"unreadable record", unreadable, "[Service]\nExecStart=/bin/true\nExecReload=/bin/true\n", "not a record this version can read", "restart_on"},
		{"reload of a unit that cannot reload", reload, "[Service]\nExecStart=/bin/true\n", "the unit cannot reload: no ExecReload=", "restart_on"},
		{"reload of a unit that cannot reload, restarted by hand", reload, "[Service]\nExecStart=/bin/true\n", "the unit cannot reload: no ExecReload=", "by hand"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sd := &fakeSystemd{p: props("active", "enabled")}
			sd.p.ActiveEnterMono = 500 // active since before the record
			rec := tc.rec
			st := &memStore{pending: map[string]*durable.Pending{"demo.service": &rec}}
			d := testDeps(sd, st)
			withUnitFile(t, &d, sd, tc.unit)

			res := execute(t, d, map[string]any{"unit": "demo"})
			assert.Equal(t, true, res["failed"])
			msg := fmt.Sprint(res["msg"])
			assert.Contains(t, msg, "/var/lib/richt/pending/demo.service.json")
			assert.Contains(t, msg, "cannot be carried out as recorded")
			assert.Contains(t, msg, tc.saying)
			assert.Contains(t, msg, "systemctl restart demo.service")
			assert.NotContains(t, msg, "refused the job")
			assert.Empty(t, nonShow(sd.calls), "nothing was sent to systemd")
			assert.Equal(t, []any{string(StepReportPending)}, res["plan"])
			require.NotNil(t, st.pending["demo.service"])
			assert.True(t, st.pending["demo.service"].Reported, "marked reported")

			// Later runs warn, change nothing and keep the record, whatever else they do.
			for _, args := range []map[string]any{{"unit": "demo"}, {"unit": "demo", "restart_on": []any{false}}} {
				sd.calls = nil
				res = execute(t, d, args)
				require.Nil(t, res["failed"], res["msg"])
				assert.Equal(t, []any{}, res["actions"])
				assert.Contains(t, fmt.Sprint(res["warnings"]), "cannot be carried out as recorded")
				require.NotNil(t, st.pending["demo.service"], "kept until a restart")
			}

			// A restart clears it.
			sd.calls = nil
			if tc.clear == "by hand" {
				sd.p.ActiveEnterMono = testNow.Mono - 1 // systemctl restart, after the record
				res = execute(t, d, map[string]any{"unit": "demo"})
				require.Nil(t, res["failed"], res["msg"])
				assert.Equal(t, []any{}, res["actions"])
			} else {
				res = execute(t, d, map[string]any{"unit": "demo", "restart_on": []any{true}})
				require.Nil(t, res["failed"], res["msg"])
				assert.Equal(t, []any{"restart"}, res["actions"])
			}
			assert.Nil(t, st.pending["demo.service"], "cleared")
			assert.NotContains(t, fmt.Sprint(res["warnings"]), "cannot be carried out")
		})
	}
}

// Which pending records are debts, and when the run serves one anyway.
func TestPrepareDebts(t *testing.T) {
	running := systemd.Props{LoadState: "loaded", ActiveState: "active", SubState: "running", ActiveEnterMono: 500}
	capable := running
	capable.CanReload = true
	stopped := systemd.Props{LoadState: "loaded", ActiveState: "inactive", SubState: "dead"}
	at := stamp.Stamp{BootID: "b1", Mono: 1_000}
	now := stamp.Stamp{BootID: "b1", Mono: 5_000}
	unknown := &durable.Pending{Reaction: durable.Unknown, Unreadable: "why", At: at}
	reload := &durable.Pending{Reaction: "reload", At: at}
	restart := &durable.Pending{Reaction: "restart", At: at}
	reported := &durable.Pending{Reaction: "reload", At: at, Reported: true}
	changedRestart := reaction.Triggers{Restart: []reaction.Trigger{{Ref: "restart_on[0]", Changed: true}}}
	changedReload := reaction.Triggers{Reload: []reaction.Trigger{{Ref: "reload_on[0]", Changed: true}}}
	for _, tc := range []struct {
		name     string
		w        Want
		trig     reaction.Triggers
		rec      *durable.Pending
		unit     systemd.Props
		debt     bool
		absorbed bool
		due      reaction.Kind
		steps    []Step
	}{
		{"a reload of a reload-capable unit is no debt", Want{Running: true}, reaction.Triggers{}, reload, capable, false, false, reaction.Reload, []Step{StepRecordPending}},
		{"a restart is never a debt", Want{Running: true}, reaction.Triggers{}, restart, running, false, false, reaction.Restart, []Step{StepRecordPending}},
		{"a reload of a unit that cannot reload", Want{Running: true}, reaction.Triggers{}, reload, running, true, false, reaction.None, []Step{StepReportPending}},
		{"reported: not reported again", Want{Running: true}, reaction.Triggers{}, reported, running, true, false, reaction.None, nil},
		{"unknown", Want{Running: true}, reaction.Triggers{}, unknown, capable, true, false, reaction.None, []Step{StepReportPending}},
		{"unknown, a reload trigger: reloads, keeps the record", Want{Running: true}, changedReload, unknown, capable, true, false, reaction.Reload, []Step{StepReportPending}},
		{"a restart trigger serves it", Want{Running: true}, changedRestart, unknown, running, true, true, reaction.Restart, []Step{StepRecordPending}},
		{"a start serves it", Want{Running: true}, reaction.Triggers{}, reload, stopped, true, true, reaction.None, nil},
		{"a stop leaves nothing owed", Want{}, reaction.Triggers{}, unknown, running, true, true, reaction.None, nil},
		{"files that can reload the manager has not loaded: synced, then reloaded", Want{Running: true}, reaction.Triggers{}, reload, running, false, false, reaction.Reload, []Step{StepRecordPending, StepDaemonReload}},
		{"files that lost ExecReload= the manager has not loaded: a debt", Want{Running: true}, reaction.Triggers{}, reload, capable, true, false, reaction.None, []Step{StepReportPending, StepDaemonReload}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := Observation{Unit: tc.unit, Pending: tc.rec, Now: now}
			if strings.HasPrefix(tc.name, "files that can") {
				o.Capability = &unitfile.Capability{Capable: true, Reason: "ExecReload= in the fragment"}
			}
			if strings.HasPrefix(tc.name, "files that lost") {
				o.Capability = &unitfile.Capability{Capable: false, Reason: "no ExecReload= in the fragment"}
			}
			p := Prepare(tc.w, tc.trig, o)
			assert.Equal(t, tc.debt, p.Debt != "", "debt %q", p.Debt)
			assert.Equal(t, tc.absorbed, p.Absorbed)
			assert.Equal(t, tc.due, p.Due)
			assert.Equal(t, tc.steps, p.Steps)
		})
	}
}
