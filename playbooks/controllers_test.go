package playbooks_test

import (
	"os/exec"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/richt/services/testenv"
)

// The role and the service module in a play of its own, on both controllers the collection
// declares (ansible-core 2.14 and 2.19), over SSH: converge from clean, idempotence, check
// mode of a pin move (predicted, nothing changed), and the move itself with one restart.
// The controllers take turns on one target per play: each converges from clean and makes
// a move with its summary line in one of the plays, and the idempotence run is always the
// other controller's, so it also shows that both hand the module the same arguments
// (docs/testenv.md, "One controller or both").
func TestRoleAndServiceModuleOnEveryController(t *testing.T) {
	for _, c := range controllers {
		if _, err := exec.LookPath(c.command); err != nil {
			t.Fatalf("%s not found (make test runs .ci/setup-host, which installs it): %v", c.command, err)
		}
	}
	for i, path := range []string{"demo.yml", "testdata/service.yml"} {
		first, second := controllers[i%2], controllers[(i+1)%2]
		t.Run(path, func(t *testing.T) {
			t.Parallel()
			tg := target(t)
			p := play(t, path, tg)
			p.Connection = "ssh"
			on := func(c controller, p testenv.Playbook) testenv.Playbook {
				p.Command = c.command
				return p
			}

			r := on(first, p).RunOK(t)
			require.Positive(t, r.Changed(), "converge from clean on %s", first.name)
			s := tg.Snapshot(t, "demo.service")
			require.Equal(t, "active", s.ActiveState)
			require.Equal(t, "enabled", s.UnitFileState)

			r = on(second, p).RunOK(t)
			assert.Zero(t, r.Changed(), "idempotent on %s after %s's converge: %v", second.name, first.name, r.ChangedTasks)

			check := on(first, p)
			check.ExtraVars = map[string]any{"demo_version": "0:2.0-1.noarch"}
			check.Args = []string{"--check"}
			r = check.RunOK(t)
			assert.Positive(t, r.Changed(), "check mode predicts the move on %s", first.name)
			assert.Contains(t, tg.MustExec(t, "rpm", "-q", "demo"), "demo-1.0-1", "and changes nothing")

			move := on(second, p)
			move.ExtraVars = check.ExtraVars
			r = move.RunOK(t)
			assert.Contains(t, summaryLines(r.Output, tg.Name()), "demo.service: restart (package:demo 1.0-1 → 2.0-1)",
				"the action plugin prints what happened on %s too", second.name)
			assert.Contains(t, tg.MustExec(t, "rpm", "-q", "demo"), "demo-2.0-1")
			starts, _ := events(t, tg)
			assert.Equal(t, 2, starts, "the start, then one restart for the package change")
		})
	}
}
