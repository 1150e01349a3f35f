package service

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/richt/services/pkg/ansible"
	"github.com/richt/services/pkg/configfile"
	"github.com/richt/services/pkg/durable"
	"github.com/richt/services/pkg/lifecycle"
	"github.com/richt/services/pkg/mountns"
	"github.com/richt/services/pkg/override"
	"github.com/richt/services/pkg/rollback"
	"github.com/richt/services/pkg/rpmexact"
	"github.com/richt/services/pkg/runner"
	"github.com/richt/services/pkg/stamp"
)

// ledger is what a run did, checked as it happens: in check mode nothing may be done;
// in a real run every action must be one the check-mode plan names (or, under
// ruleRollbackAfterFailure, one the check-mode `rollback` names).
type ledger struct {
	t     reporter
	check bool
	named []string
	// restore are the rollback's packages and files the check-mode result named.
	restore []string
	did     []string
}

func (l *ledger) do(entry string) {
	l.t.Helper()
	l.did = append(l.did, entry)
	if l.check {
		l.t.Errorf("check mode did %q", entry)
		return
	}
	if slices.Contains(l.named, entry) || slices.Contains(l.restore, entry) {
		return
	}
	l.t.Errorf("the real run did %q, which the check-mode plan does not name:\n%s", entry, strings.Join(l.named, "\n"))
}

// reporter is where a ledger reports an action no plan named (the test, or catch).
type reporter interface {
	Helper()
	Errorf(format string, args ...any)
}

// catch keeps what a ledger reported, for the test that the ledger reports.
type catch struct{ msgs []string }

func (c *catch) Helper() {}
func (c *catch) Errorf(format string, args ...any) {
	c.msgs = append(c.msgs, fmt.Sprintf(format, args...))
}

// recStep is a step's plan whose real run is recorded as its plan's entries.
type recStep struct {
	Step
	l      *ledger
	prefix string
}

func (s recStep) Run(ctx context.Context, req *ansible.Request) (any, error) {
	if !req.CheckMode {
		for _, n := range s.Names() {
			s.l.do(s.prefix + n)
		}
	}
	return s.Step.Run(ctx, req)
}

// recorded is m whose steps' real runs are recorded under prefix.
func recorded(l *ledger, m Module, prefix func(req *ansible.Request) string) Module {
	return Module{Spec: m.Spec, Plan: func(ctx context.Context, req *ansible.Request) Step {
		return recStep{Step: m.Plan(ctx, req), l: l, prefix: prefix(req)}
	}}
}

// recConfigs are diskConfigs whose writes are recorded as the plan names them: a write
// of the service's config under its name, a rollback's under its path.
type recConfigs struct {
	diskConfigs
	l *ledger
}

func (c *recConfigs) Apply(ctx context.Context, p configfile.Plan, before func() error) (*configfile.Result, error) {
	if p.Changed() {
		for _, s := range p.Steps {
			if p.Want.Name == "" || strings.HasPrefix(p.Want.Name, "/") {
				c.l.do("rollback: restore " + p.Want.Path)
			} else {
				c.l.do("config " + p.Want.Name + ": " + string(s))
			}
		}
	}
	return c.diskConfigs.Apply(ctx, p, before)
}

// recPending are the durable records, each write recorded as the plan names it.
type recPending struct {
	fakePending
	l *ledger
}

func (p *recPending) SetPending(u string, rec durable.Pending) error {
	p.l.do("record-pending " + u + " " + rec.Reaction)
	return p.fakePending.SetPending(u, rec)
}

func (p *recPending) ClearPending(u string) error {
	p.l.do("clear-pending " + u)
	return p.fakePending.ClearPending(u)
}

// recKeeper is fakeKeeper whose keep and forget are recorded as the plan names them.
type recKeeper struct {
	*fakeKeeper
	l *ledger
}

func (k recKeeper) Keep(ctx context.Context, p rollback.KeepPlan) error {
	for _, e := range keepEntries(p) {
		k.l.do(e)
	}
	return k.fakeKeeper.Keep(ctx, p)
}

func (k recKeeper) Ensure(ctx context.Context, nevras []string, check bool) ([]string, error) {
	k.l.do(rollbackForget)
	return k.fakeKeeper.Ensure(ctx, nevras, check)
}

func (k recKeeper) Prune(keep []string) error {
	k.l.do(rollbackForget)
	return k.fakeKeeper.Prune(keep)
}

// recTxn is the rollback's transaction, recorded as `rollback.packages` names it.
type recTxn struct {
	*fakeTxn
	l *ledger
}

