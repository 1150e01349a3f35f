package service

import (
	"context"
	"encoding/json"
	"errors"
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/richt/services/pkg/ansible"
	"github.com/richt/services/pkg/durable"
	"github.com/richt/services/pkg/lifecycle"
	"github.com/richt/services/pkg/override"
	"github.com/richt/services/pkg/reaction"
	"github.com/richt/services/pkg/rpmexact"
	"github.com/richt/services/pkg/stamp"
	"github.com/richt/services/pkg/systemd"
)

// fakeStep is a fake module's plan in hand: what its handler answers in check mode. Run
// calls the handler with the request the service runs the step with (check mode or real).
type fakeStep struct {
	plain
	h              ansible.Handler
	names          []string
	changes, units bool
	err            error
}

func (s *fakeStep) Names() []string { return s.names }
func (s *fakeStep) Changes() bool   { return s.changes }
func (s *fakeStep) UnitFiles() bool { return s.units }
func (s *fakeStep) Err() error      { return s.err }
func (s *fakeStep) Release()        {}
func (s *fakeStep) Run(ctx context.Context, req *ansible.Request) (any, error) {
	return s.h(ctx, req)
}

// moduleOf is a fake step module over a handler: its plan is the handler's answer in check
// mode, and the step runs the handler.
func moduleOf(spec *ansible.Spec, h ansible.Handler) Module {
	return Module{Spec: spec, Plan: func(ctx context.Context, req *ansible.Request) Step {
		check := *req
		check.CheckMode = true
		res, err := h(ctx, &check)
		out, _ := res.(map[string]any)
		st := &fakeStep{h: h, names: stringsOf(out["plan"]), err: err}
		st.changes, _ = out["changed"].(bool)
		st.units, _ = out["unit_files_changed"].(bool)
		return st
	}}
}

// predicted is m whose plan is pred's (an rpm_exact Plan of the packages step's request)
// while the step still runs m's handler: what the plan says and what the step does are
// the test's to set apart.
func predicted(pred fakePredict, m Module) Module {
	return Module{Spec: m.Spec, Plan: func(ctx context.Context, req *ansible.Request) Step {
		st := m.Plan(ctx, req).(*fakeStep)
		task, err := ansible.Parsed[rpmexact.Task](req)
		if err != nil {
			return failed{err: err}
		}
		p, err := pred.PlanPackages(ctx, task.Want)
		st.names, st.changes, st.units, st.err = p.Names(), p.Changes(), p.UnitFilesChange(), err
		return st
	}}
}

// fakeModule is a module's real parameter contract with a handler that answers every call
// with changed (and the keys of result, when given) and keeps the arguments of the real
// (not check-mode) calls it was given.
func fakeModule(spec *ansible.Spec, changed *bool, calls *[]map[string]any, result ...map[string]any) Module {
	return plannedModule(spec, changed, changed, calls, result...)
}

// plannedModule is fakeModule whose plan (its answer in check mode) is planned.
func plannedModule(spec *ansible.Spec, planned, changed *bool, calls *[]map[string]any, result ...map[string]any) Module {
	return moduleOf(spec, func(_ context.Context, req *ansible.Request) (any, error) {
		if req.CheckMode {
			out := map[string]any{"changed": *planned}
			for _, r := range result {
				maps.Copy(out, r)
			}
			return out, nil
		}
		*calls = append(*calls, req.Params)
		out := map[string]any{"changed": *changed}
		for _, r := range result {
			for k, v := range r {
				out[k] = v
			}
		}
		return out, nil
	})
}

type fakePending struct{ records map[string]*durable.Pending }

func (f *fakePending) GetPending(u string) (*durable.Pending, error) { return f.records[u], nil }
func (f *fakePending) SetPending(u string, p durable.Pending) error {
	f.records[u] = &p
	return nil
}
func (f *fakePending) ClearPending(u string) error { delete(f.records, u); return nil }

// The last verified reloads (lifecycle.Store): none known, and none kept.
func (f *fakePending) LastReload(string) *durable.Reloaded        { return nil }
func (f *fakePending) SetReloaded(string, durable.Reloaded) error { return nil }

// fakePredict plans the packages step: a transaction when pkg, else nothing to do.
type fakePredict struct {
	pkg        bool
	dependents []string
}

