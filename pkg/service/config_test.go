package service

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/richt/services/pkg/ansible"
	"github.com/richt/services/pkg/atomicfile"
	"github.com/richt/services/pkg/configfile"
	"github.com/richt/services/pkg/durable"
	"github.com/richt/services/pkg/lifecycle"
	"github.com/richt/services/pkg/override"
	"github.com/richt/services/pkg/rpmexact"
	"github.com/richt/services/pkg/safefile"
	"github.com/richt/services/pkg/stamp"
	"github.com/richt/services/pkg/wiring"
)

// siteConfig is a config of the demo service named name.
func siteConfig(name string) map[string]any {
	return map[string]any{"name": name, "path": "/etc/demo/" + name + ".conf", "content": "listen 80\n"}
}

// fakeConfigs plans a write of every config (when write) and applies it: the config
// named refuse is refused by its validator (nothing replaced, the hook not run), every
// other write runs the hook before its content moves.
type fakeConfigs struct {
	write   bool
	refuse  string
	applied []string
	hooked  []string
}

func (f *fakeConfigs) Plan(_ context.Context, c configfile.Config) (configfile.Plan, error) {
	p := configfile.Plan{Want: configfile.Want{Name: c.Name, Path: c.Path, Present: !c.Absent}}
	switch {
	case f.write && c.Absent:
		p.Steps = []configfile.Step{configfile.StepRemove}
	case f.write:
		p.Steps = []configfile.Step{configfile.StepWrite}
	}
	return p, nil
}

func (f *fakeConfigs) Apply(_ context.Context, p configfile.Plan, before func() error) (*configfile.Result, error) {
	res := p.Result()
	if p.Want.Name == f.refuse {
		res.Changed = false
		return res, fmt.Errorf("config %q (%s): %s not replaced: %w: [\"check\"] exited 1: bad directive", p.Want.Name, p.Want.Path, p.Want.Path, configfile.ErrValidation)
	}
	if p.Changed() && before != nil {
		f.hooked = append(f.hooked, p.Want.Name)
		if err := before(); err != nil {
			res.Changed = false
			return res, err
		}
	}
	f.applied = append(f.applied, p.Want.Name)
	return res, nil
}

