package reaction

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/richt/services/pkg/stamp"
)

func TestDecideTable(t *testing.T) {
	cases := []struct {
		name        string
		wantRunning bool
		active      bool
		due         Kind
		action      Action
		reaction    Kind
	}{
		{"running, active, nothing due", true, true, None, NoAction, None},
		{"running, inactive: start", true, false, None, Start, None},
		{"restart due on active", true, true, Restart, RestartIt, Restart},
		{"reload due on active", true, true, Reload, ReloadIt, Reload},
		{"restart due on inactive: start absorbs", true, false, Restart, Start, None},
		{"reload due on inactive: start absorbs", true, false, Reload, Start, None},
		{"stopped wanted, active: stop", false, true, None, Stop, None},
		{"stopped wanted, inactive: nothing", false, false, None, NoAction, None},
		{"stopped wanted, restart due: stop, ignored", false, true, Restart, Stop, Ignored},
		{"stopped wanted, inactive, reload due: ignored", false, false, Reload, NoAction, Ignored},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			a, r := Decide(c.wantRunning, c.active, c.due)
			assert.Equal(t, c.action, a)
			assert.Equal(t, c.reaction, r)
		})
	}
}

func TestDueMerging(t *testing.T) {
	ch := Trigger{Changed: true}
	no := Trigger{}
	cases := []struct {
		name    string
		t       Triggers
		pending Kind
		want    Kind
	}{
		{"nothing", Triggers{}, None, None},
		{"unchanged triggers", Triggers{Restart: []Trigger{no}, Reload: []Trigger{no}}, None, None},
		{"restart beats reload", Triggers{Restart: []Trigger{ch}, Reload: []Trigger{ch}}, None, Restart},
		{"two reloads are one reload", Triggers{Reload: []Trigger{ch, ch}}, None, Reload},
		{"pending restart without triggers", Triggers{}, Restart, Restart},
		{"pending reload plus restart trigger", Triggers{Restart: []Trigger{ch}}, Reload, Restart},
		{"pending restart beats reload trigger", Triggers{Reload: []Trigger{ch}}, Restart, Restart},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { assert.Equal(t, c.want, Due(c.t, c.pending)) })
	}
}

func TestStronger(t *testing.T) {
	cases := []struct {
		kinds []Kind
		want  Kind
	}{
		{nil, None},
		{[]Kind{"", Ignored, Served}, None},
		{[]Kind{Reload, Reload}, Reload},
		{[]Kind{Reload, Restart}, Restart},
		{[]Kind{Restart, Reload}, Restart},
		{[]Kind{None, Reload}, Reload},
	}
	for _, c := range cases {
		assert.Equal(t, c.want, Stronger(c.kinds...), "%v", c.kinds)
	}
}

func decode(t *testing.T, s string) []any {
	var v []any
	require.NoError(t, json.Unmarshal([]byte(s), &v))
	return v
}

func TestParse(t *testing.T) {
	tr, err := Parse(
		decode(t, `[{"changed": true, "operation": "install-nevra", "package_changed": true, "unit_files_changed": true, "daemon_reload": "needed"}, false]`),
		decode(t, `[{"config": {"changed": true, "daemon_reload": "needed"}, "other": {"changed": false}}, {"changed": false, "results": [{"changed": false}, {"changed": true}]}]`),
	)
	require.NoError(t, err)
	require.Len(t, tr.Restart, 2)
	assert.True(t, tr.Restart[0].Changed && tr.Restart[0].PackageChanged && tr.Restart[0].UnitFilesChanged)
	assert.False(t, tr.Restart[1].Changed)
	require.Len(t, tr.Reload, 3)
	assert.Equal(t, "config", tr.Reload[0].Name)
	assert.Equal(t, "reload_on[0].config", tr.Reload[0].Ref)
	assert.True(t, tr.Reload[0].UnitFilesChanged)
	assert.False(t, tr.Reload[1].Changed)
	assert.True(t, tr.Reload[2].Changed, "a loop counts when any item changed")
	assert.True(t, tr.UnitFilesChanged())
	assert.True(t, tr.PackageChanged())
	assert.Equal(t, Restart, Due(tr, None))
}

func TestParseErrors(t *testing.T) {
	cases := []struct {
		restart, reload string
		msg             string
	}{
		{`[{"cfg": true}]`, `[{"cfg": true}]`, `trigger "cfg" is in both restart_on and reload_on`},
		{`["secret-value"]`, `[]`, "restart_on[0]: a string is not a trigger"},
		{`[]`, `[3]`, "reload_on[0]: a number is not a trigger"},
		{`[null]`, `[]`, "restart_on[0]: is empty"},
		{`[{"x": {"nested": 1}}]`, `[]`, "restart_on[0].x: a mapping inside a named trigger must be a registered task result"},
		{`[{"changed": true, "results": 5}]`, `[]`, "results is not a list"},
	}
	for _, c := range cases {
		_, err := Parse(decode(t, c.restart), decode(t, c.reload))
		require.Error(t, err)
		assert.Contains(t, err.Error(), c.msg)
		assert.NotContains(t, err.Error(), "secret-value", "trigger values are never echoed")
	}
	// Unnamed triggers have no identity: the same boolean in both lists is fine.
	_, err := Parse([]any{true}, []any{true})
	assert.NoError(t, err)
}

func FuzzParse(f *testing.F) {
	f.Add(`[{"changed":true}]`, `[{"a":{"changed":true}}]`)
	f.Add(`[true,false]`, `[{"results":[{"changed":true}]}]`)
	f.Fuzz(func(t *testing.T, a, b string) {
		var ra, rb []any
		if json.Unmarshal([]byte(a), &ra) != nil || json.Unmarshal([]byte(b), &rb) != nil {
			return
		}
		tr, err := Parse(ra, rb)
		if err != nil {
			return
		}
		_ = Due(tr, None)
	})
}

