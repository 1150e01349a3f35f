package configfile

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestCheckRefusesBeforeAnything(t *testing.T) {
	ok := Config{Name: "site", Path: "/etc/nginx/conf.d/site.conf", Mode: 0o644}
	for _, c := range []struct {
		name string
		edit func(*Config)
		err  string
	}{
		{"no path", func(c *Config) { c.Path = "" }, "path: required"},
		{"relative", func(c *Config) { c.Path = "etc/x.conf" }, `path: "etc/x.conf" is relative`},
		{"dot-dot", func(c *Config) { c.Path = "/etc/nginx/../shadow" }, `path: "/etc/nginx/../shadow" has a ".." component`},
		{"trailing slash", func(c *Config) { c.Path = "/etc/nginx/" }, `path: "/etc/nginx/" ends in a slash`},
		{"root", func(c *Config) { c.Path = "/" }, `ends in a slash`},
		{"not clean", func(c *Config) { c.Path = "/etc//nginx/./x.conf" }, `path: "/etc//nginx/./x.conf" is not clean; write "/etc/nginx/x.conf"`},
		{"NUL", func(c *Config) { c.Path = "/etc/x\x00y" }, "NUL"},
		{"group-writable mode", func(c *Config) { c.Mode = 0o664 }, "mode: 0664 lets group or others write the config file"},
		{"setuid", func(c *Config) { c.Mode = 0o644 | os.ModeSetuid }, "mode: 4644 sets the setuid bit"},
		{"validate unbalanced", func(c *Config) { c.Validate = "sh -c 'x %s" }, `validate: "sh -c 'x %s" the single quote at position 7 is never closed`},
		{"validate blank", func(c *Config) { c.Validate = "  " }, `validate: "  " has no command`},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg := ok
			c.edit(&cfg)
			_, err := cfg.Check()
			assert.ErrorContains(t, err, c.err)
			// The caller names the parameter in its own terms: the message begins with
			// configfile's name of it.
			var pe *ParamError
			require.ErrorAs(t, err, &pe)
			assert.True(t, strings.HasPrefix(err.Error(), pe.Param+": "), "%q begins with %q", err, pe.Param)
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
	_, err = Deps{Root: root}.Plan(context.Background(), Config{Path: "site.conf", Absent: true})
	assert.ErrorContains(t, err, `path: "site.conf" is relative`)
}

// A UnitFile config (under systemd's unit directories: what it says, root runs) gets the
// unit files' rule, not a daemon's config's: its owner is root, refused at Check naming
// the parameter, and its directories are root's and writable by neither group nor others
// (a daemon's own directory, trusted for its config, is refused), refused at Plan naming
// the directory, for a removal too; nothing is written.
func TestUnitFileConfigsGetTheUnitFilesRule(t *testing.T) {
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
		{"a daemon's user as owner", "1", 0, 0, 0o755, false, `owner: "1" is not root, and /etc/app/site.conf is under systemd's unit directories`},
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
			cfg.Owner, cfg.UnitFile, cfg.Absent = c.owner, true, c.absent
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

// The result says what a later task reads of the change (package contract): a unit file
// change, manager reload needed, only for a config under systemd's unit directories
// whose content moves.
func TestResultCarriesTheContract(t *testing.T) {
	for _, c := range []struct {
		name     string
		unitFile bool
		steps    []Step
		want     bool
	}{
		{"unit directory, written", true, []Step{StepWrite}, true},
		{"unit directory, removed", true, []Step{StepRemove}, true},
		{"unit directory, mode only", true, []Step{StepChmod}, false},
		{"unit directory, nothing", true, nil, false},
		{"a daemon's config, written", false, []Step{StepWrite}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			res := Plan{Want: Want{Path: "/x", Present: true, UnitFile: c.unitFile}, Steps: c.steps}.Result()
			assert.Equal(t, c.want, res.UnitFilesChanged)
			assert.Equal(t, c.want, res.NeedsManagerSync())
			res.Reset(false, nil)
			assert.False(t, res.UnitFilesChanged, "nothing done, nothing to load")
		})
	}
}
