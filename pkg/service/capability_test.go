package service

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/richt/services/pkg/ansible"
	"github.com/richt/services/pkg/durable"
	"github.com/richt/services/pkg/lifecycle"
	"github.com/richt/services/pkg/override"
	"github.com/richt/services/pkg/rpmexact"
	"github.com/richt/services/pkg/stamp"
	"github.com/richt/services/pkg/systemd"
)

// fakeShow is the manager's view of every unit: p.
type fakeShow struct{ p *systemd.Props }

func (f fakeShow) Show(context.Context, string) (systemd.Props, error) { return *f.p, nil }

// runHook is a step that does f when it runs for real, before the step's own run: the
// files a package's transaction puts on disk.
type runHook struct {
	Step
	f func()
}

func (h runHook) Run(ctx context.Context, req *ansible.Request) (any, error) {
	if !req.CheckMode {
		h.f()
	}
	return h.Step.Run(ctx, req)
}

// onRun is m whose steps do f when they run for real.
func onRun(m Module, f func()) Module {
	return Module{Spec: m.Spec, Plan: func(ctx context.Context, req *ansible.Request) Step {
		return runHook{Step: m.Plan(ctx, req), f: f}
	}}
}

// writeUnitFiles puts files (path under root → content) on disk below root.
func writeUnitFiles(t *testing.T, root string, files map[string]string) {
	t.Helper()
	for p, content := range files {
		full := filepath.Join(root, p)
		require.NoError(t, os.MkdirAll(filepath.Dir(full), 0o755))
		require.NoError(t, os.WriteFile(full, []byte(content), 0o644))
	}
}

