package wiring

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/richt/services/pkg/contract"
	"github.com/richt/services/pkg/reaction"
	"github.com/richt/services/pkg/stamp"
)

// result is a step's result that changed, with the contract keys a served restart reads.
func result(placedMono uint64) map[string]any {
	r := map[string]any{"changed": true, "package_changed": true}
	if placedMono > 0 {
		r["files_placed"] = map[string]any{"boot_id": "b", "monotonic_us": float64(placedMono)}
	}
	return r
}

var unchanged = map[string]any{"changed": false}

// asJSON compares trigger lists as systemd_lifecycle receives them.
func asJSON(t *testing.T, v any) string {
	t.Helper()
	data, err := json.Marshal(v)
	require.NoError(t, err)
	return string(data)
}

// wire is Wire's lists for p, its reactions read by Check as the service does before it
// acts.
func wire(t *testing.T, p Process, parts Parts, outcomes map[Ref]map[string]any) (restart, reload []any) {
	t.Helper()
	r, err := parts.Check(p)
	require.NoError(t, err)
	return Wire(p.Unit, r, parts, typed(outcomes)).Lists()
}

// typed are the steps' results as the outcomes the service reads from them: changed and
// the contract (nil: unchanged).
func typed(results map[Ref]map[string]any) Outcomes {
	out := Outcomes{}
	for r, m := range results {
		out[r] = Outcome{Changed: contract.Changed(m), Change: contract.Read(m)}
	}
	return out
}

func TestWireByName(t *testing.T) {
	pkg := result(500)
	// A key of the step's result beyond changed and the contract does not travel.
	site := map[string]any{"changed": true, "diff": "x"}
	outcomes := map[Ref]map[string]any{
		{Kind: Package, Name: "nginx"}:                                pkg,
		{Kind: Config, Name: "site"}:                                  site,
		{Kind: Config, Name: "main"}:                                  unchanged,
		{Kind: Unit, Unit: "nginx"}:                                   map[string]any{"changed": true},
		{Kind: Dropin, Unit: "nginx", Name: "20-env.conf"}:            map[string]any{"changed": true},
		{Kind: Dropin, Unit: "nginx.service", Name: "10-limits.conf"}: nil,
	}
	outside := map[string]any{"cert": map[string]any{"changed": true}}
	cases := []struct {
		name            string
		restart, reload []any
		wantRestart     string
		wantReload      string
		due             reaction.Kind
	}{
		{name: "a named config reloads; the package change it does not name gets nothing",
			reload:      []any{"config:site"},
			wantRestart: `null`, wantReload: `[{"config:site":{"changed":true}}]`, due: reaction.Reload},
		{name: "an unrelated change gets no reaction",
			restart:     []any{"package:nginx-mod-stream", "config:main"},
			wantRestart: `[{"package:nginx-mod-stream":{"changed":false}},{"config:main":{"changed":false}}]`, wantReload: `null`, due: reaction.None},
		{name: "the named package restarts, a reload named too is for systemd_lifecycle to merge",
			restart: []any{"package:nginx"}, reload: []any{"config:site"},
			wantRestart: `[{"package:nginx":{"changed":true,"files_placed":{"boot_id":"b","monotonic_us":500},"package_changed":true}}]`,
			wantReload:  `[{"config:site":{"changed":true}}]`, due: reaction.Restart},
		{name: "references first, in order, canonical; then outside triggers unchanged, in order",
			restart:     []any{outside, "unit:nginx", false, "dropin:nginx/10-limits.conf"},
			wantRestart: `[{"unit:nginx.service":{"changed":true}},{"dropin:nginx.service/10-limits.conf":{"changed":false}},{"cert":{"changed":true}},false]`,
			wantReload:  `null`, due: reaction.Restart},
		{name: "a drop-in's reload: true means nothing by name: it restarts when named there",
			restart:     []any{"dropin:nginx.service/20-env.conf"},
			wantRestart: `[{"dropin:nginx.service/20-env.conf":{"changed":true}}]`, wantReload: `null`, due: reaction.Restart},
		{name: "restart_on: [false] reacts to nothing",
			restart: []any{false}, wantRestart: `[false]`, wantReload: `null`, due: reaction.None},
		{name: "only outside triggers: by name, the service's own changes get nothing",
			reload: []any{outside}, wantRestart: `null`, wantReload: `[{"cert":{"changed":true}}]`, due: reaction.Reload},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := Process{Param: "processes[0]", Unit: "nginx", RestartOn: c.restart, ReloadOn: c.reload}
			restart, reload := wire(t, p, nginxParts, outcomes)
			assert.JSONEq(t, c.wantRestart, asJSON(t, restart))
			assert.JSONEq(t, c.wantReload, asJSON(t, reload))
			trig, err := reaction.Parse(restart, reload)
			require.NoError(t, err, "systemd_lifecycle takes what Wire builds")
			assert.Equal(t, c.due, reaction.Due(trig, reaction.None))
		})
	}
}