func (f fakePredict) PlanPackages(_ context.Context, w rpmexact.Want) (rpmexact.Plan, error) {
	if !f.pkg {
		return rpmexact.Plan{Want: w, Observed: rpmexact.ObservedQuery}, nil
	}
	// What moves: a name to install is not installed, one to remove is.
	have := map[string]rpmexact.Installed{}
	for _, e := range w.Entries {
		if e.Absent {
			have[e.Name] = rpmexact.Installed{NEVRAs: []string{e.Name + "-0:1.0-1.noarch"}}
		}
	}
	p, err := rpmexact.Decide(w, have)
	p.Observed = rpmexact.ObservedQuery
	return p, err
}
func (f fakePredict) Dependents(context.Context, []string) ([]string, error) {
	return f.dependents, nil
}

// The reactions recorded ahead: kept when the step they are for changed something,
// withdrawn when it did not, so a failed or empty step never leaves a restart owed.
func TestReactionsRecordedAhead(t *testing.T) {
	cases := []struct {
		name                     string
		predictPkg, predictFiles bool
		pkgChanged, filesChanged bool
		wantRecord               string
	}{
		{"package changed: the restart stays owed until the process step", true, false, true, false, "restart"},
		{"package predicted, nothing changed: withdrawn", true, false, false, false, ""},
		{"reload drop-in changed: the reload stays owed", false, true, false, true, "reload"},
		{"drop-in predicted, not changed: withdrawn", false, true, false, false, ""},
		{"nothing predicted, nothing changed: nothing recorded", false, false, false, false, ""},
		{"a package change the prediction missed: recorded after its step", false, false, true, false, "restart"},
		{"a drop-in change the prediction missed: recorded after its step", false, false, false, true, "reload"},
		{"both missed: the stronger", false, false, true, true, "restart"},
		{"a reload predicted, a restart happened: the restart", false, true, true, true, "restart"},
		{"a package change missed, a drop-in predicted that did not change: the restart stays", false, true, true, false, "restart"},
		{"a package change predicted that did not happen, the drop-in changed: its reload, not a restart", true, true, false, true, "reload"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var pkgCalls, fileCalls, procCalls []map[string]any
			pending := &fakePending{records: map[string]*durable.Pending{}}
			procChanged := false
			d := Deps{
				Packages: predicted(fakePredict{pkg: c.predictPkg}, fakeModule(rpmexact.Spec(), &c.pkgChanged, &pkgCalls)),
				Files:    plannedModule(override.Spec(), &c.predictFiles, &c.filesChanged, &fileCalls),
				// The process step is the one that would carry the reaction out: here it
				// does nothing, as if the run were killed right before it.
				Processes: fakeModule(lifecycle.Spec(), &procChanged, &procCalls),
				Predict:   fakePredict{pkg: c.predictPkg},
				Pending:   pending,
				Now:       func() (stamp.Stamp, error) { return stamp.Stamp{BootID: "b", Mono: 1}, nil },
			}
			args := map[string]any{"name": "demo",
				"packages":  []any{map[string]any{"name": "demo", "version": "0:1.0-1.noarch"}},
				"dropins":   []any{map[string]any{"unit": "demo", "name": "20.conf", "reload": true, "content": "[Service]\n"}},
				"processes": []any{map[string]any{"unit": "demo"}}}
			out := ansible.Call(context.Background(), Spec(), args, false, false, Handler(d))
			require.Nil(t, out["failed"], out["msg"])
			rec := pending.records["demo.service"]
			if c.wantRecord == "" {
				assert.Nil(t, rec)
			} else {
				require.NotNil(t, rec)
				assert.Equal(t, c.wantRecord, rec.Reaction)
			}
			// The process step got the default wiring's triggers, one per part, named by
			// its reference (until issue 31: "packages", "unit files", "drop-ins", "reload
			// drop-ins").
			require.Len(t, procCalls, 1)
			data, _ := json.Marshal(procCalls[0]["restart_on"])
			assert.Contains(t, string(data), `"package:demo"`)
			data, _ = json.Marshal(procCalls[0]["reload_on"])
			assert.Contains(t, string(data), `"dropin:demo.service/20.conf"`)
		})
	}
}

func TestOrder(t *testing.T) {
	p := func(u string, after ...any) Process { return Process{Unit: u, After: after} }
	got, err := Order([]Process{p("web", "db"), p("db"), p("cache")}, false)
	require.NoError(t, err)
	var names []string
	for _, x := range got {
		names = append(names, x.Unit)
	}
	assert.Equal(t, "db web cache", strings.Join(names, " "))
	got, _ = Order([]Process{p("web", "db"), p("db")}, true)
	assert.Equal(t, "web", got[0].Unit, "removal in reverse")
	_, err = Order([]Process{p("a", "b"), p("b", "a")}, false)
	assert.ErrorContains(t, err, "cycle")
	_, err = Order([]Process{p("a", "zzz")}, false)
	assert.ErrorContains(t, err, "a.service is after zzz.service, which is not a process of this service")
	_, err = Order([]Process{p("a"), p("a.service")}, false)
	assert.ErrorContains(t, err, "declared twice")
}

