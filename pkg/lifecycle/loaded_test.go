package lifecycle

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/richt/services/pkg/durable"
	"github.com/richt/services/pkg/reaction"
	"github.com/richt/services/pkg/stamp"
	"github.com/richt/services/pkg/systemd"
)

// A manager reload a package's scriptlet did after the change's unit files were all in
// place is not repeated (issue 42 item 4); anything that cannot say when its files were in
// place, or that came after the last load, still reloads.
func TestPrepareManagerLoadServesPlacedChanges(t *testing.T) {
	running := systemd.Props{LoadState: "loaded", ActiveState: "active", SubState: "running", ActiveEnterMono: 500} // started before the files
	loaded := stamp.Stamp{BootID: "b", Mono: 8_000}
	before := &stamp.Stamp{BootID: "b", Mono: 7_000}
	after := &stamp.Stamp{BootID: "b", Mono: 8_500}
	otherBoot := &stamp.Stamp{BootID: "a", Mono: 1}
	entry := func(placed *stamp.Stamp) durable.SyncEntry {
		return durable.SyncEntry{ID: "1", Reason: "dnf changed unit files", Placed: placed}
	}
	pkg := func(placed *stamp.Stamp) reaction.Triggers {
		return reaction.Triggers{Restart: []reaction.Trigger{{Ref: "restart_on[0]", Changed: true, PackageChanged: true, UnitFilesChanged: true, FilesPlaced: placed}}}
	}
	for _, tc := range []struct {
		name    string
		trig    reaction.Triggers
		entries []durable.SyncEntry
		unit    systemd.Props
		loaded  stamp.Stamp
		reasons int
		served  bool
	}{
		{"entry and trigger placed before the last load: no reload", pkg(before), []durable.SyncEntry{entry(before)}, running, loaded, 0, true},
		{"entry placed before the last load, no trigger", reaction.Triggers{}, []durable.SyncEntry{entry(before)}, running, loaded, 0, true},
		{"placed after the last load", pkg(after), []durable.SyncEntry{entry(after)}, running, loaded, 2, false},
		{"placed at the last load's microsecond", pkg(&loaded), []durable.SyncEntry{entry(&loaded)}, running, loaded, 2, false},
		{"an entry that cannot say when (a removed unit file, unit_override)", pkg(before), []durable.SyncEntry{entry(before), entry(nil)}, running, loaded, 1, true},
		{"a trigger that cannot say when", pkg(nil), []durable.SyncEntry{entry(before)}, running, loaded, 1, true},
		{"placed on another boot: the entry asks (the trigger's restart counts as served)", pkg(otherBoot), []durable.SyncEntry{entry(otherBoot)}, running, loaded, 1, false},
		{"the manager's last load not known", pkg(before), []durable.SyncEntry{entry(before)}, running, stamp.Stamp{}, 2, false},
		{"NeedDaemonReload=yes still reloads", pkg(before), []durable.SyncEntry{entry(before)}, func() systemd.Props { u := running; u.NeedDaemonReload = true; return u }(), loaded, 1, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := Prepare(Want{Running: true}, tc.trig, Observation{Unit: tc.unit, Synced: durable.Sync{Entries: tc.entries}, ManagerLoaded: tc.loaded, Now: stamp.Stamp{BootID: "b", Mono: 10_000}})
			assert.Len(t, p.SyncReasons, tc.reasons, "%q", p.SyncReasons)
			assert.Equal(t, tc.served, p.LoadServed)
			assert.Equal(t, tc.reasons > 0, containsStep(p.Steps, StepDaemonReload))
		})
	}
}

func containsStep(steps []Step, s Step) bool {
	for _, x := range steps {
		if x == s {
			return true
		}
	}
	return false
}

// placedStore is a manager-sync record whose entries say when their files were placed,
// and remembers what was cleared.
type placedStore struct {
	memStore
	entries []durable.SyncEntry
	cleared []durable.SyncEntry
}

func (m *placedStore) ManagerSync() (durable.Sync, error) {
	return durable.Sync{Entries: m.entries}, nil
}
func (m *placedStore) ClearManagerSync(_ context.Context, seen durable.Sync) error {
	m.cleared = append(m.cleared, seen.Entries...)
	m.entries = nil
	return nil
}

// The whole run: the scriptlet's reload served the transaction's entry and its trigger, so
// the run does not reload the manager, settles the entry, says why, and restarts as asked.
func TestARunAfterAScriptletReloadDoesNotReloadAgain(t *testing.T) {
	for _, tc := range []struct {
		name        string
		unitsLoaded uint64
		placed      uint64
		actions     []any
	}{
		{"the scriptlet reloaded after the files", 4_000_000, 3_000_000, []any{"restart"}},
		{"the last reload came before the files", 2_000_000, 3_000_000, []any{"daemon-reload", "restart"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sd := &fakeSystemd{p: props("active", "enabled"), unitsLoaded: tc.unitsLoaded}
			sd.p.ActiveEnterMono = 1_000 // started before the files: the restart is owed
			placed := stamp.Stamp{BootID: testNow.BootID, Mono: tc.placed}
			st := &placedStore{memStore: memStore{pending: map[string]*durable.Pending{}},
				entries: []durable.SyncEntry{{ID: "t1", Reason: "dnf changed unit files", Placed: &placed}}}
			d := testDeps(sd, &st.memStore)
			d.Store = st
			trigger := map[string]any{"changed": true, "package_changed": true, "unit_files_changed": true, "daemon_reload": "needed",
				"files_placed": map[string]any{"boot_id": placed.BootID, "monotonic_us": placed.Mono}}
			res := execute(t, d, map[string]any{"unit": "demo", "restart_on": []any{trigger}})
			require.Nil(t, res["failed"], res["msg"])
			assert.Equal(t, tc.actions, res["actions"])
			require.Len(t, st.cleared, 1, "the entry is settled either way")
			if len(tc.actions) == 1 {
				assert.Contains(t, res["daemon_reload_served"], "a package scriptlet's daemon-reload")
				assert.Nil(t, res["daemon_reload_reasons"])
				assert.Equal(t, "none", res["daemon_reload"])
			} else {
				assert.Nil(t, res["daemon_reload_served"])
				assert.Equal(t, "performed", res["daemon_reload"])
			}
		})
	}
}
