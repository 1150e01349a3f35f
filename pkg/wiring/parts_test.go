package wiring

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// nginxParts is a service as the nginx example declares it.
var nginxParts = Parts{
	Packages: []string{"nginx", "nginx-mod-stream"},
	Configs:  []string{"main", "site"},
	Units:    []string{"nginx"},
	Dropins: []DropinPart{
		{Unit: "nginx", Name: "10-limits.conf"},
		{Unit: "nginx.service", Name: "20-env.conf", Reload: true},
	},
}

func TestCheck(t *testing.T) {
	changed := map[string]any{"changed": true}
	cases := []struct {
		name            string
		parts           Parts
		restart, reload []any
		err             string // "" = accepted
	}{
		{name: "neither list", parts: nginxParts},
		{name: "every kind, units as written or normalised", parts: nginxParts,
			restart: []any{"package:nginx", "unit:nginx.service", "dropin:nginx.service/10-limits.conf"},
			reload:  []any{"config:main", "config:site", "dropin:nginx/20-env.conf"}},
		{name: "outside triggers pass", parts: nginxParts,
			restart: []any{"package:nginx", changed, true, map[string]any{"cert": changed}},
			reload:  []any{false, map[string]any{"other": map[string]any{"results": []any{changed}}}}},
		{name: "the same outside boolean in both lists: unnamed, not compared", parts: nginxParts,
			restart: []any{true}, reload: []any{true}},
		{name: "libraries is restart_on's, passed on", parts: nginxParts,
			restart: []any{"package:nginx", "libraries"}, reload: []any{"config:site"}},
		{name: "libraries in reload_on", parts: nginxParts,
			reload: []any{"libraries"}, err: "processes[1]: reload_on[0]: libraries is a restart_on item only"},

		{name: "undeclared config", parts: Parts{Configs: []string{"b", "a"}},
			reload: []any{"config:a", "config:main"},
			err:    "processes[1].reload_on[1]: config:main is not one of the service's configs (declared: a, b)"},
		{name: "no configs at all", parts: Parts{},
			restart: []any{"config:main"},
			err:     "processes[1].restart_on[0]: config:main is not one of the service's configs (it declares none)"},
		{name: "undeclared package", parts: nginxParts,
			restart: []any{"package:httpd"},
			err:     "processes[1].restart_on[0]: package:httpd is not one of the service's packages (declared: nginx, nginx-mod-stream)"},
		{name: "a unit file of another unit", parts: nginxParts,
			restart: []any{"unit:demo"},
			err:     "processes[1].restart_on[0]: unit:demo.service is not one of the service's unit files (declared: nginx.service)"},
		{name: "a drop-in of another unit", parts: nginxParts,
			reload: []any{"dropin:demo/20-env.conf"},
			err:    "processes[1].reload_on[0]: dropin:demo.service/20-env.conf is not one of the service's drop-ins (declared: nginx.service/10-limits.conf, nginx.service/20-env.conf)"},
		{name: "a drop-in name override would refuse is not declared", parts: nginxParts,
			reload: []any{"dropin:nginx/20-env.txt"},
			err:    "dropin:nginx.service/20-env.txt is not one of the service's drop-ins"},
		{name: "not a reference", parts: nginxParts,
			restart: []any{"package:nginx", "nginx"},
			err:     `processes[1].restart_on[1]: "nginx" is not a reference to a part of the service`},
		{name: "unknown kind", parts: nginxParts,
			reload: []any{"pkg:nginx"},
			err:    `processes[1].reload_on[0]: unknown kind "pkg" (want package:, config:, unit: or dropin:)`},
		{name: "one part in both lists", parts: nginxParts,
			restart: []any{"package:nginx", "config:main"}, reload: []any{"config:main"},
			err: "processes[1].reload_on[0]: config:main is in both restart_on and reload_on (also restart_on[1])"},
		{name: "one unit in both lists, written two ways", parts: nginxParts,
			restart: []any{"unit:nginx"}, reload: []any{"unit:nginx.service"},
			err: "processes[1].reload_on[0]: unit:nginx.service is in both restart_on and reload_on (also restart_on[0])"},
		{name: "one part twice in a list", parts: nginxParts,
			reload: []any{"config:main", "config:site", "config:main"},
			err:    "processes[1].reload_on[2]: config:main is named twice (also reload_on[0])"},
		{name: "a reference YAML read as a mapping", parts: nginxParts,
			restart: []any{map[string]any{"package": "nginx"}},
			err:     `processes[1].restart_on[0]: a mapping package: "nginx"; write the reference as one string, "package:nginx"`},
		{name: "an outside trigger named like a reference", parts: nginxParts,
			restart: []any{map[string]any{"config:main": changed}},
			err:     `processes[1].restart_on[0]: the trigger name "config:main" reads as a reference`},
		{name: "an outside trigger systemd_lifecycle refuses, at its own index", parts: nginxParts,
			restart: []any{"package:nginx", 3.0},
			err:     "processes[1]: restart_on[1]: a number is not a trigger"},
		{name: "an outside name in both lists", parts: nginxParts,
			restart: []any{map[string]any{"cert": changed}}, reload: []any{"config:main", map[string]any{"cert": changed}},
			err: `processes[1]: trigger "cert" is in both restart_on and reload_on`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := c.parts.Check(Process{Param: "processes[1]", Unit: "nginx", RestartOn: c.restart, ReloadOn: c.reload})
			if c.err == "" {
				assert.NoError(t, err)
				return
			}
			require.Error(t, err)
			assert.Contains(t, err.Error(), c.err)
		})
	}
}

func TestByName(t *testing.T) {
	byName := func(p Process) bool {
		r, err := nginxParts.Check(p)
		require.NoError(t, err)
		return r.ByName()
	}
	assert.False(t, byName(Process{}), "neither list: default wiring")
	assert.False(t, byName(Process{RestartOn: []any{}, ReloadOn: []any{}}), "empty lists count as not given")
	assert.True(t, byName(Process{RestartOn: []any{false}}), "restart_on: [false] reacts to nothing")
	assert.True(t, byName(Process{ReloadOn: []any{"config:main"}}))
}