func (x recTxn) Run(ctx context.Context, t rpmexact.Transaction) (rpmexact.Outcome, error) {
	for _, n := range t.Names {
		x.l.do("rollback: restore package " + n)
	}
	return x.fakeTxn.Run(ctx, t)
}

// tableProcess plans from its triggers as systemd_lifecycle does, in short: a restart
// when a restart trigger changed, else a reload when a reload trigger did, after a
// daemon-reload when a trigger changed unit files. served: the real run finds the
// manager reloaded by the package's scriptlet (daemon_reload_served). fail: its real run
// fails (the unit does not come up) the first time.
type tableProcess struct {
	served, fail bool
	// running: the unit runs before the task (a removal stops it).
	running bool
	runs    int
}

func changedIn(list any) (changed, unitFiles bool) {
	data, _ := json.Marshal(list)
	var triggers []map[string]map[string]any
	_ = json.Unmarshal(data, &triggers)
	for _, t := range triggers {
		for _, o := range t {
			if c, _ := o["changed"].(bool); c {
				changed = true
			}
			if u, _ := o["unit_files_changed"].(bool); u {
				unitFiles = true
			}
		}
	}
	return changed, unitFiles
}

func (p *tableProcess) module(l *ledger) Module {
	return moduleOf(lifecycle.Spec(), func(_ context.Context, req *ansible.Request) (any, error) {
		restart, unitsR := changedIn(req.Params["restart_on"])
		reload, unitsL := changedIn(req.Params["reload_on"])
		var plan []any
		served := false
		if req.Params["state"] == "stopped" && p.running {
			plan = append(plan, "stop", "disable")
		}
		if unitsR || unitsL {
			if p.served && !req.CheckMode {
				served = true
			} else {
				plan = append(plan, "daemon-reload")
			}
		}
		switch {
		case restart:
			plan = append(plan, "restart")
		case reload:
			plan = append(plan, "reload")
		}
		out := map[string]any{"changed": len(plan) > 0, "unit": "demo.service", "plan": plan}
		if req.CheckMode {
			return out, nil
		}
		if served {
			out["daemon_reload_served"] = "a package scriptlet's daemon-reload"
		}
		p.runs++
		for _, e := range plan {
			l.do("process demo.service: " + e.(string))
		}
		if p.fail && p.runs == 1 {
			return out, errors.New("demo.service: health probe failed: connection refused")
		}
		return out, nil
	})
}

// tableFiles is unit_override for the demo's drop-in: it writes when the content on disk
// (a file in the test's directory) differs.
func tableFiles(l *ledger, path string) Module {
	m := moduleOf(override.Spec(), func(_ context.Context, req *ansible.Request) (any, error) {
		content, _ := req.Params["content"].(string)
		now, err := os.ReadFile(path)
		if req.Params["state"] == "absent" {
			if err != nil {
				return map[string]any{"changed": false, "plan": []any{}}, nil
			}
			if !req.CheckMode {
				if err := os.Remove(path); err != nil {
					return nil, err
				}
			}
			return map[string]any{"changed": true, "unit_files_changed": true, "daemon_reload": "needed", "plan": []any{"remove"}}, nil
		}
		if err == nil && string(now) == content {
			return map[string]any{"changed": false, "plan": []any{}}, nil
		}
		out := map[string]any{"changed": true, "unit_files_changed": true, "daemon_reload": "needed", "plan": []any{"write"}}
		if !req.CheckMode {
			if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
				return nil, err
			}
		}
		return out, nil
	})
	return Module{Spec: m.Spec, Plan: func(ctx context.Context, req *ansible.Request) Step {
		return recStep{Step: pathStep{Step: m.Plan(ctx, req), path: path}, l: l, prefix: "file demo.service/20.conf: "}
	}}
}

// pathStep is a file's plan that says its path (a rollback saves it).
type pathStep struct {
	Step
	path string
}

func (s pathStep) Path() string { return s.path }

// tableTree is a tree validator that passes; it reads only (check mode runs it too).
type tableTree struct{ runs int }

func (f *tableTree) Run(_ context.Context, _ []mountns.File, argv ...string) (runner.Result, error) {
	f.runs++
	return runner.Result{Argv: argv}, nil
}

// tableHost is one scenario's host, made afresh for each run: what is installed, what the
// config and the drop-in hold, which builds are kept.
type tableHost struct {
	installed, pinned  bool // demo is installed; at demoNew
	config, dropin     string
	kept               bool // demoOld is kept for a rollback
	served, procFails  bool
	refusePackages     bool
	rollback, treeTest bool
	absent             bool
	// report, when set, takes the ledger's reports instead of the test.
	report reporter
}

