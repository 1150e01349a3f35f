package configfile

import (
	"context"
	"os"
	"path/filepath"
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
		{"validate without %s", func(c *Config) { c.Validate = "nginx -t" }, `configs[2].validate: "nginx -t" has no %s for the new content's path`},
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
	}{
		{"", nil},
		{"nginx -t -c %s", []string{"nginx", "-t", "-c", "%s"}},
		{`sh -c 'grep -q "^ok" "$1"' check --file=%s`, []string{"sh", "-c", `grep -q "^ok" "$1"`, "check", "--file=%s"}},
	} {
		cfg := ok
		cfg.Validate = v.validate
		checked, err := cfg.Check()
		require.NoError(t, err, v.validate)
		assert.Equal(t, v.argv, checked.Argv())
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
	_, err = Deps{Root: root}.Plan(context.Background(), Config{Index: 1, Path: "site.conf", Absent: true})
	assert.ErrorContains(t, err, `configs[1].path: "site.conf" is relative`)
}

// A RootOnly config (under systemd's unit directories: what it says, root runs) gets the
// unit files' rule, not a daemon's config's: its owner is root, refused at Check naming
// the parameter, and its directories are root's and writable by neither group nor others
// (a daemon's own directory, trusted for its config, is refused), refused at Plan naming
// the directory, for a removal too; nothing is written.
func TestRootOnlyConfigsGetTheUnitFilesRule(t *testing.T) {
	needsRoot(t)
	for _, c := range []struct {
		name     string
		owner    string
		uid, gid int
		mode     os.FileMode
		absent   bool
		err      string // "": written (or removed)
	}{
		{"root's config in root's 0755 directory", "", 0, 0, 0o755, false, ""},
		{"owner root by name", "root", 0, 0, 0o755, false, ""},
		{"owner root by id, removed", "0", 0, 0, 0o755, true, ""},
		{"a daemon's user as owner", "1", 0, 0, 0o755, false, `configs[0].owner: "1" is not root, and /etc/app/site.conf is under systemd's unit directories`},
		{"the daemon's own directory (Debian's /etc/redis shape)", "", 1, 1, 0o770 | os.ModeSetgid, false, `/etc/app (owner uid 1, group gid 1, mode 2770) is owned by uid 1 and writable by group or others (mode 2770): the config is under systemd's unit directories`},
		{"the daemon's own directory, removed", "", 1, 1, 0o750, true, `/etc/app (owner uid 1, group gid 1, mode 0750) is owned by uid 1: the config is under systemd's unit directories`},
		{"root's directory writable by group root", "", 0, 0, 0o775, false, `/etc/app (owner uid 0, group gid 0, mode 0775) is writable by group or others (mode 0775)`},
	} {
		t.Run(c.name, func(t *testing.T) {
			root := layOut(t, &onDisk{content: "old\n", mode: 0o644})
			dir := filepath.Join(root, "etc/app")
			require.NoError(t, os.Chown(dir, c.uid, c.gid))
			require.NoError(t, os.Chmod(dir, c.mode))
			cfg := site("")
			cfg.Owner, cfg.RootOnly, cfg.Absent = c.owner, true, c.absent
			d := Deps{Root: root}
			plan, err := d.Plan(context.Background(), cfg)
			if c.err != "" {
				require.Error(t, err)
				assert.ErrorContains(t, err, c.err)
				assert.ErrorContains(t, err, "nothing was written")
				assert.Empty(t, plan.Steps)
				unchanged(t, root)
				return
			}
			require.NoError(t, err)
			_, err = d.Apply(context.Background(), plan)
			require.NoError(t, err)
			f, err := Observe(root, confPath)
			require.NoError(t, err)
			assert.Equal(t, !c.absent, f.Exists)
			if !c.absent {
				assert.Equal(t, []int{0, 0}, []int{f.UID, f.GID})
			}
		})
	}
}