// The service's plan lists every step's own plan under its name with the reactions recorded
// ahead between them, and check mode reports the same list as the real run.
func TestServicePlanIsTheSameInCheckMode(t *testing.T) {
	planOf := func(check bool) []any {
		changed := true
		var calls []map[string]any
		step := func(spec *ansible.Spec, result map[string]any) Module {
			return fakeModule(spec, &changed, &calls, result)
		}
		d := Deps{
			Packages:  predicted(fakePredict{pkg: true}, step(rpmexact.Spec(), map[string]any{"packages": []any{map[string]any{"name": "demo", "operation": "install-nevra"}}})),
			Files:     step(override.Spec(), map[string]any{"plan": []any{"secure-directory", "record-reload-due", "write", "daemon-reload"}}),
			Processes: step(lifecycle.Spec(), map[string]any{"plan": []any{"enable", "start", "settle 300ms"}}),
			Predict:   fakePredict{pkg: true},
			Pending:   &fakePending{records: map[string]*durable.Pending{}},
			Now:       func() (stamp.Stamp, error) { return stamp.Stamp{BootID: "b", Mono: 1}, nil },
		}
		args := map[string]any{"name": "demo",
			"packages":  []any{map[string]any{"name": "demo", "version": "0:1.0-1.noarch"}},
			"dropins":   []any{map[string]any{"unit": "demo", "name": "20.conf", "reload": true, "content": "[Service]\n"}},
			"processes": []any{map[string]any{"unit": "demo"}}}
		out := ansible.Call(context.Background(), Spec(), args, check, false, Handler(d))
		require.Nil(t, out["failed"], out["msg"])
		return out["plan"].([]any)
	}
	want := []any{
		"record-pending demo.service restart",
		"packages: install-nevra demo-0:1.0-1.noarch",
		"record-pending demo.service restart",
		"file demo.service/20.conf: secure-directory", "file demo.service/20.conf: record-reload-due",
		"file demo.service/20.conf: write", "file demo.service/20.conf: daemon-reload",
		"process demo.service: enable", "process demo.service: start", "process demo.service: settle 300ms",
	}
	assert.Equal(t, want, planOf(false))
	assert.Equal(t, want, planOf(true))
}

// One unit file twice, or one drop-in twice, would be written twice every run (the second
// undoing the first, the process restarted every time): refused, naming the parameter and
// the duplicate, with unit names compared as the modules normalise them.
func TestDuplicateFilesAreRefused(t *testing.T) {
	unit := func(u, description string) any {
		return map[string]any{"unit": u, "content": "[Unit]\nDescription=" + description + "\n"}
	}
	dropin := func(u, name string) any {
		return map[string]any{"unit": u, "name": name, "content": "[Service]\n"}
	}
	cases := []struct {
		name    string
		args    map[string]any
		wantErr string
	}{
		{"one unit twice", map[string]any{"units": []any{unit("foo", "a"), unit("foo.service", "b")}},
			"units[1]: foo.service is already given by units[0]"},
		{"one drop-in twice", map[string]any{"dropins": []any{dropin("foo.service", "10.conf"), dropin("bar", "10.conf"), dropin("foo", "10.conf")}},
			"dropins[2]: foo.service/10.conf is already given by dropins[0]"},
		{"a removal too", map[string]any{"state": "absent", "units": []any{unit("foo.timer", "a"), unit("foo.timer", "a")}},
			"units[1]: foo.timer is already given by units[0]"},
		{"other units, other names, a unit and its drop-in", map[string]any{
			"units":   []any{unit("foo", "a"), unit("foo.socket", "b")},
			"dropins": []any{dropin("foo", "10.conf"), dropin("foo", "20.conf"), dropin("foo.socket", "10.conf")}}, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			args := map[string]any{"name": "demo"}
			for k, v := range c.args {
				args[k] = v
			}
			_, err := Spec().Validate(args)
			if c.wantErr == "" {
				assert.NoError(t, err)
				return
			}
			assert.ErrorContains(t, err, c.wantErr)
		})
	}
}

// stepModule is a module's real parameter contract with a handler that runs during the
// step, as a concurrent run (or the step itself) would act at that moment.
// Its plan (its answer in check mode) is planned.
func stepModule(spec *ansible.Spec, during func(), planned, changed bool) Module {
	return moduleOf(spec, func(_ context.Context, req *ansible.Request) (any, error) {
		if req.CheckMode {
			return map[string]any{"changed": planned}, nil
		}
		during()
		return map[string]any{"changed": changed}, nil
	})
}

