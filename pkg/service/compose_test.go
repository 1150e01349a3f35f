package service

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/richt/services/pkg/ansible"
	"github.com/richt/services/pkg/durable"
	"github.com/richt/services/pkg/lifecycle"
	"github.com/richt/services/pkg/override"
	"github.com/richt/services/pkg/rpmexact"
	"github.com/richt/services/pkg/stamp"
)

// recorder is a set of strict step modules. Each keeps count of the plans asked of it and
// every plan and run in order (events); a plan in hand, when it runs in a real run, fails
// the test unless it is the step's only plan, with the arguments the step was planned
// with, run once and not after it was released. So a step planned again inside the apply
// (as a handler called for real plans again) fails the test, and so does a process
// planned (which contacts systemd) before the packages step ran.
type recorder struct {
	t       *testing.T
	plans   map[string]int // plans asked per step
	planned []string       // steps, in the order their first plans were asked for
	args    map[string]map[string]any
	applied []string
	events  []string // "plan STEP" and "run STEP", in order (real runs)
	// again are the steps planned a second time at their turn (a removal's packages: read
	// ahead, planned again under the transaction lock); steps are every plan made.
	again map[string]bool
	steps []*strictStep
}

// module is a strict step module: name names the step of a request, plan gives its plan's
// entries and whether it changes anything, result its result.
func (rc *recorder) module(spec *ansible.Spec, name func(ansible.Values) string, plan func(req *ansible.Request) ([]string, bool), result func(step string) map[string]any) Module {
	return Module{Spec: spec, Plan: func(_ context.Context, req *ansible.Request) Step {
		step := name(req.Params)
		rc.plans[step]++
		rc.events = append(rc.events, "plan "+step)
		if rc.plans[step] == 1 {
			rc.planned = append(rc.planned, step)
			rc.args[step] = withoutTriggers(req.Params)
		}
		names, changes := plan(req)
		st := &strictStep{rc: rc, step: step, nth: rc.plans[step], names: names, changes: changes, out: result(step)}
		rc.steps = append(rc.steps, st)
		return st
	}}
}

type strictStep struct {
	plain
	rc            *recorder
	step          string
	nth           int
	names         []string
	changes       bool
	out           map[string]any
	ran, released bool
}

func (s *strictStep) Names() []string { return s.names }
func (s *strictStep) Changes() bool   { return s.changes }
func (s *strictStep) UnitFiles() bool { return s.changes && !strings.HasPrefix(s.step, "process ") }
func (s *strictStep) Err() error      { return nil }
func (s *strictStep) Release()        { s.released = true }

func (s *strictStep) Run(_ context.Context, req *ansible.Request) (any, error) {
	t, rc := s.rc.t, s.rc
	if s.ran || s.released {
		t.Errorf("%s: a plan run twice, or after it was given back", s.step)
	}
	s.ran = true
	out := maps.Clone(s.out)
	out["plan"] = s.names
	if req.CheckMode {
		return out, nil
	}
	rc.events = append(rc.events, "run "+s.step)
	want := 1
	if rc.again[s.step] {
		want = 2
	}
	if n := rc.plans[s.step]; n != want || s.nth != n {
		t.Errorf("%s: planned %d times when it ran (plan %d carried out); a real run carries out the one plan it holds", s.step, n, s.nth)
	}
	for _, o := range rc.steps {
		if o != s && o.step == s.step && !o.released {
			t.Errorf("%s: plan %d was not given back before plan %d ran", s.step, o.nth, s.nth)
		}
	}
	assert.Equal(t, rc.args[s.step], withoutTriggers(req.Params), "%s applied with the arguments it was planned with", s.step)
	rc.applied = append(rc.applied, s.step)
	return out, nil
}

// wantOf is rpm_exact's request for the packages step's arguments.
func wantOf(t *testing.T, req *ansible.Request) rpmexact.Want {
	task, err := ansible.Parsed[rpmexact.Task](req)
	require.NoError(t, err)
	return task.Want
}

// withoutTriggers are a step's arguments without the triggers, which a real run takes
// from the earlier steps' results rather than their plans.
func withoutTriggers(v ansible.Values) map[string]any {
	out := map[string]any{}
	for k, x := range v {
		if k != "restart_on" && k != "reload_on" {
			out[k] = x
		}
	}
	return out
}