// run runs the scenario's task on a fresh host and returns its result and what it did.
func (h tableHost) run(t *testing.T, dir string, check bool, named, restore []string) (map[string]any, *ledger) {
	t.Helper()
	l := &ledger{t: t, check: check, named: named, restore: restore}
	if h.report != nil {
		l.t = h.report
	}
	// The same paths in both runs (the plan names them), the host made afresh.
	require.NoError(t, os.RemoveAll(dir))
	require.NoError(t, os.Mkdir(dir, 0o755))
	cfg, drop := filepath.Join(dir, "site.conf"), filepath.Join(dir, "20.conf")
	if h.config != "" {
		require.NoError(t, os.WriteFile(cfg, []byte(h.config), 0o644))
	}
	if h.dropin != "" {
		require.NoError(t, os.WriteFile(drop, []byte(h.dropin), 0o644))
	}
	g := newTarget(t)
	if !h.installed {
		delete(g.rpm.installed, "demo")
	} else if h.pinned {
		g.rpm.installed["demo"] = []string{demoNew}
	}
	if h.kept {
		g.keeper.kept = []string{demoOld}
	}
	pkgs := &movingPackages{rpm: g.rpm, refuse: h.refusePackages}
	if h.absent && h.installed {
		pkgs.befores = []rollback.Package{{Name: "demo", Before: slices.Clone(g.rpm.installed["demo"])}}
		pkgs.names = []any{"remove demo"}
	} else if !h.absent && !h.pinned {
		pkgs.befores = []rollback.Package{{Name: "demo", Before: slices.Clone(g.rpm.installed["demo"])}}
		pkgs.pins = []string{demoNew}
	}
	g.txn.after = map[string][]string{"demo": {demoOld}}
	proc := &tableProcess{served: h.served, fail: h.procFails, running: h.installed}
	tree := &tableTree{}
	d := Deps{
		Packages:  recorded(l, pkgs.module(), func(*ansible.Request) string { return "packages: " }),
		Files:     tableFiles(l, drop),
		Processes: proc.module(l),
		Configs:   &recConfigs{l: l},
		Tree:      tree,
		Pending:   &recPending{fakePending: fakePending{records: map[string]*durable.Pending{}}, l: l},
		Now:       func() (stamp.Stamp, error) { return stamp.Stamp{BootID: "b", Mono: 1}, nil },
		Reload:    func(context.Context) error { l.do("daemon-reload"); return nil },
	}
	if h.rollback {
		rb := g.rollbacks()
		rb.Keeper = func(string) Keeper { return recKeeper{fakeKeeper: g.keeper, l: l} }
		rb.Txn = recTxn{fakeTxn: g.txn, l: l}
		d.Rollback = rb
	}
	site := map[string]any{"name": "site", "path": cfg, "content": "listen 81\n"}
	if h.treeTest {
		site["validate"] = "nginx -t -q -c " + cfg
	}
	args := map[string]any{"name": "demo",
		"packages":  []any{map[string]any{"name": "demo", "version": "0:2.0-1.noarch"}},
		"configs":   []any{site},
		"dropins":   []any{map[string]any{"unit": "demo", "name": "20.conf", "content": "[Service]\nNice=1\n"}},
		"processes": []any{map[string]any{"unit": "demo"}}}
	if h.rollback {
		args["rollback"] = true
	}
	if h.absent {
		args["state"] = "absent"
	}
	out := ansible.Call(context.Background(), Spec(), args, check, false, Handler(d))
	if h.treeTest && !check && len(l.did) > 0 {
		assert.Equal(t, 1, tree.runs, "the tree validator judged the change")
	}
	return out, l
}

// restoreNamed are the actions a rollback may take, as the check-mode result's
// `rollback` names them: each package's restore, each file's, and the process proved
// again (its restart).
func restoreNamed(out map[string]any) []string {
	rb := resultOf(out, "rollback")
	if rb == nil {
		return nil
	}
	var named []string
	for _, p := range rb["packages"].([]any) {
		named = append(named, "rollback: restore package "+p.(map[string]any)["name"].(string))
	}
	for _, f := range rb["files"].([]any) {
		named = append(named, "rollback: restore "+f.(map[string]any)["path"].(string))
	}
	return append(named, "process demo.service: restart", "process demo.service: daemon-reload", "record-pending demo.service restart", "clear-pending demo.service")
}

