package service_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The service's plan is composed from its steps' plans before anything changes, so check
// mode's plan is the plan of the real run that follows: on a clean host, and on a pin move
// whose package ships a unit file (demo.service), where the manager reload the
// transaction leaves due is in the plan of both, and the real run performs it.
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
			assert.Equal(t, check["plan"], r["plan"], "check mode's plan is the real run's")
			t.Logf("the service's plan: %v", r["plan"])
			procs, _ := r["processes"].([]any)
			require.Len(t, procs, 1)
			assert.Contains(t, procs[0].(map[string]any)["actions"], "daemon-reload", "the reload the plan holds is performed")
		})
	}
}