// strictPending fails the test on a record the plan does not name.
type strictPending struct {
	fakePending
	t    *testing.T
	plan *[]any
}

func (s *strictPending) SetPending(u string, p durable.Pending) error {
	if !slices.Contains(*s.plan, any(fmt.Sprintf("record-pending %s %s", u, p.Reaction))) {
		s.t.Errorf("apply recorded %s %s, which the plan %v does not name", u, p.Reaction, *s.plan)
	}
	return s.fakePending.SetPending(u, p)
}

// The service's plan is composed from its steps' plans before anything changes: check
// mode reports it, and the real run that follows reports the same plan and carries out
// exactly its steps, with the arguments they were planned with, records only what it
// names and reloads the manager only when it says so.
func TestComposedPlanIsTheAppliedPlan(t *testing.T) {
	dropin := map[string]any{"unit": "demo", "name": "20.conf", "reload": true, "content": "[Service]\n"}
	cases := []struct {
		name      string
		args      map[string]any
		pkg       bool // the packages plan runs a transaction
		files     bool // every file's plan changes it
		wantSteps []string
		wantPlan  []any
		// wantEvents are the real run's plans and runs, in order: in a present run a
		// process is planned at its turn, never before the packages and files steps ran;
		// a removal plans every step before its first runs.
		wantEvents []string
		// again is a step planned a second time at its turn ("packages" in a removal).
		again string
	}{
		{name: "a clean host: install, write, start",
			args: demoArgs(), pkg: true, files: true,
			wantSteps: []string{"packages", "file demo.service/20.conf", "process demo.service"},
			wantPlan: []any{"record-pending demo.service restart", "packages: install-nevra demo-0:1.0-1.noarch",
				"record-pending demo.service restart", "file demo.service/20.conf: write", "process demo.service: start"},
			wantEvents: []string{"plan packages", "plan file demo.service/20.conf", "run packages", "run file demo.service/20.conf",
				"plan process demo.service", "run process demo.service"}},
		{name: "converged: every step checked, nothing planned",
			args:      demoArgs(),
			wantSteps: []string{"packages", "file demo.service/20.conf", "process demo.service"},
			wantPlan:  []any{},
			wantEvents: []string{"plan packages", "plan file demo.service/20.conf", "run packages", "run file demo.service/20.conf",
				"plan process demo.service", "run process demo.service"}},
		{name: "a drop-in only: its reload recorded ahead of the files",
			args: demoArgs(), files: true,
			wantSteps: []string{"packages", "file demo.service/20.conf", "process demo.service"},
			wantPlan:  []any{"record-pending demo.service reload", "file demo.service/20.conf: write", "process demo.service: start"},
			wantEvents: []string{"plan packages", "plan file demo.service/20.conf", "run packages", "run file demo.service/20.conf",
				"plan process demo.service", "run process demo.service"}},
		{name: "configs: recorded ahead of them, written between the packages and the files",
			args: with(demoArgs(), "configs", []any{siteConfig("site")}), pkg: true, files: true,
			wantSteps: []string{"packages", "file demo.service/20.conf", "process demo.service"},
			wantPlan: []any{"record-pending demo.service restart", "packages: install-nevra demo-0:1.0-1.noarch",
				"record-pending demo.service restart", "config site: write",
				"record-pending demo.service restart", "file demo.service/20.conf: write", "process demo.service: start"},
			wantEvents: []string{"plan packages", "plan file demo.service/20.conf", "run packages", "run file demo.service/20.conf",
				"plan process demo.service", "run process demo.service"}},
		{name: "by name: the config's reload only, nothing for the package or the drop-in",
			args: with(with(demoArgs(), "configs", []any{siteConfig("site")}), "processes",
				[]any{map[string]any{"unit": "demo", "reload_on": []any{"config:site"}}}), pkg: true, files: true,
			wantSteps: []string{"packages", "file demo.service/20.conf", "process demo.service"},
			wantPlan: []any{"packages: install-nevra demo-0:1.0-1.noarch",
				"record-pending demo.service reload", "config site: write",
				"file demo.service/20.conf: write", "process demo.service: start"},
			wantEvents: []string{"plan packages", "plan file demo.service/20.conf", "run packages", "run file demo.service/20.conf",
				"plan process demo.service", "run process demo.service"}},
		{name: "files without processes: the service's own manager reload",
			args: map[string]any{"name": "demo", "dropins": []any{dropin}}, files: true,
			wantSteps:  []string{"file demo.service/20.conf"},
			wantPlan:   []any{"file demo.service/20.conf: write", "daemon-reload"},
			wantEvents: []string{"plan file demo.service/20.conf", "run file demo.service/20.conf"}},
		{name: "a removal: processes, files, packages, then the reload",
			args: with(demoArgs(), "state", "absent"), pkg: true, files: true,
			wantSteps: []string{"process demo.service", "file demo.service/20.conf", "packages"},
			wantPlan: []any{"process demo.service: start", "file demo.service/20.conf: write",
				"packages: remove demo", "daemon-reload"},
			again: "packages",
			wantEvents: []string{"plan packages", "plan process demo.service", "plan file demo.service/20.conf",
				"run process demo.service", "run file demo.service/20.conf", "plan packages", "run packages"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			run := func(check bool) (map[string]any, *recorder, int) {
				rc := &recorder{t: t, plans: map[string]int{}, args: map[string]map[string]any{}, again: map[string]bool{c.again: c.again != ""}}
				var plan []any
				pending := &strictPending{fakePending: fakePending{records: map[string]*durable.Pending{}}, t: t, plan: &plan}
				reloads := 0
				yes := func(names ...string) func(*ansible.Request) ([]string, bool) {
					return func(*ansible.Request) ([]string, bool) { return names, len(names) > 0 }
				}
				when := func(b bool, names ...string) func(*ansible.Request) ([]string, bool) {
					if !b {
						return yes()
					}
					return yes(names...)
				}
				d := Deps{
					Packages: rc.module(rpmexact.Spec(), func(ansible.Values) string { return "packages" },
						func(req *ansible.Request) ([]string, bool) {
							p, err := fakePredict{pkg: c.pkg}.PlanPackages(context.Background(), wantOf(t, req))
							require.NoError(t, err)
							return p.Names(), p.Changes()
						},
						func(string) map[string]any { return map[string]any{"changed": c.pkg, "package_changed": c.pkg} }),
					Files: rc.module(override.Spec(), func(v ansible.Values) string {
						return fmt.Sprintf("file %s/%s", unitOf(v.String("unit")), v.String("name"))
					}, when(c.files, "write"),
						func(string) map[string]any { return map[string]any{"changed": c.files} }),
					Processes: rc.module(lifecycle.Spec(), func(v ansible.Values) string { return "process " + unitOf(v.String("unit")) },
						when(c.pkg || c.files, "start"),
						func(string) map[string]any { return map[string]any{"changed": c.pkg || c.files} }),
					Configs: &fakeConfigs{write: c.files},
					Predict: fakePredict{pkg: c.pkg},
					Pending: pending,
					Reload: func(context.Context) error {
						if !slices.Contains(plan, any("daemon-reload")) {
							t.Errorf("apply reloaded the manager, which the plan %v does not name", plan)
						}
						reloads++
						return nil
					},
					Now: func() (stamp.Stamp, error) { return stamp.Stamp{BootID: "b", Mono: 1}, nil },
				}
				h := Handler(d)
				// The strict fakes read the plan as the run composed it: a handler wrapped to
				// publish it before the steps are applied is not available, so the check
				// run's plan stands in for it (it must be the same, asserted below).
				if !check {
					check := ansible.Call(context.Background(), Spec(), c.args, true, false, Handler(d))
					plan, _ = check["plan"].([]any)
					rc.planned, rc.events, rc.steps = nil, nil, nil
					clear(rc.args)
					clear(rc.plans)
				}
				out := ansible.Call(context.Background(), Spec(), c.args, check, false, h)
				return out, rc, reloads
			}
			check, _, _ := run(true)
			require.Nil(t, check["failed"], check["msg"])
			real, rc, reloads := run(false)
			require.Nil(t, real["failed"], real["msg"])
			assert.Equal(t, c.wantPlan, check["plan"])
			assert.Equal(t, check["plan"], real["plan"], "check mode's plan is the real run's")
			assert.Equal(t, c.wantSteps, rc.applied, "the real run carries out exactly the planned steps, in order")
			assert.ElementsMatch(t, rc.planned, rc.applied, "each step planned, then applied once")
			assert.Equal(t, c.wantEvents, rc.events, "what the real run planned and ran, in order")
			assert.Equal(t, slices.Contains(c.wantPlan, any("daemon-reload")), reloads == 1)
		})
	}
}