// TestCheckModePlanIsTheAppliedPlan: for each scenario the check-mode plan is made on a
// host, then a real run on the same host carries it out with recording fakes that fail on
// any action the check-mode plan does not name; the applied plan equals the check-mode
// plan but for the comparison rule the case names.
func TestCheckModePlanIsTheAppliedPlan(t *testing.T) {
	const cfgNow, dropNow = "listen 81\n", "[Service]\nNice=1\n"
	for _, c := range []struct {
		name string
		host tableHost
		rule planRule
		// entries the check-mode plan must hold (the scenario is what it says).
		has []string
	}{
		{name: "first install", host: tableHost{}, rule: ruleSamePlan,
			has: []string{"packages: install-nevra " + demoNew, "config site: write", "file demo.service/20.conf: write", "process demo.service: restart"}},
		{name: "converged", host: tableHost{installed: true, pinned: true, config: cfgNow, dropin: dropNow}, rule: ruleSamePlan},
		{name: "package move", host: tableHost{installed: true, config: cfgNow, dropin: dropNow}, rule: ruleSamePlan,
			has: []string{"packages: install-nevra " + demoNew, "process demo.service: restart"}},
		{name: "config change", host: tableHost{installed: true, pinned: true, config: "listen 80\n", dropin: dropNow}, rule: ruleSamePlan,
			has: []string{"config site: write", "process demo.service: restart"}},
		{name: "config change judged by a tree validator", host: tableHost{installed: true, pinned: true, config: "listen 80\n", dropin: dropNow, treeTest: true}, rule: ruleSamePlan,
			has: []string{"config site: validate-tree", "config site: write"}},
		{name: "drop-in change", host: tableHost{installed: true, pinned: true, config: cfgNow, dropin: "[Service]\n"}, rule: ruleSamePlan,
			has: []string{"file demo.service/20.conf: write", "process demo.service: daemon-reload", "process demo.service: restart"}},
		{name: "drop-in change, the package's scriptlet reloaded the manager", host: tableHost{installed: true, config: cfgNow, dropin: "[Service]\n", served: true},
			rule: ruleScriptletServed, has: []string{"process demo.service: daemon-reload"}},
		{name: "removal", host: tableHost{installed: true, pinned: true, config: cfgNow, dropin: dropNow, absent: true}, rule: ruleSamePlan,
			has: []string{"process demo.service: stop", "file demo.service/20.conf: remove", "config site: remove", "packages: remove demo", "daemon-reload"}},
		{name: "removal, converged", host: tableHost{absent: true}, rule: ruleSamePlan},
		{name: "removal, the package gone already", host: tableHost{config: cfgNow, dropin: dropNow, absent: true}, rule: ruleSamePlan,
			has: []string{"file demo.service/20.conf: remove", "config site: remove", "daemon-reload"}},
		{name: "removal, only the package left", host: tableHost{installed: true, pinned: true, absent: true}, rule: ruleSamePlan,
			has: []string{"process demo.service: stop", "packages: remove demo", "daemon-reload"}},
		{name: "rollback: the keep step fetches", host: tableHost{installed: true, config: cfgNow, dropin: dropNow, rollback: true}, rule: ruleSamePlan,
			has: []string{"rollback: keep " + demoOld + ": fetch from repo, gpgcheck off", "rollback: record", rollbackForget}},
		{name: "rollback: the build is kept already", host: tableHost{installed: true, config: cfgNow, dropin: dropNow, rollback: true, kept: true}, rule: ruleSamePlan,
			has: []string{"rollback: keep " + demoOld + " (kept)", "rollback: record"}},
		{name: "rollback: nothing changes, nothing to keep", host: tableHost{installed: true, pinned: true, config: cfgNow, dropin: dropNow, rollback: true}, rule: ruleSamePlan},
		{name: "rollback with something to put back", host: tableHost{installed: true, config: "listen 80\n", dropin: dropNow, rollback: true, procFails: true},
			rule: ruleRollbackAfterFailure, has: []string{"rollback: save "}},
		{name: "rollback with nothing to put back", host: tableHost{installed: true, config: cfgNow, dropin: dropNow, rollback: true, kept: true, refusePackages: true},
			rule: ruleRollbackAfterFailure, has: []string{"rollback: record"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "host")
			checkOut, _ := c.host.run(t, dir, true, nil, nil)
			require.Nil(t, checkOut["failed"], checkOut["msg"])
			planned := stringsOf(checkOut["plan"])
			for _, want := range c.has {
				assert.True(t, slices.ContainsFunc(planned, func(e string) bool { return strings.HasPrefix(e, want) }),
					"the check-mode plan has %q: %v", want, planned)
			}
			var restore []string
			if c.rule == ruleRollbackAfterFailure {
				restore = restoreNamed(checkOut)
			}
			out, l := c.host.run(t, dir, false, planned, restore)
			applied := stringsOf(out["plan"])
			if c.rule == ruleRollbackAfterFailure {
				require.Equal(t, true, out["failed"])
			} else {
				require.Nil(t, out["failed"], out["msg"])
			}
			served := func(unit string) bool {
				for _, p := range out["processes"].([]any) {
					m := p.(map[string]any)
					if m["unit"] == unit && m["daemon_reload_served"] != nil {
						return true
					}
				}
				return false
			}
			assert.NoError(t, comparePlans(c.rule, planned, applied, served))
			if c.rule != ruleSamePlan {
				assert.Error(t, comparePlans(ruleSamePlan, planned, applied, served), "the case exercises its rule")
			}
			if c.rule == ruleSamePlan && len(planned) == 0 {
				assert.Empty(t, l.did, "a converged host: nothing done")
			}
		})
	}
}