func TestRestartServed(t *testing.T) {
	now := stamp.Stamp{BootID: "b", Mono: 1000}
	placed := func(mono uint64) map[string]any {
		return map[string]any{"changed": true, "package_changed": true, "files_placed": map[string]any{"boot_id": "b", "monotonic_us": float64(mono)}}
	}
	unplaced := map[string]any{"changed": true, "unit_files_changed": true, "daemon_reload": "performed"}
	cases := []struct {
		name     string
		restart  []any
		activeAt uint64
		served   bool
	}{
		{"activated after the files were in place", []any{placed(500)}, 600, true},
		{"activated before", []any{placed(500)}, 400, false},
		{"every trigger must be served", []any{placed(500), placed(700)}, 600, false},
		{"a trigger that cannot say when always restarts", []any{placed(500), unplaced}, 600, false},
		{"a loop with an item that cannot say when", []any{map[string]any{"changed": true, "results": []any{placed(500), unplaced}}}, 600, false},
		{"a loop's latest item counts", []any{map[string]any{"changed": true, "results": []any{placed(500), placed(550)}}}, 600, true},
		{"no changed restart trigger: nothing served", []any{false}, 600, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tr, err := Parse(c.restart, nil)
			require.NoError(t, err)
			assert.Equal(t, c.served, RestartServed(tr, now, c.activeAt))
		})
	}
}

// A fact tells what changed on the host without asking for a reaction: its package and
// unit-file changes count, its change never does.
func TestFactsCountForTheManagerNotForAReaction(t *testing.T) {
	pkg := map[string]any{"changed": true, "package_changed": true, "unit_files_changed": true}
	cases := []struct {
		name              string
		facts             []any
		pkgChanged, units bool
	}{
		{"a changed package", []any{map[string]any{"package:demo": pkg}}, true, true},
		{"an unchanged part", []any{map[string]any{"dropin:demo/20.conf": map[string]any{"changed": false, "unit_files_changed": true}}}, false, false},
		{"none", nil, false, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			facts, err := ParseFacts(c.facts)
			require.NoError(t, err)
			tr := Triggers{Facts: facts}
			assert.Equal(t, c.pkgChanged, tr.PackageChanged())
			assert.Equal(t, c.units, tr.UnitFilesChanged())
			assert.Equal(t, None, Due(tr, ""), "a fact is no reaction")
			assert.Equal(t, c.units, tr.WithoutRestarts().UnitFilesChanged(), "a served restart leaves the facts")
		})
	}
}

// A change the manager was reloaded after (daemon_reload: performed; the service marks its
// steps' changes so once a process step reloaded the manager) still tells what changed:
// the package a unit comes from, the restart it owes; but it asks for no manager sync of
// its own, neither for its unit files nor for a unit the package installs.
func TestAChangeTheManagerLoadedAsksForNoSync(t *testing.T) {
	pkg := func(reload string) map[string]any {
		return map[string]any{"changed": true, "package_changed": true, "unit_files_changed": true, "daemon_reload": reload}
	}
	cases := []struct {
		name                    string
		result                  map[string]any
		pkgChanged, pkgSync, uf bool
	}{
		{"not loaded yet", pkg("needed"), true, true, true},
		{"loaded by a reload after it", pkg("performed"), true, false, false},
		{"a loop: one item not loaded yet", map[string]any{"changed": true, "results": []any{pkg("performed"), pkg("needed")}}, true, true, true},
		{"a loop: every item loaded", map[string]any{"changed": true, "results": []any{pkg("performed"), pkg("performed")}}, true, false, false},
		{"unchanged", map[string]any{"changed": false, "package_changed": true}, false, false, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			restart, err := Parse([]any{map[string]any{"package:demo": c.result}}, nil)
			require.NoError(t, err)
			facts, err := ParseFacts([]any{c.result})
			require.NoError(t, err)
			for _, tr := range []Triggers{restart, {Facts: facts}} {
				assert.Equal(t, c.pkgChanged, tr.PackageChanged())
				assert.Equal(t, c.pkgSync, tr.PackageUnsynced())
				assert.Equal(t, c.uf, tr.UnitFilesChanged())
			}
			assert.Equal(t, map[bool]Kind{true: Restart, false: None}[c.pkgChanged], Due(restart, None), "the restart it owes stays")
		})
	}
}

// TestLibrariesItem: restart_on's libraries is a trigger that has not changed until the
// run finds a stale mapping (LibrariesStale), which then asks for the one restart, never
// served; reload_on and facts_from refuse it.
func TestLibrariesItem(t *testing.T) {
	tr, err := Parse([]any{false, "libraries"}, []any{true})
	if err != nil {
		t.Fatal(err)
	}
	if !tr.WantsLibraries() || len(Changed(tr.Restart)) != 0 || Due(tr, None) != Reload {
		t.Fatalf("before a stale mapping: %+v", tr)
	}
	stale := tr.LibrariesStale()
	if Due(stale, None) != Restart || Changed(stale.Restart)[0].Label() != "libraries" || len(Changed(tr.Restart)) != 0 {
		t.Errorf("after: %+v (the original must not change)", stale)
	}
	if RestartServed(stale, stamp.Stamp{BootID: "b", Mono: 10}, 5) {
		t.Errorf("a stale mapping's restart taken as served")
	}
	if _, err := Parse(nil, []any{"libraries"}); err == nil {
		t.Errorf("reload_on took libraries")
	}
	if _, err := ParseFacts([]any{"libraries"}); err == nil {
		t.Errorf("facts_from took libraries")
	}
	if _, err := Parse([]any{"librarie"}, nil); err == nil {
		t.Errorf("another string taken")
	}
}
