package lifecycle

import (
	"github.com/richt/services/pkg/systemd"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/richt/services/pkg/health"
	"github.com/richt/services/pkg/reaction"
	"github.com/richt/services/pkg/unitfile"
)

func unitIn(load, active, fileState string) systemd.Props {
	return systemd.Props{ID: "demo.service", LoadState: load, ActiveState: active, UnitFileState: fileState}
}

// decideRow is one row of Decide's table; TestDecide checks the decision, and
// TestPlanEqualsApplied runs each row through Plan and Apply.
type decideRow struct {
	name     string
	w        Want
	f        Facts
	steps    []Step
	reaction reaction.Kind
	err      string
	check    func(t *testing.T, p Decision)
}

func decideRows() []decideRow {
	yes, no := true, false
	secs := func(d time.Duration) *time.Duration { return &d }
	probe := &health.Probe{Kind: "tcp", Target: "127.0.0.1:80"}
	capable := &unitfile.Capability{Capable: true}
	incapable := &unitfile.Capability{Capable: false, Reason: "no ExecReload="}
	running, stopped := unitIn("loaded", "active", "enabled"), unitIn("loaded", "inactive", "disabled")
	return []decideRow{
		{name: "converged running", w: Want{Running: true}, f: Facts{Unit: running}},
		{name: "converged stopped", w: Want{}, f: Facts{Unit: stopped}},
		{name: "start", w: Want{Running: true}, f: Facts{Unit: stopped}, steps: []Step{StepStart},
			check: func(t *testing.T, p Decision) {
				assert.Equal(t, DefaultStartSettle, p.Settle)
				assert.True(t, p.After.Running)
				assert.False(t, p.RecordPending)
			}},
		{name: "stop", w: Want{}, f: Facts{Unit: running}, steps: []Step{StepStop},
			check: func(t *testing.T, p Decision) { assert.Zero(t, p.Settle); assert.False(t, p.After.Running) }},
		{name: "start absorbs a restart", w: Want{Running: true}, f: Facts{Unit: stopped, Due: reaction.Restart}, steps: []Step{StepStart}},
		{name: "restart", w: Want{Running: true}, f: Facts{Unit: running, Due: reaction.Restart}, steps: []Step{StepRestart}, reaction: reaction.Restart,
			check: func(t *testing.T, p Decision) {
				assert.True(t, p.RecordPending)
				assert.Equal(t, DefaultStartSettle, p.Settle)
			}},
		{name: "reload: no settle by default", w: Want{Running: true, ReloadOn: true}, f: Facts{Unit: running, Due: reaction.Reload, Capability: capable}, steps: []Step{StepReload}, reaction: reaction.Reload,
			check: func(t *testing.T, p Decision) { assert.Equal(t, DefaultReloadSettle, p.Settle) }},
		{name: "explicit settle applies to a reload", w: Want{Running: true, ReloadOn: true, Settle: secs(2 * time.Second)}, f: Facts{Unit: running, Due: reaction.Reload, Capability: capable}, steps: []Step{StepReload}, reaction: reaction.Reload,
			check: func(t *testing.T, p Decision) { assert.Equal(t, 2*time.Second, p.Settle) }},
		{name: "stopped ignores reactions", w: Want{}, f: Facts{Unit: running, Due: reaction.Restart, Pending: true}, steps: []Step{StepStop}, reaction: reaction.Ignored,
			check: func(t *testing.T, p Decision) { assert.True(t, p.ClearPending); assert.False(t, p.RecordPending) }},
		{name: "restart already done by the package transaction", w: Want{Running: true}, f: Facts{Unit: running, RestartServed: true}, reaction: reaction.Served},
		{name: "served restart, reload still due", w: Want{Running: true, ReloadOn: true}, f: Facts{Unit: running, RestartServed: true, Due: reaction.Reload, Capability: capable},
			steps: []Step{StepReload}, reaction: reaction.Reload},
		{name: "served pending is cleared", w: Want{Running: true}, f: Facts{Unit: running, Served: true},
			check: func(t *testing.T, p Decision) { assert.True(t, p.ClearPending) }},
		{name: "enable, then start", w: Want{Running: true, Enabled: &yes}, f: Facts{Unit: stopped}, steps: []Step{StepEnable, StepStart},
			check: func(t *testing.T, p Decision) { assert.Equal(t, &yes, p.After.Enabled) }},
		{name: "disable a running unit: it keeps running", w: Want{Running: true, Enabled: &no}, f: Facts{Unit: running}, steps: []Step{StepDisable}},
		{name: "enable: unobservable state warns", w: Want{Running: true, Enabled: &yes}, f: Facts{Unit: unitIn("loaded", "active", "static")},
			check: func(t *testing.T, p Decision) {
				require.Len(t, p.Warnings, 1)
				assert.Contains(t, p.Warnings[0], "not observable")
			}},
		{name: "enable: an odd state warns differently", w: Want{Running: true, Enabled: &yes}, f: Facts{Unit: unitIn("loaded", "active", "")},
			check: func(t *testing.T, p Decision) {
				require.Len(t, p.Warnings, 1)
				assert.Contains(t, p.Warnings[0], `"empty" is not one`)
			}},
		{name: "reload_on on a unit that cannot reload", w: Want{Unit: "demo.service", Running: true, ReloadOn: true}, f: Facts{Unit: running, Capability: incapable}, err: "reload_on needs demo.service to be reload-capable, and it is not: no ExecReload="},
		{name: "reload_on without capability facts", w: Want{Running: true, ReloadOn: true}, f: Facts{Unit: running}, err: "was not determined"},
		{name: "probe on a converged running unit", w: Want{Running: true, Health: probe}, f: Facts{Unit: running},
			check: func(t *testing.T, p Decision) { assert.Equal(t, probe, p.Probe) }},
		{name: "probe after a start: the probe is the proof, no default settle", w: Want{Running: true, Health: probe}, f: Facts{Unit: stopped}, steps: []Step{StepStart},
			check: func(t *testing.T, p Decision) { assert.Equal(t, probe, p.Probe); assert.Zero(t, p.Settle) }},
		{name: "probe after a start with an explicit settle", w: Want{Running: true, Health: probe, Settle: secs(2 * time.Second)}, f: Facts{Unit: stopped}, steps: []Step{StepStart},
			check: func(t *testing.T, p Decision) { assert.Equal(t, 2*time.Second, p.Settle) }},
		{name: "no probe when stopped is wanted", w: Want{Health: probe}, f: Facts{Unit: running}, steps: []Step{StepStop},
			check: func(t *testing.T, p Decision) { assert.Nil(t, p.Probe) }},
		{name: "not found", w: Want{Unit: "demo.service", Running: true}, f: Facts{Unit: unitIn("not-found", "inactive", "")}, err: "unit demo.service not found"},
		{name: "not found, stopped wanted: hint", w: Want{Unit: "demo.service"}, f: Facts{Unit: unitIn("not-found", "inactive", "")}, err: "set allow_missing: true"},
		{name: "not found allowed", w: Want{AllowMissing: true}, f: Facts{Unit: unitIn("not-found", "inactive", ""), Due: reaction.Restart, Pending: true}, reaction: reaction.Ignored,
			check: func(t *testing.T, p Decision) { assert.True(t, p.ClearPending) }},
		{name: "not found: masked anyway", w: Want{Masked: &yes}, f: Facts{Unit: unitIn("not-found", "inactive", "")}, steps: []Step{StepMask}},
		{name: "bad setting", w: Want{Unit: "demo.service", Running: true}, f: Facts{Unit: unitIn("bad-setting", "inactive", "")}, err: "LoadState=bad-setting"},
		{name: "mask a running unit: stop first", w: Want{Masked: &yes}, f: Facts{Unit: running, Due: reaction.Reload}, steps: []Step{StepStop, StepMask}, reaction: reaction.Ignored,
			check: func(t *testing.T, p Decision) { assert.True(t, p.After.Masked); assert.False(t, p.After.Running) }},
		{name: "mask a stopped unit", w: Want{Masked: &yes}, f: Facts{Unit: stopped}, steps: []Step{StepMask}},
		{name: "already masked", w: Want{Masked: &yes}, f: Facts{Unit: unitIn("masked", "inactive", "masked")}},
		{name: "masked and still running (masked by hand): stopped", w: Want{Masked: &yes}, f: Facts{Unit: unitIn("masked", "active", "masked")}, steps: []Step{StepStop}},
		{name: "masked, left as is, stopped wanted", w: Want{}, f: Facts{Unit: unitIn("masked", "inactive", "masked")}},
		{name: "masked, running wanted", w: Want{Unit: "demo.service", Running: true}, f: Facts{Unit: unitIn("masked", "inactive", "masked")}, err: "is masked: it cannot be running"},
		{name: "masked, enabled wanted", w: Want{Unit: "demo.service", Enabled: &yes}, f: Facts{Unit: unitIn("masked", "inactive", "masked")}, err: "cannot be enabled"},
		{name: "unmask: the rest is decided after it", w: Want{Running: true, Masked: &no, Enabled: &yes}, f: Facts{Unit: unitIn("masked", "inactive", "masked")}, steps: []Step{StepUnmask},
			check: func(t *testing.T, p Decision) { assert.True(t, p.Reobserve); assert.False(t, p.After.Masked) }},
		{name: "unmask of an unmasked unit is nothing", w: Want{Running: true, Masked: &no}, f: Facts{Unit: running}},
	}
}