// TestWireTakesOnlyWhatCheckRead: Wire takes Reactions, which only Check makes, so a
// reference Check refuses cannot be wired.
func TestWireTakesOnlyWhatCheckRead(t *testing.T) {
	r, err := nginxParts.Check(Process{Param: "processes[2]", Unit: "nginx", ReloadOn: []any{"config:nope"}})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "processes[2].reload_on[0]: config:nope is not one of the service's configs")
	assert.False(t, r.ByName(), "refused: no reactions")
}

func TestWireDefault(t *testing.T) {
	outcomes := map[Ref]map[string]any{
		{Kind: Package, Name: "nginx"}:                     result(500),
		{Kind: Config, Name: "site"}:                       {"changed": true},
		{Kind: Dropin, Unit: "nginx", Name: "20-env.conf"}: {"changed": true},
	}
	cases := []struct {
		unit                    string
		wantRestart, wantReload string
		due                     reaction.Kind
	}{
		{unit: "nginx",
			wantRestart: `[{"package:nginx":{"changed":true,"files_placed":{"boot_id":"b","monotonic_us":500},"package_changed":true}},
				{"package:nginx-mod-stream":{"changed":false}},
				{"config:main":{"changed":false}},{"config:site":{"changed":true}},
				{"unit:nginx.service":{"changed":false}},
				{"dropin:nginx.service/10-limits.conf":{"changed":false}}]`,
			wantReload: `[{"dropin:nginx.service/20-env.conf":{"changed":true}}]`, due: reaction.Restart},
		// Another unit's process: every package and config, none of nginx's files.
		{unit: "php-fpm.service",
			wantRestart: `[{"package:nginx":{"changed":true,"files_placed":{"boot_id":"b","monotonic_us":500},"package_changed":true}},
				{"package:nginx-mod-stream":{"changed":false}},
				{"config:main":{"changed":false}},{"config:site":{"changed":true}}]`,
			wantReload: `null`, due: reaction.Restart},
	}
	for _, c := range cases {
		t.Run(c.unit, func(t *testing.T) {
			for _, p := range []Process{{Unit: c.unit}, {Unit: c.unit, RestartOn: []any{}, ReloadOn: []any{}}} {
				restart, reload := wire(t, p, nginxParts, outcomes)
				assert.JSONEq(t, c.wantRestart, asJSON(t, restart))
				assert.JSONEq(t, c.wantReload, asJSON(t, reload))
				trig, err := reaction.Parse(restart, reload)
				require.NoError(t, err)
				assert.Equal(t, c.due, reaction.Due(trig, reaction.None))
			}
		})
	}
	// A config change alone restarts every process, never reloads it (no reload
	// capability was promised).
	restart, reload := wire(t, Process{Unit: "php-fpm"}, nginxParts, map[Ref]map[string]any{{Kind: Config, Name: "main"}: {"changed": true}})
	assert.Nil(t, reload)
	trig, err := reaction.Parse(restart, reload)
	require.NoError(t, err)
	assert.Equal(t, reaction.Restart, reaction.Due(trig, reaction.None))
	// Nothing declared: nothing to wire.
	restart, reload = wire(t, Process{Unit: "demo"}, Parts{}, nil)
	assert.Nil(t, restart)
	assert.Nil(t, reload)
}

// file is one unit file (name "") or drop-in as the service's files step had it.
type file struct {
	unit, name string
	reload     bool
}

// today is (*run).triggers of pkg/service at commit 9755938, the wiring before references,
// as the oracle of TestWireDefaultIsToday: the packages step's result restarts every
// process; the unit files and drop-ins of the process's unit that ran (outs, in files'
// order) restart it, or reload it for reload: true, grouped in three loops.
func today(unit string, pkgRes map[string]any, files []file, outs []map[string]any) (restart, reload []any) {
	packages := any(unchanged)
	if pkgRes != nil {
		packages = pkgRes
	}
	var units, dropins, reloads []any
	for i, f := range files {
		if normal(f.unit) != normal(unit) || i >= len(outs) {
			continue
		}
		switch {
		case f.reload:
			reloads = append(reloads, outs[i])
		case f.name != "":
			dropins = append(dropins, outs[i])
		default:
			units = append(units, outs[i])
		}
	}
	loop := func(items []any) map[string]any {
		if items == nil {
			items = []any{}
		}
		return map[string]any{"changed": false, "results": items}
	}
	restart = []any{
		map[string]any{"packages": packages},
		map[string]any{"unit files": loop(units)},
		map[string]any{"drop-ins": loop(dropins)},
	}
	if len(reloads) > 0 {
		reload = []any{map[string]any{"reload drop-ins": loop(reloads)}}
	}
	return restart, reload
}