// A process whose reactions can contain a reload (by name: a reload_on; by default: a
// drop-in of its unit with reload: true) needs a reload-capable unit, checked on every
// run, before any change where the files tell (the unit's files on disk with the
// service's own unit files and drop-ins as it will write them), and right after the
// packages step for a unit that step installs or changes, before any config, file or
// process step. A reload is never turned into a restart: a unit that cannot reload is
// refused, naming the process, the parameter and the reason, and nothing after the
// check changes. Where both runs pass, check mode's plan is the real run's.
func TestReloadCapabilityBeforeActing(t *testing.T) {
	const frag = "/usr/lib/systemd/system/demo.service"
	noReload := "[Service]\nExecStart=/bin/demo\n"
	withReload := "[Service]\nExecStart=/bin/demo\nExecReload=/bin/kill -HUP $MAINPID\n"
	reloadDropin := map[string]any{"unit": "demo", "name": "30-reload.conf", "content": "[Service]\nExecReload=/bin/kill -HUP $MAINPID\n"}
	byName := func(proc map[string]any, kv ...any) map[string]any {
		args := map[string]any{"name": "demo",
			"packages":  []any{map[string]any{"name": "demo", "version": "0:1.0-1.noarch"}},
			"configs":   []any{siteConfig("site")},
			"processes": []any{proc}}
		return with(args, kv...)
	}
	reloadSite := map[string]any{"unit": "demo", "reload_on": []any{"config:site"}}
	unmaskSite := map[string]any{"unit": "demo", "masked": false, "reload_on": []any{"config:site"}}
	noPackages := func(proc map[string]any, configs ...any) map[string]any {
		if len(configs) == 0 {
			configs = []any{siteConfig("site")}
		}
		return map[string]any{"name": "demo", "configs": configs, "processes": []any{proc}}
	}
	const dropinPath = "/etc/systemd/system/demo.service.d/50-reload.conf"
	unitConfig := func(content string) map[string]any {
		return map[string]any{"name": "site", "path": dropinPath, "content": content}
	}
	const generated = "/run/systemd/generator.late/demo.service"
	cases := []struct {
		name string
		args map[string]any
		// disk: the unit files on disk before the run; install: those the packages
		// step puts there (a real run); masks: links to /dev/null on disk.
		disk, install map[string]string
		masks         []string
		// shown: the manager's view of the unit (nil: no manager to ask).
		shown   *systemd.Props
		pkg     bool // the packages plan installs
		files   bool // the unit files' and drop-ins' plans write
		configs bool // the configs' plans write
		// at: where the run is refused: "" (never), "compose" (before any step, also in
		// check mode) or "packages" (right after the packages step, in the real run;
		// check mode cannot know it and passes).
		at      string
		wantErr []string
		step    string // failed_step
	}{
		{name: "reload_on on a unit without ExecReload: refused before any step",
			args: byName(reloadSite), disk: map[string]string{frag: noReload}, configs: true,
			at: "compose", step: "process demo.service",
			wantErr: []string{"processes[0].reload_on", "demo.service", "no ExecReload= and no Type=notify-reload in " + frag,
				"ExecReload=", "restart_on", "nothing was changed"}},
		{name: "a drop-in the service owns adds ExecReload: capable",
			args: byName(reloadSite, "dropins", []any{reloadDropin}), disk: map[string]string{frag: noReload},
			files: true, configs: true},
		{name: "the packages step installs the unit, an owned drop-in declares ExecReload: passes at compose",
			args: byName(reloadSite, "dropins", []any{reloadDropin}), install: map[string]string{frag: noReload},
			pkg: true, files: true, configs: true},
		{name: "the packages step installs the unit, nothing declares a reload: refused right after it",
			args: byName(reloadSite), install: map[string]string{frag: noReload}, pkg: true, configs: true,
			at: "packages", step: "process demo.service",
			wantErr: []string{"processes[0].reload_on", "after the packages step", "no ExecReload= and no Type=notify-reload in " + frag,
				"restart_on"}},
		{name: "the packages step installs a reload-capable unit: passes after it",
			args: byName(reloadSite), install: map[string]string{frag: withReload}, pkg: true, configs: true},
		{name: "default wiring: a reload: true drop-in on a unit without ExecReload is refused",
			args: map[string]any{"name": "demo",
				"dropins":   []any{map[string]any{"unit": "demo", "name": "20.conf", "reload": true, "content": "[Service]\nEnvironment=A=1\n"}},
				"processes": []any{map[string]any{"unit": "demo"}}},
			disk: map[string]string{frag: noReload}, files: true,
			at: "compose", step: "process demo.service",
			wantErr: []string{"processes[0]", "dropins[0].reload", "demo.service/20.conf", "no ExecReload=", "nothing was changed"}},
		{name: "nothing changed, a capable unit: passes",
			args: byName(reloadSite), disk: map[string]string{frag: withReload}},
		{name: "nothing changed, a unit without ExecReload: refused all the same",
			args: byName(reloadSite), disk: map[string]string{frag: noReload},
			at: "compose", step: "process demo.service", wantErr: []string{"processes[0].reload_on", "no ExecReload="}},
		{name: "restart_on only: no reload, nothing to check",
			args: byName(map[string]any{"unit": "demo", "restart_on": []any{"config:site"}}), disk: map[string]string{frag: noReload}, configs: true},
		{name: "reload_on with an outside trigger only: checked all the same",
			args: byName(map[string]any{"unit": "demo", "reload_on": []any{map[string]any{"certs": map[string]any{"changed": false}}}}),
			disk: map[string]string{frag: noReload}, configs: true,
			at: "compose", step: "process demo.service", wantErr: []string{"processes[0].reload_on", "no ExecReload="}},
		{name: "a process to be masked: its reactions are ignored, nothing to check",
			args: byName(map[string]any{"unit": "demo", "state": "stopped", "masked": true, "reload_on": []any{"config:site"}}),
			disk: map[string]string{frag: noReload}, configs: true},
		{name: "the second process cannot reload: refused naming it, the first untouched",
			args: byName(reloadSite, "processes", []any{reloadSite,
				map[string]any{"unit": "other", "reload_on": []any{"config:site"}}}),
			disk: map[string]string{frag: withReload, "/usr/lib/systemd/system/other.service": noReload}, configs: true,
			at: "compose", step: "process other.service",
			wantErr: []string{"processes[1].reload_on needs other.service", "/usr/lib/systemd/system/other.service"}},
		{name: "an administrator's drop-in on disk resets ExecReload after the service's: refused",
			args:  byName(reloadSite, "dropins", []any{reloadDropin}),
			disk:  map[string]string{frag: withReload, "/etc/systemd/system/demo.service.d/90-reset.conf": "[Service]\nExecReload=\n"},
			files: true, configs: true, at: "compose", step: "process demo.service",
			wantErr: []string{"reset (empty assignment) by /etc/systemd/system/demo.service.d/90-reset.conf"}},
		{name: "the service's unit file replaces the one on disk of its path: its content counts",
			args:  byName(reloadSite, "units", []any{map[string]any{"unit": "demo", "content": noReload}}),
			disk:  map[string]string{"/etc/systemd/system/demo.service": withReload},
			files: true, configs: true, at: "compose", step: "process demo.service",
			wantErr: []string{"no ExecReload= and no Type=notify-reload in /etc/systemd/system/demo.service"}},
		{name: "masked, unmasked by the process: the real fragment after the mask reloads",
			args: noPackages(unmaskSite), masks: []string{"/etc/systemd/system/demo.service"},
			disk: map[string]string{frag: withReload}, configs: true},
		{name: "masked, unmasked by the process: the real fragment after the mask cannot reload",
			args: noPackages(unmaskSite), masks: []string{"/etc/systemd/system/demo.service"},
			disk: map[string]string{frag: noReload}, configs: true,
			at: "compose", step: "process demo.service",
			wantErr: []string{"processes[0].reload_on", "no ExecReload= and no Type=notify-reload in " + frag}},
		{name: "masked and left masked: its reactions are ignored, nothing to check",
			args:  noPackages(map[string]any{"unit": "demo", "state": "stopped", "reload_on": []any{"config:site"}}),
			masks: []string{"/etc/systemd/system/demo.service"}, disk: map[string]string{frag: noReload}, configs: true},
		{name: "no file on disk, no packages (a generated unit): left to the process step",
			args: noPackages(reloadSite), configs: true},
		{name: "no file on disk, the manager names a generated one that cannot reload: refused",
			args: noPackages(reloadSite), disk: map[string]string{generated: noReload}, configs: true,
			shown: &systemd.Props{LoadState: "loaded", FragmentPath: generated},
			at:    "compose", step: "process demo.service",
			wantErr: []string{"processes[0].reload_on", "no ExecReload= and no Type=notify-reload in " + generated}},
		{name: "no file on disk, the manager names a generated one that reloads: passes",
			args: noPackages(reloadSite), disk: map[string]string{generated: withReload}, configs: true,
			shown: &systemd.Props{LoadState: "loaded", FragmentPath: generated}},
		{name: "a config that is a drop-in adding ExecReload: capable on the first run",
			args: noPackages(reloadSite, unitConfig("[Service]\nExecReload=/bin/kill -HUP $MAINPID\n")),
			disk: map[string]string{frag: noReload}, configs: true},
		{name: "a config that is a drop-in resetting ExecReload: refused before any change",
			args: noPackages(reloadSite, unitConfig("[Service]\nExecReload=\n")),
			disk: map[string]string{frag: withReload}, configs: true,
			at: "compose", step: "process demo.service",
			wantErr: []string{"processes[0].reload_on", "reset (empty assignment) by " + dropinPath}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			run := func(check bool) (map[string]any, *recorder, *fakeConfigs, *fakePending) {
				root := t.TempDir()
				writeUnitFiles(t, root, c.disk)
				for _, m := range c.masks {
					require.NoError(t, os.MkdirAll(filepath.Dir(filepath.Join(root, m)), 0o755))
					require.NoError(t, os.Symlink("/dev/null", filepath.Join(root, m)))
				}
				units := &UnitFiles{Root: root}
				if c.shown != nil {
					units.Manager = fakeShow{c.shown}
				}
				rc := &recorder{t: t, plans: map[string]int{}, args: map[string]map[string]any{}}
				cfgs := &fakeConfigs{write: c.configs}
				pending := &fakePending{records: map[string]*durable.Pending{}}
				when := func(b bool, names ...string) func(*ansible.Request) ([]string, bool) {
					return func(*ansible.Request) ([]string, bool) {
						if !b {
							return nil, false
						}
						return names, true
					}
				}
				pkgs := rc.module(rpmexact.Spec(), func(ansible.Values) string { return "packages" },
					func(req *ansible.Request) ([]string, bool) {
						p, err := fakePredict{pkg: c.pkg}.PlanPackages(context.Background(), wantOf(t, req))
						require.NoError(t, err)
						return p.Names(), p.Changes()
					},
					func(string) map[string]any {
						return map[string]any{"changed": c.pkg, "package_changed": c.pkg, "unit_files_changed": c.pkg}
					})
				d := Deps{
					Packages: onRun(pkgs, func() { writeUnitFiles(t, root, c.install) }),
					Files: rc.module(override.Spec(), func(v ansible.Values) string {
						return fmt.Sprintf("file %s/%s", unitOf(v.String("unit")), v.String("name"))
					}, when(c.files, "write"), func(string) map[string]any { return map[string]any{"changed": c.files} }),
					Processes: rc.module(lifecycle.Spec(), func(v ansible.Values) string { return "process " + unitOf(v.String("unit")) },
						when(false), func(string) map[string]any { return map[string]any{"changed": false} }),
					Configs: cfgs,
					Predict: fakePredict{pkg: c.pkg},
					Pending: pending,
					Reload:  func(context.Context) error { return nil },
					Now:     func() (stamp.Stamp, error) { return stamp.Stamp{BootID: "b", Mono: 1}, nil },
					Units:   units,
				}
				out := ansible.Call(context.Background(), Spec(), c.args, check, false, Handler(d))
				return out, rc, cfgs, pending
			}
			refused := func(out map[string]any) {
				t.Helper()
				require.Equal(t, true, out["failed"], "refused")
				for _, w := range c.wantErr {
					assert.Contains(t, out["msg"], w)
				}
				assert.Equal(t, c.step, out["failed_step"])
			}
			check, _, checkCfgs, _ := run(true)
			real, rc, cfgs, pending := run(false)
			switch c.at {
			case "compose":
				for _, out := range []map[string]any{check, real} {
					refused(out)
					assert.Nil(t, out["packages"], "no packages step")
					assert.Empty(t, out["configs"], "no config step")
					assert.Empty(t, out["files"], "no file step")
					assert.Empty(t, out["processes"], "no process step")
				}
				assert.Empty(t, rc.applied, "the real run carried out no step")
				assert.Empty(t, checkCfgs.applied)
				assert.Empty(t, cfgs.applied, "no config written")
				assert.Empty(t, pending.records, "no reaction recorded")
			case "packages":
				require.Nil(t, check["failed"], "check mode cannot know it: %v", check["msg"])
				refused(real)
				assert.Equal(t, []string{"packages"}, rc.applied, "the packages step, and nothing after it")
				assert.Empty(t, cfgs.applied, "no config written")
				assert.Empty(t, real["configs"])
				assert.Empty(t, real["files"])
				assert.Empty(t, real["processes"])
				assert.Empty(t, pending.records, "no reload recorded for the config")
			default:
				require.Nil(t, check["failed"], "check mode: %v", check["msg"])
				require.Nil(t, real["failed"], "real run: %v", real["msg"])
				assert.Equal(t, check["plan"], real["plan"], "check mode's plan is the real run's")
				assert.Contains(t, rc.applied, "process "+unitOf(c.args["processes"].([]any)[0].(map[string]any)["unit"].(string)))
			}
		})
	}
}
