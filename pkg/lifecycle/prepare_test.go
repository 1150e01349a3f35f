package lifecycle

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/richt/services/pkg/durable"
	"github.com/richt/services/pkg/reaction"
	"github.com/richt/services/pkg/stamp"
	"github.com/richt/services/pkg/systemd"
)

// Whether a package's restart was already done is decided by time alone: the unit became
// active after the files were placed. NeedDaemonReload says nothing about it: a drop-in
// written after the transaction turns it yes (and carries its own trigger), and for a unit
// file it depends on whole-second mtimes. Issue 29: the restart a scriptlet did was
// repeated where only the drop-in's reload was owed.
func TestPrepareRestartServedByTheClock(t *testing.T) {
	now := stamp.Stamp{BootID: "b", Mono: 10_000}
	placed := &stamp.Stamp{BootID: "b", Mono: 5_000}
	pkg := reaction.Trigger{Ref: "restart_on[0]", Changed: true, PackageChanged: true, FilesPlaced: placed}
	dropin := reaction.Trigger{Ref: "reload_on[0]", Changed: true}
	unit := func(activeEnter uint64, needReload bool) systemd.Props {
		return systemd.Props{LoadState: "loaded", ActiveState: "active", SubState: "running", ActiveEnterMono: activeEnter, NeedDaemonReload: needReload}
	}
	for _, tc := range []struct {
		name   string
		trig   reaction.Triggers
		unit   systemd.Props
		served bool
		due    reaction.Kind
	}{
		{"started after the files: served", reaction.Triggers{Restart: []reaction.Trigger{pkg}}, unit(6_000, false), true, reaction.None},
		{"served although a later drop-in turned NeedDaemonReload yes; its reload is due", reaction.Triggers{Restart: []reaction.Trigger{pkg}, Reload: []reaction.Trigger{dropin}}, unit(6_000, true), true, reaction.Reload},
		{"served although the manager has not loaded the package's unit file", reaction.Triggers{Restart: []reaction.Trigger{pkg}}, unit(6_000, true), true, reaction.None},
		{"started before the files: restart", reaction.Triggers{Restart: []reaction.Trigger{pkg}, Reload: []reaction.Trigger{dropin}}, unit(4_000, false), false, reaction.Restart},
		{"a restart trigger that cannot say when: restart", reaction.Triggers{Restart: []reaction.Trigger{pkg, {Ref: "restart_on[1]", Changed: true}}}, unit(6_000, false), false, reaction.Restart},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := Prepare(Want{Running: true, ReloadOn: len(tc.trig.Reload) > 0}, tc.trig, Observation{Unit: tc.unit, Now: now})
			assert.Equal(t, tc.served, p.RestartServed != "", "restart served: %q", p.RestartServed)
			assert.Equal(t, tc.due, p.Due)
		})
	}
}

// A package change that installs the unit: check mode plans for the unit it predicts
// (PredictedInstall), and the real run, planned after the transaction, finds the unit
// either loaded already (systemd loads a new unit file it is asked about) or still
// not found (it had looked the name up before the install): all three plan the same steps
// (the restart due is absorbed by the start, and recorded just before it, not ahead of
// the sync), so the service's check mode lists what its real run does.
func TestAPredictedInstallPlansAsTheInstalledUnit(t *testing.T) {
	yes := true
	want := Want{Unit: "demo.service", Running: true, Enabled: &yes}
	trig := reaction.Triggers{Restart: []reaction.Trigger{{Ref: "restart_on[0]", Changed: true, PackageChanged: true, PackageUnsynced: true, UnitFilesChanged: true}}}
	notFound := systemd.Props{ID: "demo.service", LoadState: "not-found", ActiveState: "inactive", SubState: "dead"}
	installed := systemd.Props{ID: "demo.service", LoadState: "loaded", ActiveState: "inactive", SubState: "dead", UnitFileState: "disabled"}
	plan := func(o Observation) []string {
		o.Enabler = true
		req := Request{Want: want, Triggers: trig}
		return decide(req, o, Prepare(want, trig, o), nil).Names()
	}
	predicted := plan(Observation{Unit: predictedUnit(notFound), PredictedInstall: true})
	assert.Equal(t, []string{"enable", "daemon-reload", "stamp-pending", "start", "settle 300ms", "clear-pending"}, predicted)
	assert.Equal(t, predicted, plan(Observation{Unit: installed, FileState: "disabled"}), "the manager found the new unit")
	assert.Equal(t, predicted, plan(Observation{Unit: predictedUnit(notFound), PredictedInstall: true, FileState: "disabled"}), "not found until the sync")
}