// meaning is what systemd_lifecycle reads from the trigger lists: the reaction due, the
// contract flags, and whether the restart counts as served for a unit activated at each
// moment. Whether reload_on is given (the unit must then be reload-capable) is compared
// apart.
func meaning(t *testing.T, restart, reload []any) string {
	t.Helper()
	trig, err := reaction.Parse(restart, reload)
	require.NoError(t, err)
	now := stamp.Stamp{BootID: "b", Mono: 10_000}
	var served []bool
	for _, at := range []uint64{100, 550, 750, 900} {
		served = append(served, reaction.RestartServed(trig, now, at))
	}
	return fmt.Sprintf("due=%s package_changed=%v unit_files_changed=%v served=%v",
		reaction.Due(trig, reaction.None), trig.PackageChanged(), trig.UnitFilesChanged(), served)
}

// TestWireDefaultIsToday: for the inputs of the service's wiring before references, the
// default wiring means to systemd_lifecycle exactly what that wiring meant, per part
// instead of grouped. A changed package's outcome is the packages step's result (the
// service passes each moved package the step's contract keys).
//
// One difference is intended: reload_on is given whenever the process's unit has a
// declared reload: true drop-in, so its reload capability is checked on every run (issue
// 31 item 4); the old wiring gave it only when that drop-in's step had run, which differs
// only if the files step stopped before it, and then the process step never ran.
func TestWireDefaultIsToday(t *testing.T) {
	unitFile := map[string]any{"changed": true, "unit_files_changed": true, "daemon_reload": "none"}
	dropin := func(mono uint64) map[string]any {
		r := map[string]any{"changed": true, "unit_files_changed": true, "daemon_reload": "none"}
		if mono > 0 {
			r["files_placed"] = map[string]any{"boot_id": "b", "monotonic_us": float64(mono)}
		}
		return r
	}
	demoFiles := []file{
		{unit: "demo.service"},
		{unit: "other"},
		{unit: "demo", name: "10.conf"},
		{unit: "demo", name: "20.conf", reload: true},
		{unit: "other.service", name: "30.conf", reload: true},
	}
	cases := []struct {
		name     string
		packages []string
		moved    []bool         // per package
		pkgRes   map[string]any // the packages step's result; nil: it did not run
		files    []file
		outs     []map[string]any // the file steps that ran, in order
	}{
		{name: "nothing ran", packages: []string{"demo"}, moved: []bool{false}, files: demoFiles},
		{name: "nothing changed", packages: []string{"demo"}, moved: []bool{false}, pkgRes: unchanged, files: demoFiles,
			outs: []map[string]any{unchanged, unchanged, unchanged, unchanged, unchanged}},
		{name: "one of two packages moved, files placed", packages: []string{"demo", "demo-libs"}, moved: []bool{true, false},
			pkgRes: result(500), files: demoFiles, outs: []map[string]any{unchanged, unchanged, unchanged, unchanged, unchanged}},
		{name: "both packages moved, no files_placed", packages: []string{"demo", "demo-libs"}, moved: []bool{true, true},
			pkgRes: result(0), files: demoFiles, outs: []map[string]any{unchanged, unchanged, unchanged, unchanged, unchanged}},
		{name: "own unit file changed", packages: []string{"demo"}, moved: []bool{false}, pkgRes: unchanged, files: demoFiles,
			outs: []map[string]any{unitFile, unchanged, unchanged, unchanged, unchanged}},
		{name: "another unit's unit file changed", packages: []string{"demo"}, moved: []bool{false}, pkgRes: unchanged, files: demoFiles,
			outs: []map[string]any{unchanged, unitFile, unchanged, unchanged, unchanged}},
		{name: "own restart drop-in changed", packages: []string{"demo"}, moved: []bool{false}, pkgRes: unchanged, files: demoFiles,
			outs: []map[string]any{unchanged, unchanged, dropin(700), unchanged, unchanged}},
		{name: "own reload drop-in changed", packages: []string{"demo"}, moved: []bool{false}, pkgRes: unchanged, files: demoFiles,
			outs: []map[string]any{unchanged, unchanged, unchanged, dropin(0), unchanged}},
		{name: "reload drop-in and package: the restart", packages: []string{"demo"}, moved: []bool{true}, pkgRes: result(500), files: demoFiles,
			outs: []map[string]any{unchanged, unchanged, unchanged, dropin(600), unchanged}},
		{name: "package and restart drop-in, both placed", packages: []string{"demo"}, moved: []bool{true}, pkgRes: result(500), files: demoFiles,
			outs: []map[string]any{unchanged, unchanged, dropin(700), unchanged, unchanged}},
		{name: "another unit's reload drop-in changed", packages: []string{"demo"}, moved: []bool{false}, pkgRes: unchanged, files: demoFiles,
			outs: []map[string]any{unchanged, unchanged, unchanged, unchanged, dropin(0)}},
		{name: "files step stopped after the first two", packages: []string{"demo"}, moved: []bool{true}, pkgRes: result(500), files: demoFiles,
			outs: []map[string]any{unitFile, unchanged}},
		{name: "no packages", files: demoFiles, outs: []map[string]any{unchanged, unchanged, dropin(0), dropin(0), unchanged}},
		{name: "no files", packages: []string{"demo"}, moved: []bool{true}, pkgRes: result(500)},
	}
	for _, c := range cases {
		var parts Parts
		outcomes := map[Ref]map[string]any{}
		parts.Packages = c.packages
		for i, n := range c.packages {
			if c.pkgRes != nil && c.moved[i] {
				outcomes[Ref{Kind: Package, Name: n}] = c.pkgRes
			}
		}
		for i, f := range c.files {
			r := Ref{Kind: Unit, Unit: f.unit}
			if f.name == "" {
				parts.Units = append(parts.Units, f.unit)
			} else {
				r = Ref{Kind: Dropin, Unit: f.unit, Name: f.name}
				parts.Dropins = append(parts.Dropins, DropinPart{Unit: f.unit, Name: f.name, Reload: f.reload})
			}
			if i < len(c.outs) {
				outcomes[r] = c.outs[i]
			}
		}
		for _, unit := range []string{"demo", "demo.service", "other", "third"} {
			t.Run(c.name+"/"+unit, func(t *testing.T) {
				oldRestart, oldReload := today(unit, c.pkgRes, c.files, c.outs)
				restart, reload := wire(t, Process{Param: "processes[0]", Unit: unit}, parts, outcomes)
				assert.Equal(t, meaning(t, oldRestart, oldReload), meaning(t, restart, reload))
				reloadDropin := false
				for _, f := range c.files {
					reloadDropin = reloadDropin || f.reload && normal(f.unit) == normal(unit)
				}
				assert.Equal(t, reloadDropin, len(reload) > 0, "reload_on given")
				if len(c.outs) == len(c.files) {
					assert.Equal(t, len(oldReload) > 0, len(reload) > 0, "reload_on given, as before")
				}
			})
		}
	}
}