// Bad configs and reactions are refused when the arguments are parsed, before any step,
// naming the parameter.
func TestConfigsAndReactionsAreRefusedBeforeAnything(t *testing.T) {
	proc := func(list string, refs ...any) map[string]any {
		return map[string]any{"unit": "demo", list: refs}
	}
	cases := []struct {
		name    string
		args    map[string]any
		wantErr string
	}{
		{"an unknown reference", map[string]any{"configs": []any{siteConfig("site")},
			"processes": []any{proc("reload_on", "config:other")}},
			`processes[0].reload_on[0]: config:other is not one of the service's configs (declared: site)`},
		{"an unknown package", map[string]any{"processes": []any{proc("restart_on", "package:nginx")}},
			`processes[0].restart_on[0]: package:nginx is not one of the service's packages (it declares none)`},
		{"one part in both lists", map[string]any{"configs": []any{siteConfig("site")},
			"processes": []any{map[string]any{"unit": "demo", "restart_on": []any{"config:site"}, "reload_on": []any{"config:site"}}}},
			`processes[0].reload_on[0]: config:site is in both restart_on and reload_on`},
		{"one config name twice", map[string]any{"configs": []any{siteConfig("site"),
			map[string]any{"name": "site", "path": "/etc/demo/other.conf", "content": ""}}},
			`configs[1].name: "site" is already given by configs[0]`},
		{"one path twice", map[string]any{"configs": []any{siteConfig("site"),
			map[string]any{"name": "other", "path": "/etc/demo/site.conf", "content": ""}}},
			`configs[1].path: /etc/demo/site.conf is already given by configs[0]`},
		{"a relative path", map[string]any{"configs": []any{map[string]any{"name": "site", "path": "etc/site.conf", "content": ""}}},
			`configs[0].path: "etc/site.conf" is relative`},
		{"a mode others can write", map[string]any{"configs": []any{map[string]any{"name": "site", "path": "/etc/site.conf", "content": "", "mode": "0666"}}},
			`configs[0].mode: 0666`},
		{"a validator with no command", map[string]any{"configs": []any{map[string]any{"name": "site", "path": "/etc/site.conf", "content": "", "validate": " "}}},
			`configs[0].validate: " " has no command`},
		{"a name with a colon and space", map[string]any{"configs": []any{siteConfigNamed("a: b")}},
			`configs[0].name: "a: b" has ':' at byte 1; a config name is letters, digits, '.', '_' and '-' (1 to 64 of them)`},
		{"a name with a newline", map[string]any{"configs": []any{siteConfigNamed("a\nb")}},
			`configs[0].name: "a\nb" has '\n' at byte 1`},
		{"a name too long", map[string]any{"configs": []any{siteConfigNamed(strings.Repeat("n", 65))}},
			`configs[0].name: "nnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnn" is 65 bytes long; at most 64`},
		{"a name of every allowed kind: fine", map[string]any{"configs": []any{siteConfigNamed("Site_1.main-" + strings.Repeat("n", 52))}}, ""},
		{"a config at an owned unit file's path", map[string]any{
			"units":   []any{map[string]any{"unit": "web", "content": "[Service]\n"}},
			"configs": []any{siteConfig("site"), map[string]any{"name": "unit", "path": "/etc/systemd/system/web.service", "content": ""}}},
			`configs[1].path: /etc/systemd/system/web.service is also units[0]'s unit file (web.service); give the file once`},
		{"a config at an owned drop-in's path", map[string]any{
			"dropins": []any{map[string]any{"unit": "demo", "name": "10.conf", "content": "[Service]\n"}},
			"configs": []any{map[string]any{"name": "drop", "path": "/etc/systemd/system/demo.service.d/10.conf", "content": ""}}},
			`configs[0].path: /etc/systemd/system/demo.service.d/10.conf is also dropins[0]'s drop-in (demo.service/10.conf); give the file once`},
		{"a timeout that is no duration", map[string]any{"configs": []any{withTimeout(siteConfig("site"), "soon")}},
			`configs[0]: argument 'timeout': "soon" is not a duration: write a number of seconds (20) or a duration with its unit`},
		{"a timeout of zero", map[string]any{"configs": []any{withTimeout(siteConfig("site"), "0s")}},
			`configs[0]: argument 'timeout': "0s" must be a positive duration`},
		{"no content", map[string]any{"configs": []any{map[string]any{"name": "site", "path": "/etc/site.conf"}}},
			`configs[0].content: required when the service is present`},
		{"a config under a unit directory owned by a daemon's user", map[string]any{"configs": []any{map[string]any{"name": "env",
			"path": "/etc/systemd/system/demo.service.d/50-env.conf", "content": "[Service]\n", "owner": "redis"}}},
			`configs[0].owner: "redis" is not root, and /etc/systemd/system/demo.service.d/50-env.conf is under systemd's unit directories, where a file says what systemd runs as root`},
		{"a config under a unit directory owned by uid 101", map[string]any{"configs": []any{map[string]any{"name": "env",
			"path": "/usr/lib/systemd/system/demo.service.d/50-env.conf", "content": "[Service]\n", "owner": "101"}}},
			`configs[0].owner: "101" is not root`},
		{"a config under a unit directory, root's with another group: fine", map[string]any{"configs": []any{map[string]any{"name": "env",
			"path": "/etc/systemd/system/demo.service.d/50-env.conf", "content": "[Service]\n", "owner": "root", "group": "redis", "mode": "0640"}}}, ""},
		{"a config under a unit directory, absent with an owner: fine", map[string]any{"state": "absent", "configs": []any{map[string]any{"name": "env",
			"path": "/etc/systemd/system/demo.service.d/50-env.conf", "owner": "redis"}}}, ""},
		{"a config elsewhere owned by a daemon's user: fine", map[string]any{"configs": []any{map[string]any{"name": "cache",
			"path": "/etc/redis/redis.conf", "content": "port 6379\n", "owner": "redis"}}}, ""},
		{"no content, absent: fine", map[string]any{"state": "absent", "configs": []any{map[string]any{"name": "site", "path": "/etc/site.conf"}}}, ""},
		{"references to every kind of part: fine", map[string]any{
			"packages":  []any{map[string]any{"name": "demo"}},
			"configs":   []any{siteConfig("site")},
			"units":     []any{map[string]any{"unit": "web", "content": "[Service]\n"}},
			"dropins":   []any{map[string]any{"unit": "demo", "name": "10.conf", "content": "[Service]\n"}},
			"processes": []any{proc("restart_on", "package:demo", "unit:web.service", "dropin:demo/10.conf", true), proc("reload_on", "config:site")}[0:1]}, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			args := map[string]any{"name": "demo"}
			for k, v := range c.args {
				args[k] = v
			}
			_, err := Spec().Validate(args)
			if c.wantErr == "" {
				assert.NoError(t, err)
				return
			}
			assert.ErrorContains(t, err, c.wantErr)
		})
	}
}