// A change the prediction missed is recorded before the next step starts: a run killed in
// that step leaves the reaction it owes for the next run.
func TestUnpredictedChangeIsRecordedBeforeTheNextStep(t *testing.T) {
	pending := &fakePending{records: map[string]*durable.Pending{}}
	var atFiles, atProcess string
	reactionOf := func() string {
		if r := pending.records["demo.service"]; r != nil {
			return r.Reaction
		}
		return ""
	}
	d := Deps{
		Packages:  stepModule(rpmexact.Spec(), func() {}, false, true),
		Files:     stepModule(override.Spec(), func() { atFiles = reactionOf() }, false, true),
		Processes: stepModule(lifecycle.Spec(), func() { atProcess = reactionOf() }, false, false),
		Predict:   fakePredict{},
		Pending:   pending,
		Now:       func() (stamp.Stamp, error) { return stamp.Stamp{BootID: "b", Mono: 1}, nil },
	}
	out := ansible.Call(context.Background(), Spec(), demoArgs(), false, false, Handler(d))
	require.Nil(t, out["failed"], out["msg"])
	assert.Equal(t, "restart", atFiles, "the package change, recorded before the files step")
	assert.Equal(t, "restart", atProcess)
	assert.Contains(t, out["plan"], "record-pending demo.service restart")
}

// The record of a package change the plan missed is stamped when the package's files were
// in place, not after the step: the scriptlet's restart inside the transaction served it,
// and a later stamp had the process restart a second time (soak seeds 20261205 and
// 20261206, kill-supervisor). Without files_placed of this boot the stamp is now.
func TestAMissedPackageChangeIsStampedWhenItsFilesWereInPlace(t *testing.T) {
	for _, tc := range []struct {
		name   string
		result map[string]any
		want   stamp.Stamp
	}{
		{"files_placed given", map[string]any{"changed": true, "package_changed": true,
			"files_placed": map[string]any{"boot_id": "b", "monotonic_us": 5}}, stamp.Stamp{BootID: "b", Mono: 5}},
		{"files_placed absent: now", map[string]any{"changed": true, "package_changed": true}, stamp.Stamp{BootID: "b", Mono: 9}},
		{"files_placed of another boot: now", map[string]any{"changed": true, "package_changed": true,
			"files_placed": map[string]any{"boot_id": "a", "monotonic_us": 5}}, stamp.Stamp{BootID: "b", Mono: 9}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pending := &fakePending{records: map[string]*durable.Pending{}}
			var atFiles *durable.Pending
			d := Deps{
				Packages: moduleOf(rpmexact.Spec(), func(_ context.Context, req *ansible.Request) (any, error) {
					if req.CheckMode {
						return map[string]any{"changed": false}, nil
					}
					return tc.result, nil
				}),
				Files: stepModule(override.Spec(), func() {
					if r := pending.records["demo.service"]; r != nil {
						c := *r
						atFiles = &c
					}
				}, false, true),
				Processes: stepModule(lifecycle.Spec(), func() {}, false, false),
				Predict:   fakePredict{},
				Pending:   pending,
				Now:       func() (stamp.Stamp, error) { return stamp.Stamp{BootID: "b", Mono: 9}, nil },
			}
			out := ansible.Call(context.Background(), Spec(), demoArgs(), false, false, Handler(d))
			require.Nil(t, out["failed"], out["msg"])
			require.NotNil(t, atFiles, "recorded before the files step")
			assert.Equal(t, "restart", atFiles.Reaction)
			assert.Equal(t, tc.want, atFiles.At)
		})
	}
}

func demoArgs() map[string]any {
	return map[string]any{"name": "demo",
		"packages":  []any{map[string]any{"name": "demo", "version": "0:1.0-1.noarch"}},
		"dropins":   []any{map[string]any{"unit": "demo", "name": "20.conf", "reload": true, "content": "[Service]\n"}},
		"processes": []any{map[string]any{"unit": "demo"}}}
}

