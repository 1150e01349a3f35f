package contract_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/richt/services/pkg/contract"
	"github.com/richt/services/pkg/lifecycle"
	"github.com/richt/services/pkg/override"
	"github.com/richt/services/pkg/reaction"
	"github.com/richt/services/pkg/rpmexact"
)

// Every module's real Result, as its handler returns it, goes through JSON (what Ansible
// registers and hands to the next task) and then through reaction.Parse as a restart_on
// item: what systemd_lifecycle concludes from it is what these cases say.
func TestModuleResultsThroughReaction(t *testing.T) {
	at := time.Date(2025, 3, 4, 5, 6, 7, 123456789, time.UTC)
	stamp := func(c contract.Change) contract.Change { c.Stamp(at); return c }
	yes := true

	rpmChanged := rpmexact.Result{
		Report: rpmexact.Report{Changed: true, Observed: rpmexact.ObservedQuery, ManagerVersion: "4.23.0",
			Change: stamp(contract.Change{PackageChanged: true, UnitFilesChanged: true, DaemonReload: contract.ReloadNeeded})},
		Name: "demo", Before: []string{"demo-0:1.0-1.noarch"}, After: []string{"demo-0:2.0-1.noarch"},
		Operation: rpmexact.OpInstallNEVRA, Command: []string{"dnf", "-y", "install-nevra", "--", "demo-0:2.0-1.noarch"},
	}
	rpmNoUnits := rpmChanged
	rpmNoUnits.Change = stamp(contract.Change{PackageChanged: true})
	rpmConverged := rpmexact.Result{
		Report: rpmexact.Report{Observed: rpmexact.ObservedMemo},
		Name:   "demo", Before: []string{"demo-0:2.0-1.noarch"}, After: []string{"demo-0:2.0-1.noarch"},
		Operation: rpmexact.OpNone, Command: []string{},
	}
	dropIn := override.Result{
		Changed: true, Unit: "demo.service", Path: "/etc/systemd/system/demo.service.d/10-env.conf",
		State: "present", Operation: override.OpUpdate,
		Change: stamp(contract.Change{UnitFilesChanged: true, DaemonReload: contract.ReloadPerformed}),
	}
	dropInNeeded := dropIn
	dropInNeeded.Change = stamp(contract.Change{UnitFilesChanged: true, DaemonReload: contract.ReloadNeeded})
	dropInRemoved := dropIn
	dropInRemoved.State, dropInRemoved.Operation = "absent", override.OpRemove
	attributes := dropIn
	attributes.Operation = override.OpAttributes
	attributes.Change = stamp(contract.Change{DaemonReload: contract.ReloadNone})
	lc := lifecycle.Result{
		Changed: true, Unit: "demo.service",
		Before:  &lifecycle.State{State: "running", Enabled: &yes, UnitFileState: "enabled", LoadState: "loaded"},
		After:   &lifecycle.State{State: "running", Enabled: &yes, UnitFileState: "enabled", LoadState: "loaded"},
		Actions: []string{"daemon-reload", "restart"}, Reaction: reaction.Restart, Triggers: []string{"restart_on[0]"},
		SyncReasons: []string{"a trigger changed a unit file"}, MainPID: 42,
		Change: stamp(contract.Change{DaemonReload: contract.ReloadPerformed}),
	}

	type want struct{ changed, pkg, unitFiles, stamped bool }
	cases := []struct {
		name   string
		result any
		want   want
	}{
		{"rpm_exact changed a package and unit files", rpmChanged, want{changed: true, pkg: true, unitFiles: true, stamped: true}},
		{"rpm_exact changed a package, no unit files", rpmNoUnits, want{changed: true, pkg: true, stamped: true}},
		{"rpm_exact converged", rpmConverged, want{}},
		// The regression: a drop-in result has `operation` too, and is no package change.
		{"unit_override updated a drop-in and reloaded", dropIn, want{changed: true, stamped: true}},
		{"unit_override updated a drop-in, reload left to lifecycle", dropInNeeded, want{changed: true, unitFiles: true, stamped: true}},
		{"unit_override removed a drop-in and reloaded", dropInRemoved, want{changed: true, stamped: true}},
		{"unit_override changed only mode or owner", attributes, want{changed: true, stamped: true}},
		{"systemd_lifecycle reloaded the manager and restarted", lc, want{changed: true, stamped: true}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m := decoded(t, c.result)
			if _, isOverride := c.result.(override.Result); isOverride {
				require.Contains(t, m, "operation", "the key that used to be taken for a package change")
			}
			trig, err := reaction.Parse([]any{m}, nil)
			require.NoError(t, err)
			require.Len(t, trig.Restart, 1)
			tr := trig.Restart[0]
			assert.Equal(t, c.want.changed, tr.Changed, "changed")
			assert.Equal(t, c.want.pkg, tr.PackageChanged, "package change")
			assert.Equal(t, c.want.unitFiles, tr.UnitFilesChanged, "unit files the manager has not loaded")
			assert.Equal(t, c.want.pkg, trig.PackageChanged())
			assert.Equal(t, c.want.unitFiles, trig.UnitFilesChanged())
			if c.want.stamped {
				assert.True(t, at.Equal(tr.ChangedAt), "changed_at carried: %v", tr.ChangedAt)
			} else {
				assert.True(t, tr.ChangedAt.IsZero())
			}
		})
	}

	t.Run("a loop of rpm_exact results, named", func(t *testing.T) {
		later := rpmNoUnits
		later.Stamp(at.Add(time.Second))
		loop := map[string]any{"changed": true, "results": []any{decoded(t, rpmConverged), decoded(t, rpmChanged), decoded(t, later)}}
		trig, err := reaction.Parse([]any{map[string]any{"packages": loop, "config": decoded(t, dropIn)}}, nil)
		require.NoError(t, err)
		require.Len(t, trig.Restart, 2)
		cfg, pkgs := trig.Restart[0], trig.Restart[1]
		assert.Equal(t, "config", cfg.Name)
		assert.False(t, cfg.PackageChanged || cfg.UnitFilesChanged)
		assert.Equal(t, "packages", pkgs.Name)
		assert.True(t, pkgs.Changed && pkgs.PackageChanged && pkgs.UnitFilesChanged)
		assert.True(t, at.Add(time.Second).Equal(pkgs.ChangedAt), "the latest item's changed_at")
	})
}