// byNameArgs is a service with one package, two configs and two processes that name
// their reactions: demo reloads for config:site, web restarts for package:demo; config
// other is named by nobody.
func byNameArgs() map[string]any {
	return map[string]any{"name": "demo",
		"packages": []any{map[string]any{"name": "demo", "version": "0:1.0-1.noarch"}},
		"configs":  []any{siteConfig("site"), siteConfig("other")},
		"processes": []any{
			map[string]any{"unit": "demo", "reload_on": []any{"config:site"}},
			map[string]any{"unit": "web", "restart_on": []any{"package:demo"}},
		}}
}

// A process that names its reactions reacts to what it names and to nothing else: a
// config change reloads only the process naming it, a change nobody names reacts nowhere,
// a package change restarts only the process naming the package. What is recorded ahead
// (before the run's process steps, which here do nothing, as if the run were killed
// before them) is exactly what the triggers then carry.
func TestReactionsByName(t *testing.T) {
	cases := []struct {
		name     string
		pkg      bool
		configs  string // the config whose plan writes it ("": none)
		want     map[string]string
		triggers map[string][2]bool // per unit: a restart trigger changed, a reload trigger changed
	}{
		{name: "the named config changed: demo reloads, web nothing", configs: "site",
			want:     map[string]string{"demo.service": "reload"},
			triggers: map[string][2]bool{"demo.service": {false, true}, "web.service": {false, false}}},
		{name: "a config nobody names changed: no reaction anywhere", configs: "other",
			want:     map[string]string{},
			triggers: map[string][2]bool{"demo.service": {false, false}, "web.service": {false, false}}},
		{name: "the package moved: web restarts, demo nothing", pkg: true,
			want:     map[string]string{"web.service": "restart"},
			triggers: map[string][2]bool{"demo.service": {false, false}, "web.service": {true, false}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			pending := &fakePending{records: map[string]*durable.Pending{}}
			var pkgCalls, procCalls []map[string]any
			unchanged := false
			cfgs := &onlyConfig{name: c.configs}
			d := Deps{
				Packages:  predicted(fakePredict{pkg: c.pkg}, fakeModule(rpmexact.Spec(), &c.pkg, &pkgCalls)),
				Configs:   cfgs,
				Processes: fakeModule(lifecycle.Spec(), &unchanged, &procCalls),
				Predict:   fakePredict{pkg: c.pkg},
				Pending:   pending,
				Now:       func() (stamp.Stamp, error) { return stamp.Stamp{BootID: "b", Mono: 1}, nil },
			}
			out := ansible.Call(context.Background(), Spec(), byNameArgs(), false, false, Handler(d))
			require.Nil(t, out["failed"], out["msg"])
			got := map[string]string{}
			for u, rec := range pending.records {
				got[u] = rec.Reaction
			}
			assert.Equal(t, c.want, got, "the records ahead")
			require.Len(t, procCalls, 2)
			for _, call := range procCalls {
				unit := unitOf(call["unit"].(string))
				restart, _ := call["restart_on"].([]any)
				reload, _ := call["reload_on"].([]any)
				assert.Equal(t, c.triggers[unit], [2]bool{refChanged(restart), refChanged(reload)}, "%s's triggers", unit)
			}
		})
	}
}

// refChanged reports whether a trigger of list, as systemd_lifecycle received it, that is
// named by a reference to one of the service's parts ({REF: RESULT}) reports a change.
func refChanged(list []any) bool {
	for _, item := range list {
		m, _ := item.(map[string]any)
		for name, v := range m {
			res, _ := v.(map[string]any)
			if _, err := wiring.ParseRef(name); err == nil && len(m) == 1 && res["changed"] == true {
				return true
			}
		}
	}
	return false
}

// onlyConfig writes only the config named name.
type onlyConfig struct {
	fakeConfigs
	name string
}

func (o *onlyConfig) Plan(ctx context.Context, c configfile.Config) (configfile.Plan, error) {
	o.write = c.Name == o.name
	return o.fakeConfigs.Plan(ctx, c)
}