// Every branch of Decide, without systemd.
func TestDecide(t *testing.T) {
	cases := decideRows()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if c.reaction == "" {
				c.reaction = reaction.None
			}
			p, err := Decide(c.w, c.f)
			if c.err != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), c.err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, c.steps, p.Steps)
			assert.Equal(t, c.reaction, p.Reaction)
			if c.check != nil {
				c.check(t, p)
			}
			again, _ := Decide(c.w, c.f)
			assert.Equal(t, p, again, "pure: the same input gives the same plan")
		})
	}
}

// Names spells out what Apply does in its order, the checks and records included.
func TestPlanNames(t *testing.T) {
	probe := &health.Probe{Kind: "tcp", Target: "127.0.0.1:80"}
	cases := []struct {
		name string
		plan Decision
		want []string
	}{
		{"converged", Decision{}, []string{}},
		{"converged with a probe", Decision{Probe: probe}, []string{"probe"}},
		{"start after enable", Decision{Steps: []Step{StepEnable, StepStart}, Settle: DefaultStartSettle, Probe: probe},
			[]string{"enable", "start", "settle 300ms", "probe"}},
		{"restart owed", Decision{Steps: []Step{StepRestart}, RecordPending: true, Settle: DefaultStartSettle},
			[]string{"stamp-pending", "restart", "settle 300ms", "clear-pending"}},
		{"reload without settle", Decision{Steps: []Step{StepReload}, RecordPending: true, ClearPending: true},
			[]string{"stamp-pending", "reload", "clear-pending"}},
		{"served record", Decision{ClearPending: true}, []string{"clear-pending"}},
		{"stop", Decision{Steps: []Step{StepStop}}, []string{"stop"}},
		{"stop before a mask", Decision{Steps: []Step{StepStop, StepMask}, Settle: time.Second}, []string{"stop", "mask"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			assert.Equal(t, c.want, c.plan.Names())
		})
	}
}