// A run withdraws the record it wrote when its predicted change did not happen, but only
// while the record is still the one it wrote: a record another run wrote meanwhile (under
// the unit's lock, as this run's) is that run's reaction, and stays.
func TestWithdrawLeavesAnotherRunsRecord(t *testing.T) {
	theirs := durable.Pending{Reaction: "restart", Triggers: []string{"systemd_lifecycle"},
		Since: time.Date(2024, 1, 2, 3, 4, 5, 0, time.UTC), At: stamp.Stamp{BootID: "b", Mono: 7}}
	earlier := durable.Pending{Reaction: "reload", Triggers: []string{"earlier"},
		Since: time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC), At: stamp.Stamp{BootID: "b", Mono: 2}}
	cases := []struct {
		name              string
		earlier           *durable.Pending
		predictPkg        bool
		concurrent        bool
		want              *durable.Pending
		wantWithdrawnPlan bool
	}{
		{"packages unchanged, another run's record meanwhile: theirs stays", nil, true, true, &theirs, false},
		{"drop-in unchanged, another run's record meanwhile: theirs stays", &earlier, false, true, &theirs, false},
		{"packages unchanged, nobody else: withdrawn to nothing", nil, true, false, nil, true},
		{"drop-in unchanged, nobody else: the earlier record back", &earlier, false, false, &earlier, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			pending := &fakePending{records: map[string]*durable.Pending{}}
			if c.earlier != nil {
				e := *c.earlier
				pending.records["demo.service"] = &e
			}
			concurrent := func() {
				if c.concurrent {
					p := theirs
					pending.records["demo.service"] = &p
				}
			}
			pkgDuring, filesDuring := concurrent, func() {}
			if !c.predictPkg {
				pkgDuring, filesDuring = func() {}, concurrent
			}
			d := Deps{
				Packages:  predicted(fakePredict{pkg: c.predictPkg}, stepModule(rpmexact.Spec(), pkgDuring, false, false)),
				Files:     stepModule(override.Spec(), filesDuring, !c.predictPkg, false),
				Processes: stepModule(lifecycle.Spec(), func() {}, false, false),
				Predict:   fakePredict{pkg: c.predictPkg},
				Pending:   pending,
				Now:       func() (stamp.Stamp, error) { return stamp.Stamp{BootID: "b", Mono: 1}, nil },
			}
			out := ansible.Call(context.Background(), Spec(), demoArgs(), false, false, Handler(d))
			require.Nil(t, out["failed"], out["msg"])
			got := pending.records["demo.service"]
			if c.want == nil {
				assert.Nil(t, got)
			} else {
				require.NotNil(t, got)
				assert.Equal(t, *c.want, *got)
			}
			if c.wantWithdrawnPlan {
				assert.Contains(t, out["plan"], "withdraw-pending demo.service")
			} else {
				assert.NotContains(t, out["plan"], "withdraw-pending demo.service")
			}
		})
	}
}

// Unit files and drop-ins written without a manager reload of their own are loaded by the
// first process step; a service without processes reloads the manager itself, once.
func TestPresentReloadsTheManagerWhenNoProcessWill(t *testing.T) {
	cases := []struct {
		name         string
		processes    bool
		filesChanged bool
		syncDue      bool
		check        bool
		wantReload   bool
	}{
		{"files changed, no process: reloaded", false, true, false, false, true},
		{"files changed, no process, check mode: planned, not done", false, true, false, true, true},
		{"nothing changed: no reload", false, false, false, false, false},
		{"an earlier run's change left one due: reloaded", false, false, true, false, true},
		{"a process step will: not here", true, true, false, false, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var calls []map[string]any
			unchanged := false
			reloads := 0
			d := Deps{
				Packages:  fakeModule(rpmexact.Spec(), &unchanged, &calls),
				Files:     fakeModule(override.Spec(), &c.filesChanged, &calls),
				Processes: fakeModule(lifecycle.Spec(), &unchanged, &calls),
				Reload:    func(context.Context) error { reloads++; return nil },
				SyncDue:   func() bool { return c.syncDue },
			}
			args := map[string]any{"name": "plain",
				"units":   []any{map[string]any{"unit": "plain", "content": "[Service]\nExecStart=/bin/true\n"}},
				"dropins": []any{map[string]any{"unit": "plain", "name": "10.conf", "content": "[Service]\n"}}}
			if c.processes {
				args["processes"] = []any{map[string]any{"unit": "plain"}}
			}
			out := ansible.Call(context.Background(), Spec(), args, c.check, false, Handler(d))
			require.Nil(t, out["failed"], out["msg"])
			plan := out["plan"].([]any)
			if !c.wantReload {
				assert.Zero(t, reloads)
				assert.Nil(t, out["manager_reload"])
				assert.NotContains(t, plan, "daemon-reload")
				return
			}
			assert.Equal(t, map[bool]string{true: "planned", false: "performed"}[c.check], out["manager_reload"])
			assert.Equal(t, "daemon-reload", plan[len(plan)-1], "after the files")
			if c.check {
				assert.Zero(t, reloads)
			} else {
				assert.Equal(t, 1, reloads)
			}
		})
	}
}

