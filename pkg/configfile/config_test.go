package configfile

import (
	"context"
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestCheckRefusesBeforeAnything(t *testing.T) {
	ok := Config{Index: 2, Name: "site", Path: "/etc/nginx/conf.d/site.conf", Mode: 0o644}
	for _, c := range []struct {
		name string
		edit func(*Config)
		err  string
	}{
		{"no path", func(c *Config) { c.Path = "" }, "configs[2].path: required"},
		{"relative", func(c *Config) { c.Path = "etc/x.conf" }, `configs[2].path: "etc/x.conf" is relative`},
		{"dot-dot", func(c *Config) { c.Path = "/etc/nginx/../shadow" }, `configs[2].path: "/etc/nginx/../shadow" has a ".." component`},
		{"trailing slash", func(c *Config) { c.Path = "/etc/nginx/" }, `configs[2].path: "/etc/nginx/" ends in a slash`},
		{"root", func(c *Config) { c.Path = "/" }, `ends in a slash`},
		{"not clean", func(c *Config) { c.Path = "/etc//nginx/./x.conf" }, `configs[2].path: "/etc//nginx/./x.conf" is not clean; write "/etc/nginx/x.conf"`},
		{"NUL", func(c *Config) { c.Path = "/etc/x\x00y" }, "NUL"},
		{"group-writable mode", func(c *Config) { c.Mode = 0o664 }, "configs[2].mode: 0664 lets group or others write the config file"},
		{"setuid", func(c *Config) { c.Mode = 0o644 | os.ModeSetuid }, "configs[2].mode: 4644 sets the setuid bit"},
		{"validate unbalanced", func(c *Config) { c.Validate = "sh -c 'x %s" }, `configs[2].validate: "sh -c 'x %s" the single quote at position 7 is never closed`},
		{"validate blank", func(c *Config) { c.Validate = "  " }, `configs[2].validate: "  " has no command`},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg := ok
			c.edit(&cfg)
			_, err := cfg.Check()
			assert.ErrorContains(t, err, c.err)
		})
	}
	for _, v := range []struct {
		validate string
		argv     []string
		tree     bool // no %s: the tree validator
	}{
		{"", nil, false},
		{"nginx -t -c %s", []string{"nginx", "-t", "-c", "%s"}, false},
		{`sh -c 'grep -q "^ok" "$1"' check --file=%s`, []string{"sh", "-c", `grep -q "^ok" "$1"`, "check", "--file=%s"}, false},
		{"nginx -t -q -c /etc/nginx/nginx.conf", []string{"nginx", "-t", "-q", "-c", "/etc/nginx/nginx.conf"}, true},
	} {
		cfg := ok
		cfg.Validate = v.validate
		checked, err := cfg.Check()
		require.NoError(t, err, v.validate)
		assert.Equal(t, v.argv, checked.Argv())
		if v.tree {
			assert.Equal(t, v.argv, checked.Tree(), v.validate)
		} else {
			assert.Nil(t, checked.Tree(), v.validate)
		}
	}
	for _, m := range []os.FileMode{0o644, 0o640, 0o600, 0o444, 0o400, 0o755, 0} {
		cfg := ok
		cfg.Mode = m
		_, err := cfg.Check()
		assert.NoError(t, err, "%o", m)
	}
}

// TestPlanTakesTheCheckedConfig: Plan takes the validator as Check split it, and still
// checks a config that did not come from Check.
func TestPlanTakesTheCheckedConfig(t *testing.T) {
	root := t.TempDir()
	checked, err := Config{Name: "site", Path: "/site.conf", Absent: true, Validate: "check --file=%s"}.Check()
	require.NoError(t, err)
	p, err := Deps{Root: root}.Plan(context.Background(), checked)
	require.NoError(t, err)
	assert.Equal(t, []string{"check", "--file=%s"}, p.Want.Validate)
	// A tree validator is not the file's own: the write does not run it.
	tree, err := Config{Name: "site", Path: "/site.conf", Absent: true, Validate: "nginx -t"}.Check()
	require.NoError(t, err)
	p, err = Deps{Root: root}.Plan(context.Background(), tree)
	require.NoError(t, err)
	assert.Nil(t, p.Want.Validate)
	_, err = Deps{Root: root}.Plan(context.Background(), Config{Index: 1, Path: "site.conf", Absent: true})
	assert.ErrorContains(t, err, `configs[1].path: "site.conf" is relative`)
}