// TestWireMarksOwnParts: each trigger says whether it is one of the service's parts, so
// that a caller tells them from outside triggers without reading names; an outside
// trigger's Outcome is never read, even when it reports a change.
func TestWireMarksOwnParts(t *testing.T) {
	changed := map[string]any{"changed": true}
	p := Process{Param: "processes[0]", Unit: "nginx",
		RestartOn: []any{map[string]any{"cert": changed}, "config:site", true},
		ReloadOn:  []any{"dropin:nginx/20-env.conf"}}
	r, err := nginxParts.Check(p)
	require.NoError(t, err)
	got := Wire(p.Unit, r, nginxParts, typed(map[Ref]map[string]any{{Kind: Config, Name: "site"}: changed}))
	own := func(ts []Trigger) (out []bool) {
		for _, tr := range ts {
			out = append(out, tr.Own())
		}
		return out
	}
	assert.Equal(t, []bool{true, false, false}, own(got.Restart), "references first, then outside triggers")
	assert.Equal(t, []bool{true}, own(got.Reload))
	assert.Equal(t, Ref{Kind: Dropin, Unit: "nginx.service", Name: "20-env.conf"}, got.Reload[0].Ref, "canonical")
	assert.Equal(t, Outcome{Changed: true}, got.Restart[0].Outcome)
	assert.Equal(t, Unchanged, got.Restart[1].Outcome)
	for _, tr := range defaults("nginx", nginxParts, triggerOf(nil)).Restart {
		assert.True(t, tr.Own(), "the default wiring is all parts: %v", tr.Ref)
	}
}

// TestWirePassesLibrariesOn: restart_on's libraries reaches systemd_lifecycle as the item
// itself, after the process's references, as every outside trigger does.
func TestWirePassesLibrariesOn(t *testing.T) {
	p := Process{Param: "processes[0]", Unit: "nginx", RestartOn: []any{"libraries", "package:nginx"}}
	r, err := nginxParts.Check(p)
	require.NoError(t, err)
	restart, reload := Wire("nginx", r, nginxParts, nil).Lists()
	assert.Equal(t, []any{map[string]any{"package:nginx": map[string]any{"changed": false}}, "libraries"}, restart)
	assert.Nil(t, reload)
}
