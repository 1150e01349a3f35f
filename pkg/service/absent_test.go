package service

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/richt/services/pkg/ansible"
	"github.com/richt/services/pkg/lifecycle"
	"github.com/richt/services/pkg/override"
	"github.com/richt/services/pkg/rollback"
	"github.com/richt/services/pkg/rpmexact"
)

// removingStep is a removal's packages plan as read at one moment: what is installed then.
type removingStep struct {
	plain
	installed     []string
	ran, released bool
}

func (s *removingStep) Names() []string {
	if len(s.installed) == 0 {
		return []string{}
	}
	return []string{"remove demo"}
}
func (s *removingStep) Befores() ([]rollback.Package, bool) {
	if len(s.installed) == 0 {
		return nil, true
	}
	return []rollback.Package{{Name: "demo", Before: s.installed}}, true
}
func (s *removingStep) Changes() bool   { return len(s.installed) > 0 }
func (s *removingStep) UnitFiles() bool { return false }
func (s *removingStep) Err() error      { return nil }
func (s *removingStep) Release()        { s.released = true }
func (s *removingStep) Run(context.Context, *ansible.Request) (any, error) {
	s.ran, s.released = true, true
	return map[string]any{"changed": true, "package_changed": true, "plan": s.Names()}, nil
}

// A removal plans its packages' removal before its first step, but takes the transaction
// lock only at the packages' turn, after the processes' stops: when another transaction
// moved the packages in between (another build now, or none), the plan made then is not
// the one reported, and the step fails naming both, removing nothing. The same removal
// with nothing moved in between carries out the plan it reported.
func TestARemovalFailsWhenThePackagesMovedSinceItsPlan(t *testing.T) {
	const old, upgraded = "demo-0:1.0-1.noarch", "demo-0:2.0-1.noarch"
	for _, c := range []struct {
		name string
		now  []string // installed once the processes stopped
		msg  string   // what the failure says is there now ("": no failure)
	}{
		{name: "nothing moved", now: []string{old}},
		{name: "another transaction upgraded demo", now: []string{upgraded},
			msg: "it is remove demo (installed: " + upgraded + ") now"},
		{name: "another transaction removed demo", now: nil, msg: "it is to do nothing now"},
	} {
		t.Run(c.name, func(t *testing.T) {
			installed := []string{old}
			var plans []*removingStep
			yes := true
			var calls []map[string]any
			procs := fakeModule(lifecycle.Spec(), &yes, &calls)
			d := Deps{
				Packages: Module{Spec: rpmexact.Spec(), Plan: func(context.Context, *ansible.Request) Step {
					st := &removingStep{installed: installed}
					plans = append(plans, st)
					return st
				}},
				Files: fakeModule(override.Spec(), &yes, &calls),
				// Someone's dnf while the process stops.
				Processes: onRun(procs, func() { installed = c.now }),
			}
			args := with(demoArgs(), "state", "absent")
			check := ansible.Call(context.Background(), Spec(), args, true, false, Handler(d))
			require.Nil(t, check["failed"], check["msg"])
			plans = nil
			out := ansible.Call(context.Background(), Spec(), args, false, false, Handler(d))
			require.Len(t, plans, 2, "read ahead, then planned again under the lock at its turn")
			assert.True(t, plans[0].released && !plans[0].ran, "the plan read ahead is given back at once")
			assert.Contains(t, out["plan"], "packages: remove demo", "the reported plan is the one read ahead")
			assert.Equal(t, check["plan"], out["plan"], "check mode's plan")
			if c.msg == "" {
				require.Nil(t, out["failed"], out["msg"])
				assert.True(t, plans[1].ran, "the plan made under the lock is carried out")
				return
			}
			require.Equal(t, true, out["failed"])
			assert.Equal(t, "packages", out["failed_step"])
			assert.Contains(t, out["msg"], "its plan was remove demo (installed: "+old+")")
			assert.Contains(t, out["msg"], c.msg)
			assert.Contains(t, out["msg"], "nothing was removed")
			assert.False(t, plans[1].ran, "nothing removed")
			assert.True(t, plans[1].released, "the transaction lock given back")
			assert.Nil(t, out["packages"], "the packages step did not run")
			assert.Equal(t, "performed", out["manager_reload"], "the files removed before it are forgotten by the manager")
		})
	}
}