// A service with packages and no process, whose package move changes unit files: no
// process step syncs the manager, so the service reloads it at its end, and check mode's
// plan says so as the real run's does.
func TestPackageUnitFilesWithoutProcessesPlanTheReloadInBothModes(t *testing.T) {
	args := map[string]any{"name": "pkgs", "packages": []any{map[string]any{"name": "demo", "version": "0:2.0-1.noarch"}}}
	plans := map[bool]any{}
	for _, check := range []bool{true, false} {
		var calls []map[string]any
		changed := true
		reloads := 0
		d := Deps{
			Packages: fakeModule(rpmexact.Spec(), &changed, &calls, map[string]any{"unit_files_changed": true, "daemon_reload": "needed"}),
			Reload:   func(context.Context) error { reloads++; return nil },
		}
		out := ansible.Call(context.Background(), Spec(), args, check, false, Handler(d))
		require.Nil(t, out["failed"], out["msg"])
		assert.Contains(t, out["plan"], "daemon-reload", "check mode %v", check)
		assert.Equal(t, map[bool]string{true: "planned", false: "performed"}[check], out["manager_reload"], "check mode %v", check)
		if check {
			assert.Zero(t, reloads)
		} else {
			assert.Equal(t, 1, reloads)
		}
		plans[check] = out["plan"]
	}
	assert.Equal(t, plans[true], plans[false], "check mode's plan is the real run's")
}

// A real run's plan lists, for each process, the plan the process carried out at its
// turn, made from what the earlier steps really did: here the package's scriptlet restarted
// the unit in the transaction, so the process owes nothing more. Check mode forecast a
// restart from the packages' plan; the real run reports none (and performs none).
func TestTheRealRunReportsTheProcessPlanItCarriedOut(t *testing.T) {
	args := map[string]any{"name": "demo", "packages": []any{map[string]any{"name": "demo", "version": "0:2.0-1.noarch"}},
		"processes": []any{map[string]any{"unit": "demo"}}}
	plans := map[bool]any{}
	for _, check := range []bool{true, false} {
		served := false // the transaction's scriptlet restarted demo.service
		var calls []map[string]any
		changed := true
		pkgs := fakeModule(rpmexact.Spec(), &changed, &calls, map[string]any{"plan": []any{"install-nevra demo-0:2.0-1.noarch"}})
		d := Deps{
			Packages: Module{Spec: pkgs.Spec, Plan: func(ctx context.Context, req *ansible.Request) Step {
				st := pkgs.Plan(ctx, req).(*fakeStep)
				h := st.h
				st.h = func(ctx context.Context, req *ansible.Request) (any, error) {
					served = served || !req.CheckMode
					return h(ctx, req)
				}
				return st
			}},
			Processes: moduleOf(lifecycle.Spec(), func(_ context.Context, req *ansible.Request) (any, error) {
				if served {
					return map[string]any{"changed": false, "plan": []string{}, "reaction": "served"}, nil
				}
				return map[string]any{"changed": true, "plan": []string{"stamp-pending", "restart"}, "reaction": "restart"}, nil
			}),
			Pending: &fakePending{records: map[string]*durable.Pending{}},
			Now:     func() (stamp.Stamp, error) { return stamp.Stamp{BootID: "b", Mono: 1}, nil },
		}
		out := ansible.Call(context.Background(), Spec(), args, check, false, Handler(d))
		require.Nil(t, out["failed"], out["msg"])
		plans[check] = out["plan"]
	}
	assert.Equal(t, []any{"record-pending demo.service restart", "packages: install-nevra demo-0:2.0-1.noarch",
		"process demo.service: stamp-pending", "process demo.service: restart"}, plans[true], "check mode forecasts the restart")
	assert.Equal(t, []any{"record-pending demo.service restart", "packages: install-nevra demo-0:2.0-1.noarch"}, plans[false],
		"the real run lists the plan the process carried out: none")
}

// holdingStep is a packages plan in hand that keeps track of whether it was run or given
// back.
type holdingStep struct {
	plain
	ran, released bool
}

func (s *holdingStep) Names() []string { return []string{"install-nevra demo-0:1.0-1.noarch"} }
func (s *holdingStep) Changes() bool   { return true }
func (s *holdingStep) UnitFiles() bool { return false }
func (s *holdingStep) Err() error      { return nil }
func (s *holdingStep) Release()        { s.released = true }
func (s *holdingStep) Run(context.Context, *ansible.Request) (any, error) {
	s.ran, s.released = true, true
	return map[string]any{"changed": true}, nil
}

// brokenPending cannot read any record.
type brokenPending struct{ fakePending }

func (brokenPending) GetPending(u string) (*durable.Pending, error) {
	return nil, errors.New("corrupt record of " + u)
}

