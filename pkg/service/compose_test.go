package service

import (
	"context"
	"fmt"
	"slices"
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

// recorder is a step module that plans (check mode) what a table row says and, called for
// real, fails the test unless the call is the next step the plan was composed from, with
// the arguments it was planned with; it answers with the plan's result.
type recorder struct {
	t       *testing.T
	planned []string // step names, in the order their plans were asked for
	args    map[string]map[string]any
	applied []string
}

func (rc *recorder) module(spec *ansible.Spec, name func(ansible.Values) string, result func(step string) map[string]any) Module {
	return Module{Spec: spec, Handler: func(_ context.Context, req *ansible.Request) (any, error) {
		step := name(req.Params)
		out := result(step)
		if req.CheckMode {
			rc.planned = append(rc.planned, step)
			rc.args[step] = withoutTriggers(req.Params)
			return out, nil
		}
		if !slices.Contains(rc.planned, step) {
			rc.t.Errorf("apply called %s, which no plan named", step)
		}
		got := withoutTriggers(req.Params)
		if step == "packages" {
			got = map[string]any{"want": wantOf(rc.t, req)}
		}
		assert.Equal(rc.t, rc.args[step], got, "%s applied with the arguments it was planned with", step)
		rc.applied = append(rc.applied, step)
		return out, nil
	}}
}

// wantOf is rpm_exact's request for the packages step's arguments.
func wantOf(t *testing.T, req *ansible.Request) rpmexact.Want {
	task, err := ansible.Parsed[rpmexact.Task](req)
	require.NoError(t, err)
	return task.Want
}

// recordedPredict plans the packages step as fakePredict does, and tells the recorder.
type recordedPredict struct {
	fakePredict
	rc *recorder
}

func (p recordedPredict) PlanPackages(ctx context.Context, w rpmexact.Want) (rpmexact.Plan, error) {
	p.rc.planned = append(p.rc.planned, "packages")
	p.rc.args["packages"] = map[string]any{"want": w}
	return p.fakePredict.PlanPackages(ctx, w)
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
	}{
		{name: "a clean host: install, write, start",
			args: demoArgs(), pkg: true, files: true,
			wantSteps: []string{"packages", "file demo.service/20.conf", "process demo.service"},
			wantPlan: []any{"record-pending demo.service restart", "packages: install-nevra demo-0:1.0-1.noarch",
				"record-pending demo.service restart", "file demo.service/20.conf: write", "process demo.service: start"}},
		{name: "converged: every step checked, nothing planned",
			args:      demoArgs(),
			wantSteps: []string{"packages", "file demo.service/20.conf", "process demo.service"},
			wantPlan:  []any{}},
		{name: "a drop-in only: its reload recorded ahead of the files",
			args: demoArgs(), files: true,
			wantSteps: []string{"packages", "file demo.service/20.conf", "process demo.service"},
			wantPlan:  []any{"record-pending demo.service reload", "file demo.service/20.conf: write", "process demo.service: start"}},
		{name: "files without processes: the service's own manager reload",
			args: map[string]any{"name": "demo", "dropins": []any{dropin}}, files: true,
			wantSteps: []string{"file demo.service/20.conf"},
			wantPlan:  []any{"file demo.service/20.conf: write", "daemon-reload"}},
		{name: "a removal: processes, files, packages, then the reload",
			args: with(demoArgs(), "state", "absent"), pkg: true, files: true,
			wantSteps: []string{"process demo.service", "file demo.service/20.conf", "packages"},
			wantPlan: []any{"process demo.service: start", "file demo.service/20.conf: write",
				"packages: remove demo", "daemon-reload"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			run := func(check bool) (map[string]any, *recorder, int) {
				rc := &recorder{t: t, args: map[string]map[string]any{}}
				var plan []any
				pending := &strictPending{fakePending: fakePending{records: map[string]*durable.Pending{}}, t: t, plan: &plan}
				reloads := 0
				planOf := func(yes bool, steps ...any) map[string]any {
					if !yes {
						return map[string]any{"changed": false, "plan": []any{}}
					}
					return map[string]any{"changed": true, "plan": steps}
				}
				d := Deps{
					Packages: rc.module(rpmexact.Spec(), func(ansible.Values) string { return "packages" },
						func(string) map[string]any { return map[string]any{"changed": c.pkg, "package_changed": c.pkg} }),
					Files: rc.module(override.Spec(), func(v ansible.Values) string {
						return fmt.Sprintf("file %s/%s", unitOf(v.String("unit")), v.String("name"))
					},
						func(string) map[string]any { return planOf(c.files, "write") }),
					Processes: rc.module(lifecycle.Spec(), func(v ansible.Values) string { return "process " + unitOf(v.String("unit")) },
						func(string) map[string]any { return planOf(c.pkg || c.files, "start") }),
					Predict: recordedPredict{fakePredict{pkg: c.pkg}, rc},
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
					rc.planned = nil
					clear(rc.args)
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
			assert.Equal(t, rc.planned, rc.applied, "each step planned once, applied once")
			assert.Equal(t, slices.Contains(c.wantPlan, any("daemon-reload")), reloads == 1)
		})
	}
}