// The service's processes plan from the same changes: once one process's step reloaded
// the manager, the service passes the later ones those changes marked as loaded
// (daemon_reload: performed). They still say which unit a package installs and what
// restart is owed, but ask for no second manager reload; a change not loaded yet does.
// And a unit the package installs plans the same steps whether check mode predicts it
// (the package not installed yet) or the real run finds it loaded by the earlier reload.
func TestALoadedChangeAsksForNoSecondSync(t *testing.T) {
	yes := true
	want := Want{Unit: "redis.service", Running: true, Enabled: &yes}
	change := func(reload string) map[string]any {
		return map[string]any{"changed": true, "package_changed": true, "unit_files_changed": true, "daemon_reload": reload}
	}
	notFound := systemd.Props{ID: "redis.service", LoadState: "not-found", ActiveState: "inactive", SubState: "dead"}
	installed := systemd.Props{ID: "redis.service", LoadState: "loaded", ActiveState: "inactive", SubState: "dead", UnitFileState: "disabled"}
	running := systemd.Props{ID: "redis.service", LoadState: "loaded", ActiveState: "active", SubState: "running", UnitFileState: "enabled"}
	for _, tc := range []struct {
		name   string
		reload string // the change's daemon_reload
		facts  bool   // passed as facts_from, else as restart_on
		o      Observation
		plan   []string
	}{
		{"pin move, not loaded yet: reload the manager", "needed", false, Observation{Unit: running},
			[]string{"record-pending", "daemon-reload", "stamp-pending", "restart", "settle 300ms", "clear-pending"}},
		{"pin move, loaded by the earlier process's reload", "performed", false, Observation{Unit: running},
			[]string{"record-pending", "stamp-pending", "restart", "settle 300ms", "clear-pending"}},
		{"pin move, facts only, loaded", "performed", true, Observation{Unit: running}, []string{}},
		{"pin move, facts only, not loaded yet", "needed", true, Observation{Unit: running}, []string{"daemon-reload"}},
		{"install, check mode, not loaded yet: reload", "needed", true, Observation{Unit: predictedUnit(notFound), PredictedInstall: true},
			[]string{"enable", "daemon-reload", "start", "settle 300ms"}},
		{"install, check mode, loaded by the earlier reload", "performed", true, Observation{Unit: predictedUnit(notFound), PredictedInstall: true},
			[]string{"enable", "start", "settle 300ms"}},
		{"install, real run, loaded by the earlier reload", "performed", true, Observation{Unit: installed},
			[]string{"enable", "start", "settle 300ms"}},
		{"a reload due on the target still syncs", "performed", true, Observation{Unit: running, Synced: durable.Sync{Entries: []durable.SyncEntry{{ID: "x", Reason: "a unit file written after"}}}},
			[]string{"daemon-reload"}},
		{"NeedDaemonReload still syncs", "performed", true, Observation{Unit: func() systemd.Props { u := running; u.NeedDaemonReload = true; return u }()},
			[]string{"daemon-reload"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			item := []any{map[string]any{"package:redis": change(tc.reload)}}
			var trig reaction.Triggers
			var err error
			if tc.facts {
				trig.Facts, err = reaction.ParseFacts(item)
			} else {
				trig, err = reaction.Parse(item, nil)
			}
			require.NoError(t, err)
			o := tc.o
			o.Enabler = true
			req := Request{Want: want, Triggers: trig}
			p := decide(req, o, Prepare(want, trig, o), nil)
			require.NoError(t, p.Refusal)
			assert.Equal(t, tc.plan, p.Names())
		})
	}
}