// A process that names no reaction keeps the default wiring, which configs join as
// packages do: a changed config restarts it.
func TestTheDefaultWiringRestartsForAConfig(t *testing.T) {
	pending := &fakePending{records: map[string]*durable.Pending{}}
	var procCalls []map[string]any
	unchanged := false
	d := Deps{
		Configs:   &fakeConfigs{write: true},
		Processes: fakeModule(lifecycle.Spec(), &unchanged, &procCalls),
		Pending:   pending,
		Now:       func() (stamp.Stamp, error) { return stamp.Stamp{BootID: "b", Mono: 1}, nil },
	}
	args := map[string]any{"name": "demo", "configs": []any{siteConfig("site")}, "processes": []any{map[string]any{"unit": "demo"}}}
	out := ansible.Call(context.Background(), Spec(), args, false, false, Handler(d))
	require.Nil(t, out["failed"], out["msg"])
	require.NotNil(t, pending.records["demo.service"])
	assert.Equal(t, "restart", pending.records["demo.service"].Reaction)
	require.Len(t, procCalls, 1)
	restart, _ := procCalls[0]["restart_on"].([]any)
	assert.True(t, refChanged(restart))
	assert.Equal(t, []any{"record-pending demo.service restart", "config site: write"}, out["plan"])
	configs, _ := out["configs"].([]any)
	require.Len(t, configs, 1)
	assert.Equal(t, true, configs[0].(map[string]any)["changed"])
}

// A config whose validator refuses the new content fails the task naming it and changes
// nothing after it: no later config, no unit file, no process step; the reaction recorded
// ahead for it is withdrawn (the record there was before the run comes back), so the next
// run does not react to a change that never happened.
func TestAFailingValidateWithdrawsAndStops(t *testing.T) {
	pending := &fakePending{records: map[string]*durable.Pending{}}
	var fileCalls, procCalls []map[string]any
	yes := true
	cfgs := &fakeConfigs{write: true, refuse: "other"}
	d := Deps{
		Configs:   cfgs,
		Files:     fakeModule(override.Spec(), &yes, &fileCalls),
		Processes: fakeModule(lifecycle.Spec(), &yes, &procCalls),
		Pending:   pending,
		Now:       func() (stamp.Stamp, error) { return stamp.Stamp{BootID: "b", Mono: 1}, nil },
	}
	args := map[string]any{"name": "demo",
		"configs": []any{siteConfig("other"), siteConfig("site")},
		"dropins": []any{map[string]any{"unit": "demo", "name": "20.conf", "content": "[Service]\n"}},
		"processes": []any{map[string]any{"unit": "demo", "reload_on": []any{"config:other", "config:site"},
			"restart_on": []any{"dropin:demo/20.conf"}}}}
	out := ansible.Call(context.Background(), Spec(), args, false, false, Handler(d))
	require.Equal(t, true, out["failed"])
	assert.Equal(t, "config other", out["failed_step"])
	assert.Contains(t, out["msg"], `config "other" (/etc/demo/other.conf)`)
	assert.Contains(t, out["msg"], "validation failed")
	assert.Empty(t, cfgs.applied, "no config after it")
	assert.Empty(t, fileCalls, "no unit file after it")
	assert.Empty(t, procCalls, "no reaction")
	assert.Nil(t, pending.records["demo.service"], "the reload recorded ahead is withdrawn")
	assert.Equal(t, []any{"record-pending demo.service reload", "config other: write", "config site: write",
		"record-pending demo.service restart", // planned ahead of the drop-in, never reached
		"withdraw-pending demo.service"}, out["plan"])
	assert.Nil(t, out["recorded"])
	assert.Equal(t, false, out["changed"])
}

// Check mode plans the configs and runs no validator: the plan names each config's
// steps, and no config is applied.
func TestCheckModePlansConfigsOnly(t *testing.T) {
	cfgs := &fakeConfigs{write: true, refuse: "site"}
	var procCalls []map[string]any
	no := false
	d := Deps{Configs: cfgs, Processes: fakeModule(lifecycle.Spec(), &no, &procCalls),
		Pending: &fakePending{records: map[string]*durable.Pending{}}}
	args := map[string]any{"name": "demo", "configs": []any{siteConfig("site")},
		"processes": []any{map[string]any{"unit": "demo", "reload_on": []any{"config:site"}}}}
	out := ansible.Call(context.Background(), Spec(), args, true, false, Handler(d))
	require.Nil(t, out["failed"], out["msg"])
	assert.Empty(t, cfgs.applied)
	assert.Equal(t, []any{"record-pending demo.service reload", "config site: write"}, out["plan"])
	assert.Equal(t, true, out["changed"])
}

