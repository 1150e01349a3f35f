package playbooks_test

import (
	"os/exec"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The role and the service module in a play of its own, on every controller the collection
// declares (ansible-core 2.14 and 2.19), over SSH: converge from clean, idempotence, check
// mode of a pin move (predicted, nothing changed), and the move itself with one restart.
func TestRoleAndServiceModuleOnEveryController(t *testing.T) {
	for _, c := range controllers {
		for _, path := range []string{"demo.yml", "testdata/service.yml"} {
			t.Run(c.name+"/"+path, func(t *testing.T) {
				t.Parallel()
				if _, err := exec.LookPath(c.command); err != nil {
					t.Fatalf("%s not found (make test runs .ci/setup-host, which installs it): %v", c.command, err)
				}
				tg := target(t)
				p := play(t, path, tg)
				p.Connection, p.Command = "ssh", c.command

				r := p.RunOK(t)
				require.Positive(t, r.Changed())
				s := tg.Snapshot(t, "demo.service")
				require.Equal(t, "active", s.ActiveState)
				require.Equal(t, "enabled", s.UnitFileState)

				r = p.RunOK(t)
				assert.Zero(t, r.Changed(), "idempotent: %v", r.ChangedTasks)

				check := p
				check.ExtraVars = map[string]any{"demo_version": "0:2.0-1.noarch"}
				check.Args = []string{"--check"}
				r = check.RunOK(t)
				assert.Positive(t, r.Changed(), "check mode predicts the move")
				assert.Contains(t, tg.MustExec(t, "rpm", "-q", "demo"), "demo-1.0-1", "and changes nothing")

				move := p
				move.ExtraVars = check.ExtraVars
				r = move.RunOK(t)
				assert.Contains(t, summaryLines(r.Output, tg.Name()), "demo.service: restart (package:demo 1.0-1 → 2.0-1)",
					"the action plugin prints what happened on this controller too")
				assert.Contains(t, tg.MustExec(t, "rpm", "-q", "demo"), "demo-2.0-1")
				starts, _ := events(t, tg)
				assert.Equal(t, 2, starts, "the start, then one restart for the package change")
			})
		}
	}
}