// Composing a plan that fails after the packages plan was made (here: the pending record
// cannot be read) gives that plan back: the transaction lock it holds is not kept past
// the failure. A removal reads its packages plan ahead and gives it back at once (the
// lock is not held across the processes' stops), so a process step that fails leaves no
// packages plan held and none carried out.
func TestAFailedCompositionReleasesThePackagesPlan(t *testing.T) {
	for _, state := range []string{"present", "absent"} {
		t.Run(state, func(t *testing.T) {
			st := &holdingStep{}
			planned := false
			var calls []map[string]any
			yes := true
			d := Deps{
				Packages: Module{Spec: rpmexact.Spec(), Plan: func(context.Context, *ansible.Request) Step {
					planned = true
					return st
				}},
				Files:     fakeModule(override.Spec(), &yes, &calls),
				Processes: fakeModule(lifecycle.Spec(), &yes, &calls),
				Pending:   &brokenPending{fakePending{records: map[string]*durable.Pending{}}},
			}
			args := with(demoArgs(), "state", state)
			absent := state == "absent"
			if absent {
				d.Processes = Module{Spec: lifecycle.Spec(), Plan: func(context.Context, *ansible.Request) Step {
					return failed{err: errors.New("cannot reach systemd")}
				}}
			}
			out := ansible.Call(context.Background(), Spec(), args, false, false, Handler(d))
			require.Equal(t, true, out["failed"], "the run fails")
			assert.False(t, st.ran, "the packages plan was not carried out")
			if absent {
				assert.True(t, planned, "the removal's packages plan is read before any step")
				assert.True(t, st.released, "and given back at once")
				return
			}
			assert.True(t, st.released, "the packages plan was given back")
		})
	}
}

// fileOutcome is one file step's answer: changed, and failed with an error.
type fileOutcome struct{ changed, failed bool }

// filesModule is unit_override's contract with a handler that answers each call in turn.
func filesModule(outcomes ...fileOutcome) Module {
	i := 0
	return moduleOf(override.Spec(), func(_ context.Context, req *ansible.Request) (any, error) {
		if req.CheckMode {
			return map[string]any{"changed": true}, nil // every file's plan writes it
		}
		o := outcomes[i]
		i++
		out := map[string]any{"changed": o.changed}
		if o.failed {
			return out, errors.New("write /etc/systemd/system/demo.service.d/20.conf: no space left on device")
		}
		return out, nil
	})
}

// A file write that failed and left the old file in place withdraws the reaction this run
// recorded ahead for it (only while the record is this run's own): the next run must not
// restart or reload for a change that never happened. A reaction an earlier step of the
// run did change something for stays, and so does an earlier run's record.
func TestAFailedWriteWithdrawsWhatWasRecordedForIt(t *testing.T) {
	earlier := durable.Pending{Reaction: "reload", Triggers: []string{"earlier"},
		Since: time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC), At: stamp.Stamp{BootID: "b", Mono: 2}}
	cases := []struct {
		name       string
		earlier    *durable.Pending
		predictPkg bool
		pkgChanged bool
		unitFile   bool // a unit file of the unit comes before the drop-in
		// restartDropIn: a drop-in without reload comes after the reload one
		restartDropIn bool
		files         []fileOutcome
		want          string // the reaction recorded after the run ("": none)
		wantBack      bool   // the earlier run's record, as it was
	}{
		{name: "the drop-in's write failed, nothing else changed: withdrawn",
			files: []fileOutcome{{failed: true}}},
		{name: "the drop-in's write failed: an earlier run's record put back", earlier: &earlier,
			files: []fileOutcome{{failed: true}}, want: "reload", wantBack: true},
		{name: "the package step moved a version, the drop-in failed: the restart stays",
			predictPkg: true, pkgChanged: true, files: []fileOutcome{{failed: true}}, want: "restart"},
		{name: "the unit file was written, its drop-in failed: the unit file's restart stays",
			unitFile: true, files: []fileOutcome{{changed: true}, {failed: true}}, want: "restart"},
		{name: "the unit file failed: the drop-in after it was never written, withdrawn",
			unitFile: true, files: []fileOutcome{{failed: true}}},
		{name: "an error after the rename (the change reported): the reload stays",
			files: []fileOutcome{{changed: true, failed: true}}, want: "reload"},
		{name: "the reload drop-in was written, a restart drop-in after it failed: the reload only",
			restartDropIn: true, files: []fileOutcome{{changed: true}, {failed: true}}, want: "reload"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			pending := &fakePending{records: map[string]*durable.Pending{}}
			if c.earlier != nil {
				e := *c.earlier
				pending.records["demo.service"] = &e
			}
			var calls []map[string]any
			unchanged := false
			d := Deps{
				Packages:  predicted(fakePredict{pkg: c.predictPkg}, fakeModule(rpmexact.Spec(), &c.pkgChanged, &calls)),
				Files:     filesModule(c.files...),
				Processes: fakeModule(lifecycle.Spec(), &unchanged, &calls),
				Predict:   fakePredict{pkg: c.predictPkg},
				Pending:   pending,
				Now:       func() (stamp.Stamp, error) { return stamp.Stamp{BootID: "b", Mono: 5}, nil },
			}
			args := demoArgs()
			if c.unitFile {
				args["units"] = []any{map[string]any{"unit": "demo", "content": "[Service]\nExecStart=/bin/true\n"}}
			}
			if c.restartDropIn {
				args["dropins"] = append(args["dropins"].([]any), map[string]any{"unit": "demo", "name": "30.conf", "content": "[Service]\n"})
			}
			out := ansible.Call(context.Background(), Spec(), args, false, false, Handler(d))
			require.Equal(t, true, out["failed"])
			assert.Contains(t, out["failed_step"], "file demo.service")
			got := pending.records["demo.service"]
			switch {
			case c.want == "":
				assert.Nil(t, got, "a reaction for a write that never happened")
				assert.Contains(t, out["plan"], "withdraw-pending demo.service")
				assert.Nil(t, out["recorded"])
			case c.wantBack:
				require.NotNil(t, got)
				assert.Equal(t, *c.earlier, *got)
			default:
				require.NotNil(t, got)
				assert.Equal(t, c.want, got.Reaction)
				assert.NotContains(t, out["plan"], "withdraw-pending demo.service")
			}
		})
	}
}