// ownerByPackage is fakeConfigs whose configs' owner is created by the packages step:
// until that step ran for real, a plan fails as configfile's does for an unknown user.
type ownerByPackage struct {
	fakeConfigs
	created *bool
}

func (o *ownerByPackage) Plan(ctx context.Context, c configfile.Config) (configfile.Plan, error) {
	if !*o.created && !c.Absent {
		p := configfile.Plan{Want: configfile.Want{Name: c.Name, Path: c.Path, Present: true}}
		return p, fmt.Errorf("configs[0].owner: %q is not a known name or a numeric id on the target: %w", "redis", safefile.ErrUnknownID)
	}
	return o.fakeConfigs.Plan(ctx, c)
}

// An owner the packages step creates (a package's user) is not known when the plan is
// made: with a package change due, the config is planned again at its turn and predicted
// written until then, with a warning in check mode; check mode's plan is the real run's.
// Without a package change the unknown owner fails before anything is done.
func TestAnOwnerThePackageCreatesIsPlannedAtItsTurn(t *testing.T) {
	cases := []struct {
		name    string
		pkg     bool
		wantErr string
	}{
		{name: "the package changes: deferred", pkg: true},
		{name: "no package change: refused before anything", wantErr: "configs[0].owner"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			run := func(check bool) (map[string]any, *ownerByPackage) {
				created := false
				cfgs := &ownerByPackage{fakeConfigs: fakeConfigs{write: true}, created: &created}
				pkgs := moduleOf(rpmexact.Spec(), func(_ context.Context, req *ansible.Request) (any, error) {
					if c.pkg && !req.CheckMode {
						created = true
					}
					return map[string]any{"changed": c.pkg, "package_changed": c.pkg}, nil
				})
				no := false
				d := Deps{
					Packages:  predicted(fakePredict{pkg: c.pkg}, pkgs),
					Configs:   cfgs,
					Processes: fakeModule(lifecycle.Spec(), &no, new([]map[string]any)),
					Predict:   fakePredict{pkg: c.pkg},
					Pending:   &fakePending{records: map[string]*durable.Pending{}},
					Now:       func() (stamp.Stamp, error) { return stamp.Stamp{BootID: "b", Mono: 1}, nil },
				}
				args := with(byNameArgs(), "configs", []any{siteConfig("site")})
				args["processes"] = []any{map[string]any{"unit": "demo", "reload_on": []any{"config:site"}}}
				return ansible.Call(context.Background(), Spec(), args, check, false, Handler(d)), cfgs
			}
			check, _ := run(true)
			real, cfgs := run(false)
			if c.wantErr != "" {
				assert.Contains(t, check["msg"], c.wantErr)
				assert.Contains(t, real["msg"], c.wantErr)
				assert.Empty(t, cfgs.applied, "nothing written")
				return
			}
			require.Nil(t, check["failed"], "check mode: %v", check["msg"])
			require.Nil(t, real["failed"], "real run: %v", real["msg"])
			want := []any{"packages: install-nevra demo-0:1.0-1.noarch", "record-pending demo.service reload", "config site: write"}
			assert.Equal(t, want, check["plan"])
			assert.Equal(t, check["plan"], real["plan"], "check mode's plan is the real run's")
			assert.Equal(t, []string{"site"}, cfgs.applied, "written at its turn")
			assert.Contains(t, fmt.Sprint(check["warnings"]), `config site: its owner or group is not known yet`)
		})
	}
}

// siteConfigNamed is siteConfig's entry under another name.
func siteConfigNamed(name string) map[string]any {
	c := siteConfig("site")
	c["name"] = name
	return c
}

