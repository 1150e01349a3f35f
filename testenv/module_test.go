package testenv

import (
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestModuleArgs(t *testing.T) {
	const bin = "/nonexistent/with-defaults"
	builtDefaults.Store(bin, map[string]any{"timeout": "60s", "backend": "dbus"})
	t.Cleanup(func() { builtDefaults.Delete(bin) })
	for _, c := range []struct {
		name   string
		binary string
		args   map[string]any
		want   map[string]any
	}{
		{"a binary without defaults runs with its args as given", "/nonexistent/plain",
			map[string]any{"unit": "a"}, map[string]any{"unit": "a"}},
		{"a key the run does not set gets the default", bin,
			map[string]any{"unit": "a"}, map[string]any{"unit": "a", "timeout": "60s", "backend": "dbus"}},
		{"a key the run sets keeps the run's value (a test about a deadline)", bin,
			map[string]any{"unit": "a", "timeout": "2s"}, map[string]any{"unit": "a", "timeout": "2s", "backend": "dbus"}},
		{"nil for a defaulted key leaves it to the module's own default", bin,
			map[string]any{"unit": "a", "timeout": nil}, map[string]any{"unit": "a", "backend": "dbus"}},
		{"nil for any other key is passed on as null", bin,
			map[string]any{"unit": nil}, map[string]any{"unit": nil, "timeout": "60s", "backend": "dbus"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			assert.Equal(t, c.want, ModuleArgs(c.binary, c.args))
		})
	}
}

func TestModuleArgsLeavesTheCallersMapAlone(t *testing.T) {
	const bin = "/nonexistent/with-defaults-2"
	builtDefaults.Store(bin, map[string]any{"timeout": "60s"})
	t.Cleanup(func() { builtDefaults.Delete(bin) })
	args := map[string]any{"unit": "a", "timeout": nil}
	ModuleArgs(bin, args)
	assert.Equal(t, map[string]any{"unit": "a", "timeout": nil}, args)
}

func TestDefaultsAreOneBuildEach(t *testing.T) {
	key := func(opts ...BuildOption) buildKey {
		k := buildKey{pkg: "./cmd/x", goarch: runtime.GOARCH}
		for _, o := range opts {
			o(&k)
		}
		return k
	}
	assert.Equal(t, key(Defaults(map[string]any{"a": 1, "b": "2"})), key(Defaults(map[string]any{"b": "2", "a": 1})),
		"the same defaults in another order are the same binary")
	assert.NotEqual(t, key(), key(Defaults(map[string]any{"timeout": "60s"})), "defaults live with their own path")
	assert.NotEqual(t, key(Defaults(map[string]any{"timeout": "60s"})), key(Defaults(map[string]any{"timeout": "90s"})))
}

func TestModuleTimeout(t *testing.T) {
	for _, c := range []struct {
		env, want, panics string
	}{
		{env: "", want: "60s"},
		{env: "90s", want: "90s"},
		{env: "2m30s", want: "2m30s"},
		{env: "soon", panics: `TESTENV_MODULE_TIMEOUT="soon" is not a positive Go duration (such as 90s or 2m)`},
		{env: "60", panics: `TESTENV_MODULE_TIMEOUT="60" is not a positive Go duration (such as 90s or 2m)`},
		{env: "0s", panics: `TESTENV_MODULE_TIMEOUT="0s" is not a positive Go duration (such as 90s or 2m)`},
		{env: "-5s", panics: `TESTENV_MODULE_TIMEOUT="-5s" is not a positive Go duration (such as 90s or 2m)`},
	} {
		t.Run(c.env, func(t *testing.T) {
			t.Setenv("TESTENV_MODULE_TIMEOUT", c.env)
			if c.panics != "" {
				assert.PanicsWithValue(t, c.panics, func() { ModuleTimeout() })
				return
			}
			assert.Equal(t, c.want, ModuleTimeout())
		})
	}
}
