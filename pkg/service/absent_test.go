package service

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/richt/services/pkg/ansible"
	"github.com/richt/services/pkg/lifecycle"
	"github.com/richt/services/pkg/override"
	"github.com/richt/services/pkg/rpmexact"
)

// removingStep is a removal's packages plan as read at one moment: what is installed then.
type removingStep struct {
	plain
	names         []string
	ran, released bool
}

func (s *removingStep) Names() []string { return s.names }
func (s *removingStep) Changes() bool   { return len(s.names) > 0 }
func (s *removingStep) UnitFiles() bool { return false }
func (s *removingStep) Err() error      { return nil }
func (s *removingStep) Release()        { s.released = true }
func (s *removingStep) Run(context.Context, *ansible.Request) (any, error) {
	s.ran, s.released = true, true
	return map[string]any{"changed": true, "package_changed": true, "plan": s.names}, nil
}

// A removal plans its packages' removal before its first step, but takes the transaction
// lock only at the packages' turn, after the processes' stops: when another transaction
// moved the packages in between, the plan made then is not the one reported, and the
// step fails naming both, removing nothing. The same removal with nothing moved in between
// carries out the plan it reported.
func TestARemovalFailsWhenThePackagesMovedSinceItsPlan(t *testing.T) {
	for _, moved := range []bool{false, true} {
		name := "nothing moved"
		if moved {
			name = "another transaction moved demo"
		}
		t.Run(name, func(t *testing.T) {
			installed := "remove demo-0:1.0-1.noarch"
			var plans []*removingStep
			yes := true
			var calls []map[string]any
			procs := fakeModule(lifecycle.Spec(), &yes, &calls)
			d := Deps{
				Packages: Module{Spec: rpmexact.Spec(), Plan: func(context.Context, *ansible.Request) Step {
					st := &removingStep{names: []string{installed}}
					plans = append(plans, st)
					return st
				}},
				Files: fakeModule(override.Spec(), &yes, &calls),
				Processes: onRun(procs, func() {
					if moved {
						// Someone's dnf upgrade while the process stops.
						installed = "remove demo-0:2.0-1.noarch"
					}
				}),
			}
			args := with(demoArgs(), "state", "absent")
			check := ansible.Call(context.Background(), Spec(), args, true, false, Handler(d))
			require.Nil(t, check["failed"], check["msg"])
			plans = nil
			out := ansible.Call(context.Background(), Spec(), args, false, false, Handler(d))
			require.Len(t, plans, 2, "read ahead, then planned again under the lock at its turn")
			assert.True(t, plans[0].released && !plans[0].ran, "the plan read ahead is given back at once")
			assert.Contains(t, out["plan"], "packages: remove demo-0:1.0-1.noarch", "the reported plan is the one read ahead")
			assert.Equal(t, check["plan"], out["plan"], "check mode's plan")
			if !moved {
				require.Nil(t, out["failed"], out["msg"])
				assert.True(t, plans[1].ran, "the plan made under the lock is carried out")
				return
			}
			require.Equal(t, true, out["failed"])
			assert.Equal(t, "packages", out["failed_step"])
			assert.Contains(t, out["msg"], "its plan was remove demo-0:1.0-1.noarch")
			assert.Contains(t, out["msg"], "it is remove demo-0:2.0-1.noarch now")
			assert.Contains(t, out["msg"], "nothing was removed")
			assert.False(t, plans[1].ran, "nothing removed")
			assert.True(t, plans[1].released, "the transaction lock given back")
			assert.Nil(t, out["packages"], "the packages step did not run")
			assert.Equal(t, "performed", out["manager_reload"], "the files removed before it are forgotten by the manager")
		})
	}
}