// A config under any directory systemd loads units from is a unit file for the manager
// reload: the search path, the control and attached directories, the transient one.
func TestAConfigUnderAUnitDirectoryIsAUnitFile(t *testing.T) {
	for p, want := range map[string]bool{
		"/etc/systemd/system/demo.service":           true,
		"/etc/systemd/system/demo.service.d/x.conf":  true,
		"/etc/systemd/system.control/demo.service":   true,
		"/run/systemd/system.control/demo.service":   true,
		"/run/systemd/transient/demo.service":        true,
		"/etc/systemd/system.attached/demo.service":  true,
		"/run/systemd/system/demo.service":           true,
		"/usr/lib/systemd/system/demo.service":       true,
		"/usr/local/lib/systemd/system/demo.service": true,
		"/etc/systemd/system.conf":                   false,
		"/etc/demo/site.conf":                        false,
	} {
		assert.Equal(t, want, configPlan{cfg: config{Config: configfile.Config{Path: p}}}.unitDir(), p)
	}
}

// withTimeout is a config entry with its timeout.
func withTimeout(c map[string]any, d string) map[string]any {
	c["timeout"] = d
	return c
}

// deadlineConfigs is fakeConfigs that keeps how long each plan and apply had left.
type deadlineConfigs struct {
	fakeConfigs
	left map[string]time.Duration
}

func (f *deadlineConfigs) Plan(ctx context.Context, c configfile.Config) (configfile.Plan, error) {
	f.keep(ctx, "plan "+c.Name)
	return f.fakeConfigs.Plan(ctx, c)
}

func (f *deadlineConfigs) Apply(ctx context.Context, p configfile.Plan, before func() error) (*configfile.Result, error) {
	f.keep(ctx, "apply "+p.Want.Name)
	return f.fakeConfigs.Apply(ctx, p, before)
}

func (f *deadlineConfigs) keep(ctx context.Context, what string) {
	if dl, ok := ctx.Deadline(); ok {
		f.left[what] = time.Until(dl)
	}
}

// A config's step (its plan and its write, the validator included) runs under its own
// timeout, one minute when none is given.
func TestAConfigStepRunsUnderItsTimeout(t *testing.T) {
	cfgs := &deadlineConfigs{fakeConfigs: fakeConfigs{write: true}, left: map[string]time.Duration{}}
	d := Deps{Configs: cfgs, Pending: &fakePending{records: map[string]*durable.Pending{}}}
	args := map[string]any{"name": "demo", "configs": []any{withTimeout(siteConfig("slow"), "10m"), siteConfig("site")}}
	out := ansible.Call(context.Background(), Spec(), args, false, false, Handler(d))
	require.Nil(t, out["failed"], out["msg"])
	for what, max := range map[string]time.Duration{"plan slow": 10 * time.Minute, "apply slow": 10 * time.Minute, "plan site": time.Minute, "apply site": time.Minute} {
		require.Contains(t, cfgs.left, what)
		assert.LessOrEqual(t, cfgs.left[what], max, what)
		assert.Greater(t, cfgs.left[what], max-30*time.Second, what)
	}
}

// In check mode a config whose directory the packages step will install is predicted
// written with its diff, as the real run shows it: against no file (the directory is not
// there), the content hidden when sensitive.
func TestCheckModeDiffOfADeferredConfig(t *testing.T) {
	needsRoot(t)
	for _, sensitive := range []bool{false, true} {
		t.Run(fmt.Sprint("sensitive=", sensitive), func(t *testing.T) {
			root := t.TempDir() // no /etc/demo: the package brings it
			pkgs := moduleOf(rpmexact.Spec(), func(context.Context, *ansible.Request) (any, error) {
				return map[string]any{"changed": true, "package_changed": true}, nil
			})
			d := Deps{
				Packages: predicted(fakePredict{pkg: true}, pkgs),
				Configs:  ConfigFiles{Root: root},
				Predict:  fakePredict{pkg: true},
				Pending:  &fakePending{records: map[string]*durable.Pending{}},
			}
			cfg := siteConfig("site")
			cfg["sensitive"] = sensitive
			args := map[string]any{"name": "demo", "packages": []any{map[string]any{"name": "demo", "version": "0:1.0-1.noarch"}},
				"configs": []any{cfg}}
			out := ansible.Call(context.Background(), Spec(), args, true, true, Handler(d))
			require.Nil(t, out["failed"], out["msg"])
			configs, _ := out["configs"].([]any)
			require.Len(t, configs, 1)
			c := configs[0].(map[string]any)
			assert.Equal(t, true, c["changed"])
			diff, _ := c["diff"].(map[string]any)
			require.NotNil(t, diff, "the config's diff")
			assert.Equal(t, "", diff["before"])
			want := "# mode 0644, owner 0, group 0\nlisten 80\n"
			if sensitive {
				want = "# mode 0644, owner 0, group 0\n# content hidden: sensitive\n"
			}
			assert.Equal(t, want, diff["after"])
			all, _ := out["diff"].(map[string]any)
			require.NotNil(t, all, "the service's diff")
			assert.Contains(t, all["after"], "# config site\n"+want)
		})
	}
}