// The ledger is what makes the table test hold: a real run against a plan that names
// nothing fails on every action, the keep step's fetch among them, and so does a check
// run that acts.
func TestTheLedgerFailsOnAnActionNoPlanNames(t *testing.T) {
	c := &catch{}
	h := tableHost{installed: true, config: "listen 80\n", dropin: "[Service]\n", rollback: true, report: c}
	dir := filepath.Join(t.TempDir(), "host")
	h.run(t, dir, false, nil, nil)
	joined := strings.Join(c.msgs, "\n")
	for _, want := range []string{
		`the real run did "rollback: keep ` + demoOld + `: fetch from repo, gpgcheck off"`,
		`the real run did "packages: install-nevra ` + demoNew + `"`,
		`the real run did "config site: write"`,
		`the real run did "file demo.service/20.conf: write"`,
		`the real run did "process demo.service: restart"`,
		`the real run did "record-pending demo.service restart"`,
		`the real run did "rollback: forget"`,
	} {
		assert.Contains(t, joined, want)
	}
	c.msgs = nil
	planned := []string{"record-pending demo.service restart"}
	h.run(t, dir, true, planned, nil)
	assert.Empty(t, c.msgs, "a check run that only plans reports nothing")
}

func TestComparePlans(t *testing.T) {
	served := func(unit string) bool { return unit == "demo.service" }
	none := func(string) bool { return false }
	planned := []string{"packages: install-nevra demo", "process demo.service: daemon-reload", "process demo.service: restart", "rollback: forget"}
	for _, c := range []struct {
		name    string
		rule    planRule
		applied []string
		served  func(string) bool
		err     string
	}{
		{"same", ruleSamePlan, planned, none, ""},
		{"one more entry", ruleSamePlan, append(slices.Clone(planned), "daemon-reload"), none, "differs from check mode's"},
		{"served", ruleScriptletServed, []string{"packages: install-nevra demo", "process demo.service: restart", "rollback: forget"}, served, ""},
		{"served, but the outcome does not say so", ruleScriptletServed, []string{"packages: install-nevra demo", "process demo.service: restart", "rollback: forget"}, none, "differs"},
		{"rolled back", ruleRollbackAfterFailure, []string{"packages: install-nevra demo", "process demo.service: daemon-reload", "process demo.service: restart", "rollback: phase restoring", "rollback: restore-packages demo"}, none, ""},
		{"withdrawn, nothing to put back", ruleRollbackAfterFailure, []string{"packages: install-nevra demo", "withdraw-pending demo.service", "rollback: phase restoring"}, none, ""},
		{"something else after the failure", ruleRollbackAfterFailure, []string{"packages: install-nevra demo", "rollback: phase restoring", "daemon-reload"}, none, `the real run did "daemon-reload"`},
		{"no failure", ruleRollbackAfterFailure, planned, none, "no rollback"},
		{"another step before the failure", ruleRollbackAfterFailure, []string{"process demo.service: restart", "rollback: phase restoring"}, none, "before the failure"},
		{"no such rule", "guess", planned, none, `no comparison rule "guess"`},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := comparePlans(c.rule, planned, c.applied, c.served)
			if c.err == "" {
				assert.NoError(t, err)
			} else {
				assert.ErrorContains(t, err, c.err)
			}
		})
	}
}
