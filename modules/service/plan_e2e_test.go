package service_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The service's plan is composed from its steps' plans before anything changes, so check
// mode's plan is the plan of the real run that follows: on a clean host, and on a pin move
// whose package ships a unit file (demo.service), where the manager reload the
// transaction leaves due is in check mode's plan; the real run performs it unless the
// transaction's own file trigger (EL's, in the image) already reloaded the manager after
// the unit file was in place (issue 42): then that reload drops out of the real run's
// plan, and only it.
func TestServiceCheckModePlansWhatTheRealRunDoes(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	cases := []struct {
		name    string
		version string
		// want are entries the plan must hold.
		want []string
	}{
		{"a clean host", v1, []string{
			"record-pending demo.service restart",
			"packages: install-nevra demo-" + v1,
			"process demo.service: daemon-reload",
			"process demo.service: start",
		}},
		{"a pin move that ships a unit file", v2, []string{
			"record-pending demo.service restart",
			"packages: install-nevra demo-" + v2,
			"packages: record-reload-due",
			"process demo.service: daemon-reload",
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			check := e.run(t, with(demo(c.version, "info"), "_ansible_check_mode", true))
			require.False(t, check.Failed(), check.Msg())
			for _, w := range c.want {
				assert.Contains(t, check["plan"], w)
			}
			r := e.run(t, demo(c.version, "info"))
			require.False(t, r.Failed(), r.Msg())
			plan, _ := asRun(check, r)
			assert.Equal(t, plan, r["plan"], "check mode's plan is the real run's")
			t.Logf("the service's plan: %v", r["plan"])
			procs, _ := r["processes"].([]any)
			require.Len(t, procs, 1)
			proc := procs[0].(map[string]any)
			if c.version == v2 {
				// No drop-in changed: only the package asked for the reload, and the
				// transaction's file trigger did it after the unit file was in place.
				assert.NotContains(t, proc["actions"], "daemon-reload")
				assert.Contains(t, proc["daemon_reload_served"], "scriptlet")
			} else {
				assert.Contains(t, proc["actions"], "daemon-reload", "the reload the plan holds is performed")
			}
		})
	}
}