// needsRoot: the row writes through configfile on a temporary root, whose directories
// must be root's.
func needsRoot(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("configfile refuses directories not root's: run as root")
	}
}

// renameFails plans no change of any config, then at Apply finds one to write (another
// run moved the file since the plan): its hook records the reaction the plan missed, and
// the rename fails, the file unchanged.
type renameFails struct{ fakeConfigs }

func (f *renameFails) Apply(_ context.Context, p configfile.Plan, before func() error) (*configfile.Result, error) {
	if err := before(); err != nil {
		return nil, err
	}
	res := p.Result()
	res.Changed, res.Plan = false, nil
	return res, fmt.Errorf("config %q (%s): %s %w: rename: input/output error", p.Want.Name, p.Want.Path, p.Want.Path, atomicfile.ErrNotReplaced)
}

// What the hook recorded right before a rename that then failed is withdrawn: the file did
// not change, so nothing is owed for it, and the record there was before the run is back.
func TestAFailedRenameWithdrawsWhatItsHookRecorded(t *testing.T) {
	earlier := &durable.Pending{Reaction: "reload", Triggers: []string{"earlier"}}
	pending := &fakePending{records: map[string]*durable.Pending{"web.service": earlier}}
	cfgs := &renameFails{}
	d := Deps{Configs: cfgs, Pending: pending,
		Now: func() (stamp.Stamp, error) { return stamp.Stamp{BootID: "b", Mono: 1}, nil }}
	args := map[string]any{"name": "demo", "configs": []any{siteConfig("site")},
		"processes": []any{map[string]any{"unit": "demo", "restart_on": []any{"config:site"}},
			map[string]any{"unit": "web", "restart_on": []any{"config:site"}}}}
	out := ansible.Call(context.Background(), Spec(), args, false, false, Handler(d))
	require.Equal(t, true, out["failed"])
	assert.Equal(t, "config site", out["failed_step"])
	assert.Nil(t, pending.records["demo.service"], "the restart the hook recorded is withdrawn")
	assert.Equal(t, earlier, pending.records["web.service"], "the earlier record is back")
	assert.Equal(t, []any{"record-pending demo.service restart", "record-pending web.service restart",
		"withdraw-pending demo.service", "withdraw-pending web.service"}, out["plan"])
}

// diffingConfigs is fakeConfigs whose writes carry a diff, with the old content in it.
type diffingConfigs struct{ fakeConfigs }

func (f *diffingConfigs) Plan(ctx context.Context, c configfile.Config) (configfile.Plan, error) {
	p, err := f.fakeConfigs.Plan(ctx, c)
	if p.Changed() {
		p.Diff = &ansible.Diff{Before: "requirepass old-secret\n", After: c.Content}
	}
	return p, err
}

// A config's diff (its previous content, when not sensitive) is in the result only in
// diff mode, as Ansible's own modules do: not in every result a controller stores, in
// check mode or not.
func TestAConfigsDiffOnlyInDiffMode(t *testing.T) {
	for _, check := range []bool{false, true} {
		for _, diff := range []bool{false, true} {
			t.Run(fmt.Sprintf("check %v, diff %v", check, diff), func(t *testing.T) {
				d := Deps{Configs: &diffingConfigs{fakeConfigs{write: true}}}
				args := map[string]any{"name": "demo", "configs": []any{siteConfig("site")}}
				out := ansible.Call(context.Background(), Spec(), args, check, diff, Handler(d))
				require.Nil(t, out["failed"], out["msg"])
				configs, _ := out["configs"].([]any)
				require.Len(t, configs, 1)
				c := configs[0].(map[string]any)
				assert.Equal(t, true, c["changed"])
				_, has := c["diff"]
				assert.Equal(t, diff, has, "configs[0].diff")
				_, has = out["diff"]
				assert.Equal(t, diff, has, "diff")
				if diff {
					assert.Contains(t, out["diff"].(map[string]any)["before"], "requirepass old-secret")
				} else {
					data, err := json.Marshal(out)
					require.NoError(t, err)
					assert.NotContains(t, string(data), "old-secret", "the old content nowhere in the result")
				}
			})
		}
	}
}