// fakeClock is systemd's clock on one boot: every reading and every event is one tick on.
type fakeClock struct{ mono uint64 }

func (c *fakeClock) now() (stamp.Stamp, error) {
	c.mono++
	return stamp.Stamp{BootID: "b", Mono: c.mono}, nil
}
func (c *fakeClock) tick() uint64 { c.mono++; return c.mono }

// A record written ahead covers changes made after it; an activation between the record and
// a change must not serve it. Here the package move restarts the unit (its scriptlet's
// restart lands as the files step begins) and the reload drop-in is written after that
// restart; the run is killed before its process step. The record must be stamped after
// the drop-in's write, so the next run finds the reaction still due instead of served by
// the restart that came before the drop-in.
func TestTheRecordIsStampedAfterEachChangeItCovers(t *testing.T) {
	clock := &fakeClock{}
	pending := &fakePending{records: map[string]*durable.Pending{}}
	var activeEnter, written uint64
	killed := false
	d := Deps{
		Packages: predicted(fakePredict{pkg: true}, stepModule(rpmexact.Spec(), func() {}, true, true)),
		Files: stepModule(override.Spec(), func() {
			activeEnter = clock.tick() // the package's restart, done
			written = clock.tick()     // the drop-in's rename
		}, true, true),
		Processes: stepModule(lifecycle.Spec(), func() { killed = true }, false, false),
		Predict:   fakePredict{pkg: true},
		Pending:   pending,
		Now:       clock.now,
	}
	out := ansible.Call(context.Background(), Spec(), demoArgs(), false, false, Handler(d))
	require.Nil(t, out["failed"], out["msg"])
	require.True(t, killed)
	rec := pending.records["demo.service"]
	require.NotNil(t, rec)
	assert.Equal(t, "restart", rec.Reaction, "restart beats reload")
	assert.Less(t, rec.At.Mono, activeEnter, "the package's restart keeps the stamp from before the package step")
	require.NotNil(t, rec.ReloadAt)
	assert.Greater(t, rec.ReloadAt.Mono, written, "the drop-in's reload is stamped after its write")

	// The next run: the unit has been active since the package's restart, which served the
	// package and not the drop-in written after it.
	now, _ := clock.now()
	assert.False(t, rec.ServedBy(now, true, activeEnter), "a restart before the drop-in's write does not serve its reload")
	prep := lifecycle.Prepare(lifecycle.Want{Unit: "demo.service", Running: true, ReloadOn: true}, reaction.Triggers{},
		lifecycle.Observation{Pending: rec, Now: now, Unit: systemd.Props{LoadState: "loaded", ActiveState: "active", SubState: "running", ActiveEnterMono: activeEnter, CanReload: true}})
	assert.False(t, prep.Served)
	assert.Equal(t, reaction.Reload, prep.Due, "the drop-in's reload stays due; the package's restart is not done twice")
}
