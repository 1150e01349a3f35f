package service

import (
	"context"
	"errors"
	"fmt"
	"maps"
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
	"github.com/richt/services/pkg/rollback"
	"github.com/richt/services/pkg/rpmexact"
	"github.com/richt/services/pkg/runner"
	"github.com/richt/services/pkg/stamp"
)

// The builds of the demo package in these tests: installed before the change, the one the
// change installs, and one an earlier unfinished run found.
const (
	demoOld    = "demo-0:1.0-1.noarch"
	demoNew    = "demo-0:2.0-1.noarch"
	demoOldest = "demo-0:0.9-1.noarch"
)

// fakeKeeper has every build but missing in repository "repo" (with gpgcheck on for
// signed), kept already those in kept, and keeps what it was asked.
type fakeKeeper struct {
	missing []string
	kept    []string
	// asked are the builds of each PlanKeep and Ensure, in order; checks whether each
	// only read (PlanKeep, Ensure in check mode).
	asked  [][]string
	checks []bool
	// fetched are the fetches of each Keep.
	fetched [][]rollback.Fetch
	keepErr error
	pruned  [][]string
	onPrune func()
	// signed are the builds kept from a repository with gpgcheck on.
	signed []string
}

func (k *fakeKeeper) GPGCheck(nevra string) bool { return slices.Contains(k.signed, nevra) }

func (k *fakeKeeper) PlanKeep(_ context.Context, nevras []string) (rollback.KeepPlan, error) {
	k.asked = append(k.asked, slices.Clone(nevras))
	k.checks = append(k.checks, true)
	var p rollback.KeepPlan
	for _, n := range nevras {
		switch {
		case slices.Contains(k.kept, n):
			p.Kept = append(p.Kept, n)
		case slices.Contains(k.missing, n):
			p.Missing = append(p.Missing, n)
		default:
			p.Fetch = append(p.Fetch, rollback.Fetch{Build: n, Repo: "repo", GPGCheck: slices.Contains(k.signed, n)})
		}
	}
	return p, nil
}

func (k *fakeKeeper) Keep(_ context.Context, p rollback.KeepPlan) error {
	k.fetched = append(k.fetched, slices.Clone(p.Fetch))
	if k.keepErr != nil {
		return k.keepErr
	}
	for _, f := range p.Fetch {
		k.kept = append(k.kept, f.Build)
	}
	return nil
}

func (k *fakeKeeper) Ensure(_ context.Context, nevras []string, check bool) ([]string, error) {
	k.asked = append(k.asked, slices.Clone(nevras))
	k.checks = append(k.checks, check)
	var out []string
	for _, n := range nevras {
		if slices.Contains(k.missing, n) {
			out = append(out, n)
		}
	}
	return out, nil
}

func (k *fakeKeeper) Path(nevra string) string { return rollback.DefaultKeepDir + "/" + nevra + ".rpm" }

func (k *fakeKeeper) Prune(keep []string) error {
	k.pruned = append(k.pruned, slices.Clone(keep))
	if k.onPrune != nil {
		k.onPrune()
	}
	return nil
}

// fakeRPM answers rpm's query (rpmexact.ObserveAll) from installed: NAME → its NEVRAs.
type fakeRPM struct {
	installed map[string][]string
	queries   int
}

func (f *fakeRPM) Run(_ context.Context, argv ...string) (runner.Result, error) {
	f.queries++
	i := slices.Index(argv, "--")
	if i < 0 {
		return runner.Result{}, fmt.Errorf("not an rpm query: %v", argv)
	}
	var b strings.Builder
	missing := 0
	for _, n := range argv[i+1:] {
		builds := f.installed[n]
		if len(builds) == 0 {
			fmt.Fprintf(&b, "package %s is not installed\n", n)
			missing++
			continue
		}
		for _, nevra := range builds {
			fmt.Fprintf(&b, "@@%s\t%s\n", n, strings.TrimPrefix(nevra, n+"-"))
		}
	}
	return runner.Result{Argv: argv, ExitCode: missing, Stdout: b.String()}, nil
}

// fakeTxn is the rollback's DNF transaction: it keeps the script it was given and leaves
// after installed (in rpm too).
type fakeTxn struct {
	rpm    *fakeRPM
	after  map[string][]string
	ran    []rpmexact.Transaction
	script string
}

func (f *fakeTxn) Begin(context.Context, bool, []string) (func(), *rpmexact.Earlier, error) {
	return func() {}, nil, nil
}

func (f *fakeTxn) Run(_ context.Context, t rpmexact.Transaction) (rpmexact.Outcome, error) {
	f.ran = append(f.ran, t)
	data, err := os.ReadFile(t.Argv[len(t.Argv)-1])
	if err != nil {
		return rpmexact.Outcome{}, err
	}
	f.script = string(data)
	maps.Copy(f.rpm.installed, f.after)
	return rpmexact.Outcome{After: f.after}, nil
}

// rbTarget is what `rollback: true` finds on a test's target: the store in a temporary
// directory (not there until a record is written), the kept builds, the RPM database.
type rbTarget struct {
	store  rollback.Store
	keeper *fakeKeeper
	rpm    *fakeRPM
	txn    *fakeTxn
}

func newTarget(t *testing.T) *rbTarget {
	rpm := &fakeRPM{installed: map[string][]string{"demo": {demoOld}}}
	return &rbTarget{store: rollback.Store{Dir: filepath.Join(t.TempDir(), "rollback")}, keeper: &fakeKeeper{},
		rpm: rpm, txn: &fakeTxn{rpm: rpm, after: map[string][]string{}}}
}

func (g *rbTarget) rollbacks() *Rollbacks {
	return &Rollbacks{Store: g.store, Keeper: func(string) Keeper { return g.keeper }, Txn: g.txn, Runner: g.rpm}
}

// record is the service's record in the store; nil when there is none.
func (g *rbTarget) record(t *testing.T) *rollback.Record {
	rec, err := g.store.Load("demo")
	require.NoError(t, err)
	return rec
}

// storeEmpty reports whether nothing of a record is in the store: no directory, or an
// empty one.
func (g *rbTarget) storeEmpty(t *testing.T) bool {
	entries, err := os.ReadDir(g.store.Dir)
	if errors.Is(err, os.ErrNotExist) {
		return true
	}
	require.NoError(t, err)
	return len(entries) == 0
}

// movingPackages is the packages step as a rollback reads it (befores): its plan moves
// the packages of befores to pins; its real run installs pins in rpm.
type movingPackages struct {
	befores  []rollback.Package
	pins     []string
	rpm      *fakeRPM
	during   func() // in the real run, before the change
	refuse   bool   // the real run fails before it moves anything (a pin no repository has)
	names    []any  // the plan's entries, when not the pins' installs (a removal's)
	runs     int    // the step ran (check mode or real)
	released bool
}

func (p *movingPackages) module() Module {
	moves := len(p.befores) > 0
	inner := moduleOf(rpmexact.Spec(), func(_ context.Context, req *ansible.Request) (any, error) {
		var names []any
		for _, pin := range p.pins {
			names = append(names, "install-nevra "+pin)
		}
		if p.names != nil {
			names = p.names
		}
		if req.CheckMode {
			return map[string]any{"changed": moves, "plan": names}, nil
		}
		if p.during != nil {
			p.during()
		}
		if p.refuse {
			return map[string]any{"changed": false}, errors.New("no enabled repository has demo-0:2.0-1.noarch")
		}
		if !moves {
			return map[string]any{"changed": false}, nil
		}
		var entries []any
		for _, b := range p.befores {
			after := []any{}
			for _, pin := range p.pins {
				if strings.HasPrefix(pin, b.Name+"-") {
					after = append(after, pin)
				}
			}
			p.rpm.installed[b.Name] = stringsOf(after)
			entries = append(entries, map[string]any{"name": b.Name, "operation": rpmexact.OpInstallNEVRA,
				"before": toAny(b.Before), "after": after})
		}
		return map[string]any{"changed": true, "package_changed": true, "packages": entries}, nil
	})
	return Module{Spec: inner.Spec, Plan: func(ctx context.Context, req *ansible.Request) Step {
		return &beforesStep{fakeStep: inner.Plan(ctx, req).(*fakeStep), p: p}
	}}
}

// beforesStep is movingPackages' plan in hand.
type beforesStep struct {
	*fakeStep
	p *movingPackages
}

func (s *beforesStep) Befores() ([]rollback.Package, bool) { return s.p.befores, true }
func (s *beforesStep) Pins() []string                      { return s.p.pins }
func (s *beforesStep) Release()                            { s.p.released = true }
func (s *beforesStep) Run(ctx context.Context, req *ansible.Request) (any, error) {
	s.p.runs++
	s.p.released = true
	return s.fakeStep.Run(ctx, req)
}

// demoMoves moves demo from demoOld to demoNew.
func demoMoves(rpm *fakeRPM) *movingPackages {
	return &movingPackages{befores: []rollback.Package{{Name: "demo", Before: []string{demoOld}}}, pins: []string{demoNew}, rpm: rpm}
}

// diskConfigs writes the configs' content to their paths (mode 0644): a plan writes a
// file whose content differs.
type diskConfigs struct {
	written []string
	// planned, when set, runs after each plan's read.
	planned func(path string)
}

func (d *diskConfigs) Plan(_ context.Context, c configfile.Config) (configfile.Plan, error) {
	mode := c.Mode
	if mode == 0 {
		mode = 0o644
	}
	p := configfile.Plan{Want: configfile.Want{Name: c.Name, Path: c.Path, Present: !c.Absent, Content: []byte(c.Content), Mode: mode}}
	// The file as configfile's plan reads it (the rollback's record takes it from there).
	f, err := configfile.Observe("", c.Path)
	if err != nil {
		return p, err
	}
	p.File = f
	if d.planned != nil {
		d.planned(c.Path)
	}
	now, err := os.ReadFile(c.Path)
	switch {
	case c.Absent:
		if err == nil {
			p.Steps = []configfile.Step{configfile.StepRemove}
		}
	case err != nil || string(now) != c.Content:
		p.Steps = []configfile.Step{configfile.StepWrite}
	default:
		if fi, err := os.Stat(c.Path); err == nil && fi.Mode().Perm() != mode {
			p.Steps = []configfile.Step{configfile.StepChmod}
		}
	}
	return p, nil
}

func (d *diskConfigs) Apply(_ context.Context, p configfile.Plan, before func() error) (*configfile.Result, error) {
	res := p.Result()
	if !p.Changed() {
		return res, nil
	}
	if before != nil {
		if err := before(); err != nil {
			res.Changed = false
			return res, err
		}
	}
	if !p.Want.Present {
		if err := os.Remove(p.Want.Path); err != nil {
			res.Changed = false
			return res, err
		}
		d.written = append(d.written, p.Want.Path)
		return res, nil
	}
	if err := os.WriteFile(p.Want.Path, p.Want.Content, p.Want.Mode); err != nil {
		res.Changed = false
		return res, err
	}
	if err := os.Chmod(p.Want.Path, p.Want.Mode); err != nil {
		res.Changed = false
		return res, err
	}
	d.written = append(d.written, p.Want.Path)
	return res, nil
}

// failingProcess is systemd_lifecycle's contract whose n-th real call fails when
// fail[n]; it keeps the real calls' arguments.
type failingProcess struct {
	fail  []bool
	calls []map[string]any
	// reset are the units whose failed state a real run was asked to clear first.
	reset []string
}

func (f *failingProcess) module() Module {
	return moduleOf(lifecycle.Spec(), func(_ context.Context, req *ansible.Request) (any, error) {
		if req.CheckMode {
			return map[string]any{"changed": true, "unit": "demo.service", "plan": []any{"restart"}}, nil
		}
		n := len(f.calls)
		f.calls = append(f.calls, maps.Clone(req.Params))
		if task, err := ansible.Parsed[lifecycle.Task](req); err == nil && task.ResetFailed {
			f.reset = append(f.reset, task.Want.Unit)
		}
		if n < len(f.fail) && f.fail[n] {
			return map[string]any{"changed": true, "unit": "demo.service"},
				errors.New("demo.service: health probe http://127.0.0.1:8080/ failed: connection refused")
		}
		// As systemd_lifecycle reports it: the plan with its internal entries, the actions
		// systemd was asked for.
		return map[string]any{"changed": true, "unit": "demo.service", "plan": []any{"stamp-pending", "restart", "clear-pending"}, "actions": []any{"restart"}}, nil
	})
}

// rbDeps are the service's parts for a rollback test.
func rbDeps(g *rbTarget, pkgs *movingPackages, procs *failingProcess) Deps {
	d := Deps{
		Configs:   &diskConfigs{},
		Processes: procs.module(),
		Pending:   &fakePending{records: map[string]*durable.Pending{}},
		Now:       func() (stamp.Stamp, error) { return stamp.Stamp{BootID: "b", Mono: 1}, nil },
		Rollback:  g.rollbacks(),
	}
	if pkgs != nil {
		d.Packages = pkgs.module()
	}
	return d
}

// rbArgs is the demo service with rollback, its package at demoNew, and its config at
// path (none when "") with content.
func rbArgs(path, content string, process map[string]any) map[string]any {
	args := map[string]any{"name": "demo", "rollback": true,
		"packages":  []any{map[string]any{"name": "demo", "version": "0:2.0-1.noarch"}},
		"processes": []any{process}}
	if path != "" {
		args["configs"] = []any{map[string]any{"name": "site", "path": path, "content": content}}
	}
	return args
}

// resultOf is the result's key as a map (nil when absent).
func resultOf(out map[string]any, key string) map[string]any {
	m, _ := out[key].(map[string]any)
	return m
}

// A plan that moves a package asks the Keeper, before any change (in check mode only
// asking), for the builds a rollback would install; a change that ended well keeps the
// builds it installed. A build the rollback would need that is neither kept nor
// available refuses the run there: nothing ran, no record. A build the change installed
// that cannot be kept does not: a warning.
func TestRollbackKeepsTheBuildsBeforeAnyChange(t *testing.T) {
	cases := []struct {
		name    string
		check   bool
		missing []string
		refused bool
	}{
		{name: "a real run keeps the builds"},
		{name: "check mode only asks", check: true},
		{name: "the installed build cannot come back: refused", missing: []string{demoOld}, refused: true},
		{name: "check mode refuses too", check: true, missing: []string{demoOld}, refused: true},
		{name: "only the new build is not kept: not refused", missing: []string{demoNew}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			g := newTarget(t)
			g.keeper.missing = c.missing
			pkgs := demoMoves(g.rpm)
			var during *rollback.Record
			pkgs.during = func() { during = g.record(t) }
			procs := &failingProcess{}
			out := ansible.Call(context.Background(), Spec(), rbArgs("", "", map[string]any{"unit": "demo"}), c.check, false,
				Handler(rbDeps(g, pkgs, procs)))

			// Before any change the builds a rollback installs; once a real change ended
			// well, the builds it installed, for the next change's rollback.
			wantAsked, wantChecks := [][]string{{demoOld}}, []bool{true}
			if !c.check && !c.refused {
				wantAsked, wantChecks = append(wantAsked, []string{demoNew}), append(wantChecks, false)
			}
			assert.Equal(t, wantAsked, g.keeper.asked)
			assert.Equal(t, wantChecks, g.keeper.checks, "the plan only reads")
			if c.check || c.refused {
				assert.Empty(t, g.keeper.fetched, "nothing kept")
			} else {
				assert.Equal(t, [][]rollback.Fetch{{{Build: demoOld, Repo: "repo"}}}, g.keeper.fetched, "the planned fetch, carried out")
			}
			if c.refused {
				require.Equal(t, true, out["failed"])
				assert.Equal(t, "rollback", out["failed_step"])
				assert.Contains(t, out["msg"], demoOld)
				assert.Contains(t, out["msg"], "nothing was changed")
				assert.NotContains(t, out["msg"], demoNew)
				assert.Zero(t, pkgs.runs, "the packages step never ran")
				assert.True(t, pkgs.released, "its plan was given back")
				assert.Empty(t, procs.calls)
				assert.Nil(t, g.record(t))
				assert.NoDirExists(t, g.store.Dir, "no record written")
				return
			}
			require.Nil(t, out["failed"], out["msg"])
			assert.Equal(t, 1, pkgs.runs)
			if c.check {
				assert.Nil(t, during)
				assert.NoDirExists(t, g.store.Dir)
				assert.Empty(t, g.keeper.pruned)
				return
			}
			require.NotNil(t, during, "the record is written before the packages step")
			assert.Equal(t, []rollback.Package{{Name: "demo", Before: []string{demoOld}}}, during.Packages)
			assert.Equal(t, rollback.PhaseChanging, during.Phase)
			assert.Nil(t, g.record(t), "removed when the run ended well")
			assert.True(t, g.storeEmpty(t))
			assert.Equal(t, [][]string{{demoNew}}, g.keeper.pruned, "only the build now installed stays kept")
		})
	}
}

// The keep step is planned reading only and carried out by the real run before its record:
// a build kept already is planned as kept and fetched by nobody; a keep that fails (a
// signature DNF would refuse, a repository changed since the plan) refuses the run there,
// with nothing changed and no record.
func TestRollbackKeepStepIsPlannedThenCarriedOut(t *testing.T) {
	for _, c := range []struct {
		name    string
		kept    bool
		keepErr error
		entry   string
		fetched [][]rollback.Fetch
	}{
		{name: "kept already: nothing fetched", kept: true, entry: "rollback: keep " + demoOld + " (kept)", fetched: [][]rollback.Fetch{nil}},
		{name: "fetched as planned", entry: "rollback: keep " + demoOld + ": fetch from repo, gpgcheck off",
			fetched: [][]rollback.Fetch{{{Build: demoOld, Repo: "repo"}}}},
		{name: "the keep fails: refused before any change", keepErr: errors.New(demoOld + " from repository repo, which has gpgcheck on, fails DNF's signature check"),
			entry: "rollback: keep " + demoOld + ": fetch from repo, gpgcheck off", fetched: [][]rollback.Fetch{{{Build: demoOld, Repo: "repo"}}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			g := newTarget(t)
			if c.kept {
				g.keeper.kept = []string{demoOld}
			}
			g.keeper.keepErr = c.keepErr
			pkgs := demoMoves(g.rpm)
			procs := &failingProcess{}
			out := ansible.Call(context.Background(), Spec(), rbArgs("", "", map[string]any{"unit": "demo"}), false, false,
				Handler(rbDeps(g, pkgs, procs)))
			assert.Contains(t, stringsOf(out["plan"]), c.entry)
			assert.Equal(t, c.fetched, g.keeper.fetched)
			if c.keepErr == nil {
				require.Nil(t, out["failed"], out["msg"])
				return
			}
			require.Equal(t, true, out["failed"])
			assert.Equal(t, "rollback", out["failed_step"])
			assert.Contains(t, out["msg"], "rollback: keep the builds a rollback would install: "+c.keepErr.Error())
			assert.Equal(t, false, out["changed"])
			assert.Zero(t, pkgs.runs, "the packages step never ran")
			assert.True(t, pkgs.released, "its plan was given back")
			assert.NoDirExists(t, g.store.Dir, "no record written")
		})
	}
}

// Without a change and without an earlier record there is nothing to put back: no
// Keeper asked, no record, no rpm query, no `rollback` in the result.
func TestRollbackWithoutAChangeDoesNothing(t *testing.T) {
	for _, check := range []bool{true, false} {
		t.Run(fmt.Sprint("check=", check), func(t *testing.T) {
			g := newTarget(t)
			path := filepath.Join(t.TempDir(), "site.conf")
			require.NoError(t, os.WriteFile(path, []byte("listen 80\n"), 0o644))
			pkgs := &movingPackages{rpm: g.rpm} // moves nothing
			procs := &failingProcess{}
			out := ansible.Call(context.Background(), Spec(), rbArgs(path, "listen 80\n", map[string]any{"unit": "demo"}), check, false,
				Handler(rbDeps(g, pkgs, procs)))
			require.Nil(t, out["failed"], out["msg"])
			assert.Empty(t, g.keeper.asked)
			assert.Nil(t, out["rollback"])
			assert.Nil(t, out["rolled_back"])
			assert.NoDirExists(t, g.store.Dir)
			assert.Zero(t, g.rpm.queries)
			for _, p := range stringsOf(out["plan"]) {
				assert.NotContains(t, p, "rollback")
			}
		})
	}
}

// Check mode says what a rollback would put back (the packages to their builds, a file
// to its content or its removal) and plans keeping and saving them, writing nothing.
func TestRollbackInCheckModeListsWhatItWouldPutBack(t *testing.T) {
	g := newTarget(t)
	etc := t.TempDir()
	site, extra := filepath.Join(etc, "site.conf"), filepath.Join(etc, "extra.conf")
	require.NoError(t, os.WriteFile(site, []byte("listen 80\n"), 0o644))
	args := rbArgs(site, "listen 81\n", map[string]any{"unit": "demo"})
	args["configs"] = append(args["configs"].([]any), map[string]any{"name": "extra", "path": extra, "content": "x\n"})
	out := ansible.Call(context.Background(), Spec(), args, true, false, Handler(rbDeps(g, demoMoves(g.rpm), &failingProcess{})))
	require.Nil(t, out["failed"], out["msg"])

	rb := resultOf(out, "rollback")
	require.NotNil(t, rb)
	assert.Equal(t, []any{map[string]any{"name": "demo", "restore": []any{demoOld}}}, rb["packages"])
	assert.Equal(t, []any{map[string]any{"path": site, "restore": "content"}, map[string]any{"path": extra, "restore": "removal"}}, rb["files"])
	assert.Nil(t, rb["record"], "check mode names no record")
	assert.Equal(t, []any{map[string]any{"build": demoOld, "kept": false, "repo": "repo", "gpgcheck": false}}, rb["keep"])
	plan := stringsOf(out["plan"])
	want := []string{"rollback: keep " + demoOld + ": fetch from repo, gpgcheck off", "rollback: save " + site, "rollback: save " + extra, "rollback: record"}
	require.GreaterOrEqual(t, len(plan), len(want), "%v", plan)
	assert.Equal(t, want, plan[:len(want)], "the rollback's entries first, in the order they happen: its record is written before any change")
	assert.NotContains(t, plan, "rollback: keep "+demoNew, "the pin is kept, but not a rollback's")
	assert.Equal(t, []bool{true}, g.keeper.checks)
	assert.Empty(t, g.keeper.fetched, "planned, not done")
	assert.NoDirExists(t, g.store.Dir, "nothing written in check mode")
	data, err := os.ReadFile(site)
	require.NoError(t, err)
	assert.Equal(t, "listen 80\n", string(data))
	assert.NoFileExists(t, extra)
}

// A config change whose process then fails is put back: the file's old content (or its
// removal), the process called again with the config's change as its wiring names it,
// proved, and the record removed. When the rollback's process fails too, the task says
// so and the record stays, restoring, for the next run.
func TestRollbackPutsAConfigBackAfterTheProcessFailed(t *testing.T) {
	cases := []struct {
		name          string
		process       map[string]any
		existed       bool
		rollbackFails bool
		// failsOnce: the rollback's process step fails once, and its second try works.
		failsOnce bool
		list      string // the list of the rollback's process step that names the config
	}{
		{name: "restart_on names the config: restarted in the rollback, healthy", existed: true,
			process: map[string]any{"unit": "demo", "restart_on": []any{"config:site"}}, list: "restart_on"},
		{name: "reload_on names the config: reloaded in the rollback", existed: true,
			process: map[string]any{"unit": "demo", "reload_on": []any{"config:site"}}, list: "reload_on"},
		{name: "a config that did not exist: removed; the default wiring restarts",
			process: map[string]any{"unit": "demo"}, list: "restart_on"},
		{name: "the rollback's process fails too, twice: the record stays, restoring", existed: true, rollbackFails: true,
			process: map[string]any{"unit": "demo", "restart_on": []any{"config:site"}}, list: "restart_on"},
		{name: "the rollback's process fails once: tried again, healthy", existed: true, failsOnce: true,
			process: map[string]any{"unit": "demo", "restart_on": []any{"config:site"}}, list: "restart_on"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			g := newTarget(t)
			path := filepath.Join(t.TempDir(), "site.conf")
			if c.existed {
				require.NoError(t, os.WriteFile(path, []byte("listen 80\n"), 0o640))
			}
			procs := &failingProcess{fail: []bool{true, c.rollbackFails || c.failsOnce, c.rollbackFails}}
			args := rbArgs(path, "listen 81\n", c.process)
			delete(args, "packages")
			out := ansible.Call(context.Background(), Spec(), args, false, false, Handler(rbDeps(g, nil, procs)))

			require.Equal(t, true, out["failed"])
			assert.Equal(t, "process demo.service", out["failed_step"], "the change's failure")
			assert.Contains(t, out["msg"], "connection refused")
			if c.existed {
				data, err := os.ReadFile(path)
				require.NoError(t, err)
				assert.Equal(t, "listen 80\n", string(data), "the old content is back")
				fi, err := os.Stat(path)
				require.NoError(t, err)
				assert.Equal(t, os.FileMode(0o640), fi.Mode().Perm(), "and its mode")
			} else {
				assert.NoFileExists(t, path, "a file that was not there is removed")
			}
			calls := 2
			if c.rollbackFails || c.failsOnce {
				calls = 3 // the rollback's step tried once more
			}
			require.Len(t, procs.calls, calls, "the change's process step, then the rollback's")
			again := procs.calls[calls-1]
			assert.Equal(t, procs.calls[1], again, "the second try is the same step")
			named, _ := again[c.list].([]any)
			assert.True(t, refChanged(named), "the rollback's %s carries the config's change: %v", c.list, again)
			assert.Contains(t, fmt.Sprint(named), "config:site")
			wantReset := []string{"demo.service"}
			if calls == 3 {
				wantReset = append(wantReset, "demo.service")
			}
			assert.Equal(t, wantReset, procs.reset, "its failed state cleared before it is brought back (each try)")

			done := resultOf(out, "rolled_back")
			require.NotNil(t, done)
			restore := "content"
			if !c.existed {
				restore = "removal"
			}
			assert.Equal(t, []any{map[string]any{"path": path, "restore": restore}}, done["files"])
			assert.Contains(t, stringsOf(out["plan"]), "rollback: restore "+path)
			assert.Contains(t, stringsOf(out["plan"]), "rollback: phase restoring")
			if c.rollbackFails {
				assert.Equal(t, false, done["healthy"])
				assert.Equal(t, "process demo.service", done["failed"])
				assert.Contains(t, out["msg"], "the rollback failed at process demo.service")
				assert.NotContains(t, out["msg"], "back and healthy")
				rec := g.record(t)
				require.NotNil(t, rec, "the record is kept for the next run")
				assert.Equal(t, rollback.PhaseRestoring, rec.Phase)
				require.Len(t, rec.Files, 1)
				assert.Equal(t, path, rec.Files[0].Path)
				return
			}
			assert.Equal(t, true, done["healthy"])
			assert.Nil(t, done["failed"])
			assert.Contains(t, out["msg"], "the previous state is back and healthy")
			assert.Nil(t, g.record(t))
			assert.True(t, g.storeEmpty(t), "no record and no saved content left")
		})
	}
}

// The packages are put back in one DNF transaction from the kept builds, and read back:
// a transaction that left another build fails the rollback at packages, the record kept.
func TestRollbackPutsThePackagesBack(t *testing.T) {
	cases := []struct {
		name  string
		after []string // what the rollback's transaction leaves installed
	}{
		{name: "the old build is back", after: []string{demoOld}},
		{name: "DNF left the new build: the rollback failed", after: []string{demoNew}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			g := newTarget(t)
			g.txn.after = map[string][]string{"demo": c.after}
			procs := &failingProcess{fail: []bool{true}}
			out := ansible.Call(context.Background(), Spec(), rbArgs("", "", map[string]any{"unit": "demo"}), false, false,
				Handler(rbDeps(g, demoMoves(g.rpm), procs)))
			require.Equal(t, true, out["failed"])
			// Without repositories first; with them again only when that did not restore.
			ok := slices.Equal(c.after, []string{demoOld})
			if ok {
				require.Len(t, g.txn.ran, 1)
			} else {
				require.Len(t, g.txn.ran, 2)
				assert.Contains(t, g.txn.ran[1].Argv, "--setopt=skip_if_unavailable=True")
			}
			assert.Contains(t, g.txn.ran[0].Argv, "--disablerepo=*")
			assert.Equal(t, "install "+g.keeper.Path(demoOld)+"\nrun\n", g.txn.script)
			assert.Equal(t, []string{"demo"}, g.txn.ran[0].Names)
			done := resultOf(out, "rolled_back")
			require.NotNil(t, done)
			if !slices.Equal(c.after, []string{demoOld}) {
				assert.Equal(t, "packages", done["failed"])
				assert.Contains(t, out["msg"], "the rollback failed at packages")
				assert.Contains(t, out["msg"], "after the rollback's transaction demo is "+demoNew+", not "+demoOld)
				assert.Len(t, procs.calls, 1, "no process is brought back on a wrong build")
				rec := g.record(t)
				require.NotNil(t, rec)
				assert.Equal(t, rollback.PhaseRestoring, rec.Phase)
				return
			}
			assert.Equal(t, []any{map[string]any{"name": "demo", "restore": []any{demoOld}, "from": []any{demoNew}}}, done["packages"])
			assert.Equal(t, true, done["healthy"])
			require.Len(t, procs.calls, 2)
			restart, _ := procs.calls[1]["restart_on"].([]any)
			assert.True(t, refChanged(restart), "the package's change restarts the process in the rollback")
			assert.Contains(t, fmt.Sprint(restart), "package:demo")
			assert.Contains(t, out["msg"], "rolled back: demo to "+demoOld)
			assert.Contains(t, out["msg"], "processes: demo.service restart")
			assert.NotContains(t, out["msg"], "-pending", "no internal step names in what a user reads")
			assert.Nil(t, g.record(t))
			assert.Equal(t, [][]string{{demoOld}}, g.keeper.pruned, "the build installed again stays kept")
		})
	}
}

// beginEarlier leaves the record an earlier run with rollback left: demo at demoOldest,
// and (when path is given) that file with content.
func beginEarlier(t *testing.T, g *rbTarget, phase, path, content string) {
	rec := rollback.Record{Service: "demo", Phase: phase, Packages: []rollback.Package{{Name: "demo", Before: []string{demoOldest}}}}
	contents := map[string][]byte{}
	if path != "" {
		rec.Files = []rollback.File{{Path: path, Existed: true, Mode: 0o644}}
		contents[path] = []byte(content)
	}
	require.NoError(t, g.store.Begin(rec, contents))
}

// A run without rollback that ends well leaves the state asked for: a record an earlier
// run with rollback left is removed, so a later rollback does not go back past it. One
// that fails, or runs in check mode, leaves it.
func TestARunWithoutRollbackThatEndsWellDropsAnEarlierRecord(t *testing.T) {
	cases := []struct {
		name     string
		check    bool
		fails    bool
		wantKept bool
	}{
		{name: "ends well: removed"},
		{name: "fails: kept", fails: true, wantKept: true},
		{name: "check mode: kept", check: true, wantKept: true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			g := newTarget(t)
			beginEarlier(t, g, rollback.PhaseRestoring, "", "")
			procs := &failingProcess{fail: []bool{c.fails}}
			args := map[string]any{"name": "demo", "processes": []any{map[string]any{"unit": "demo"}}}
			out := ansible.Call(context.Background(), Spec(), args, c.check, false, Handler(rbDeps(g, nil, procs)))
			assert.Equal(t, c.fails, out["failed"] == true, out["msg"])
			assert.Nil(t, out["rollback"])
			assert.Nil(t, out["rolled_back"])
			assert.Empty(t, g.keeper.asked)
			if c.wantKept {
				assert.NotNil(t, g.record(t))
				return
			}
			assert.Nil(t, g.record(t))
			assert.True(t, g.storeEmpty(t))
		})
	}
}

// A record an earlier run left keeps its entries (rollback.Merge): the builds and the
// file content from before the first unfinished run, not the half-changed state between.
// The Keeper is asked for those builds; a failed change puts them back; a run with
// rollback that changes nothing still finishes the record (moves forward, removes it).
func TestRollbackKeepsAnEarlierRecordsState(t *testing.T) {
	cases := []struct {
		name    string
		moves   bool
		fails   bool
		wantAsk []string
	}{
		{name: "the change fails: the earlier state comes back", moves: true, fails: true, wantAsk: []string{demoOldest}},
		{name: "the change ends well: the record is removed", moves: true, wantAsk: []string{demoOldest}},
		{name: "nothing to change: the earlier record alone, removed when the run ends well", wantAsk: []string{demoOldest}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			g := newTarget(t)
			path := filepath.Join(t.TempDir(), "site.conf")
			content := "listen 81\n"
			if c.moves {
				// Half-changed by the earlier run: the config in between.
				require.NoError(t, os.WriteFile(path, []byte("listen 80 half\n"), 0o644))
			} else {
				require.NoError(t, os.WriteFile(path, []byte(content), 0o644))
			}
			beginEarlier(t, g, rollback.PhaseRestoring, path, "listen 80\n")
			pkgs := &movingPackages{rpm: g.rpm}
			if c.moves {
				pkgs = demoMoves(g.rpm)
			}
			var during *rollback.Record
			pkgs.during = func() { during = g.record(t) }
			g.txn.after = map[string][]string{"demo": {demoOldest}}

			// Check mode first: what a rollback would put back.
			check := ansible.Call(context.Background(), Spec(), rbArgs(path, content, map[string]any{"unit": "demo"}), true, false,
				Handler(rbDeps(g, pkgs, &failingProcess{})))
			require.Nil(t, check["failed"], check["msg"])
			rb := resultOf(check, "rollback")
			require.NotNil(t, rb, "an earlier record: a rollback would put its state back")
			assert.Equal(t, []any{map[string]any{"name": "demo", "restore": []any{demoOldest}}}, rb["packages"])
			assert.Equal(t, []any{map[string]any{"path": path, "restore": "content"}}, rb["files"])

			g.keeper.asked = nil
			procs := &failingProcess{fail: []bool{c.fails}}
			out := ansible.Call(context.Background(), Spec(), rbArgs(path, content, map[string]any{"unit": "demo"}), false, false,
				Handler(rbDeps(g, pkgs, procs)))
			require.NotEmpty(t, g.keeper.asked)
			assert.Equal(t, c.wantAsk, g.keeper.asked[0], "the earlier record's builds, not the installed one")
			require.NotNil(t, during)
			assert.Equal(t, []rollback.Package{{Name: "demo", Before: []string{demoOldest}}}, during.Packages, "the record keeps the older builds")
			if !c.fails {
				require.Nil(t, out["failed"], out["msg"])
				assert.Nil(t, g.record(t))
				assert.True(t, g.storeEmpty(t))
				return
			}
			require.Equal(t, true, out["failed"])
			assert.Contains(t, out["msg"], "the previous state is back and healthy")
			assert.Equal(t, "install "+g.keeper.Path(demoOldest)+"\nrun\n", g.txn.script)
			data, err := os.ReadFile(path)
			require.NoError(t, err)
			assert.Equal(t, "listen 80\n", string(data), "the content from before the earlier run, not the half-changed one")
		})
	}
}

// A run that moves forward over an earlier record says so in the record it writes
// (docs/rollback.md: its phase is changing, then restoring once a rollback starts): a
// kill during that run is a kill in a forward run, not in a rollback (the soak counts
// kills by this phase).
func TestAMergedRecordIsChangingWhileTheRunMovesForward(t *testing.T) {
	g := newTarget(t)
	beginEarlier(t, g, rollback.PhaseRestoring, "", "")
	pkgs := demoMoves(g.rpm)
	var during *rollback.Record
	pkgs.during = func() { during = g.record(t) }
	out := ansible.Call(context.Background(), Spec(), rbArgs("", "", map[string]any{"unit": "demo"}), false, false,
		Handler(rbDeps(g, pkgs, &failingProcess{})))
	require.Nil(t, out["failed"], out["msg"])
	require.NotNil(t, during)
	assert.Equal(t, rollback.PhaseChanging, during.Phase, "the run moves forward, whatever phase the earlier run was killed in")
}

// A config whose state before the change today's rules would not write back (a mode the
// group can write through, a set-id bit) refuses the run before any change, in check mode
// too: its rollback could not put it back. Refused after the change, the host would be
// left with the failed change.
func TestRollbackRefusesAFileItCouldNotPutBackBeforeAnyChange(t *testing.T) {
	for _, c := range []struct {
		name string
		mode os.FileMode
		why  string
	}{
		{"group-writable", 0o664, "lets group or others write"},
		{"setgid", 0o644 | os.ModeSetgid, "setgid"},
	} {
		for _, check := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s check=%v", c.name, check), func(t *testing.T) {
				g := newTarget(t)
				path := filepath.Join(t.TempDir(), "site.conf")
				require.NoError(t, os.WriteFile(path, []byte("listen 80\n"), 0o600))
				require.NoError(t, os.Chmod(path, c.mode))
				pkgs := demoMoves(g.rpm)
				procs := &failingProcess{fail: []bool{true}}
				out := ansible.Call(context.Background(), Spec(), rbArgs(path, "listen 81\n", map[string]any{"unit": "demo"}), check, false,
					Handler(rbDeps(g, pkgs, procs)))
				require.Equal(t, true, out["failed"], "refused")
				assert.Equal(t, "rollback", out["failed_step"])
				msg, _ := out["msg"].(string)
				assert.Contains(t, msg, path+" could not be put back")
				assert.Contains(t, msg, c.why)
				assert.Contains(t, msg, "nothing was changed")
				assert.NotContains(t, msg, "configs[-1]", "the message names the saved state, not an entry the task does not have")
				assert.Zero(t, pkgs.runs, "the packages step never ran")
				assert.Empty(t, procs.calls)
				data, err := os.ReadFile(path)
				require.NoError(t, err)
				assert.Equal(t, "listen 80\n", string(data))
				assert.NoDirExists(t, g.store.Dir, "no record")
			})
		}
	}
}

// The content a record saves for a config is the one its plan read (through a descriptor
// opened without following a link) and its write checks it still replaces: a link to a
// root-only secret put at the config's path after the plan (by the daemon's user, who
// owns the directory) never reaches the record.
func TestRollbackSavesTheConfigItsPlanRead(t *testing.T) {
	g := newTarget(t)
	dir := t.TempDir()
	secret := filepath.Join(dir, "shadow")
	require.NoError(t, os.WriteFile(secret, []byte("root:$6$secret\n"), 0o600))
	path := filepath.Join(dir, "site.conf")
	require.NoError(t, os.WriteFile(path, []byte("listen 80\n"), 0o640))
	pkgs := demoMoves(g.rpm)
	var saved []string
	pkgs.during = func() {
		rec := g.record(t)
		require.NotNil(t, rec)
		for _, f := range rec.Files {
			data, err := g.store.Saved(rec, f)
			require.NoError(t, err)
			saved = append(saved, string(data))
		}
	}
	d := rbDeps(g, pkgs, &failingProcess{})
	d.Configs.(*diskConfigs).planned = func(p string) {
		require.NoError(t, os.Rename(p, p+".away"))
		require.NoError(t, os.Symlink(secret, p))
	}
	ansible.Call(context.Background(), Spec(), rbArgs(path, "listen 81\n", map[string]any{"unit": "demo"}), false, false, Handler(d))
	assert.Equal(t, []string{"listen 80\n"}, saved, "the plan's read, never the link's target")
}

// A run that moves only one of the service's packages keeps the other's installed build
// when it prunes: the other's next change needs it for its own rollback.
func TestRollbackPruneKeepsTheBuildsOfPackagesTheRunDidNotMove(t *testing.T) {
	const otherBuild = "other-0:1.0-1.noarch"
	g := newTarget(t)
	g.rpm.installed["other"] = []string{otherBuild}
	pkgs := demoMoves(g.rpm)
	args := rbArgs("", "", map[string]any{"unit": "demo"})
	args["packages"] = append(args["packages"].([]any), map[string]any{"name": "other", "version": "0:1.0-1.noarch"})
	out := ansible.Call(context.Background(), Spec(), args, false, false, Handler(rbDeps(g, pkgs, &failingProcess{})))
	require.Nil(t, out["failed"], out["msg"])
	require.Len(t, g.keeper.pruned, 1)
	assert.ElementsMatch(t, []string{demoNew, otherBuild}, g.keeper.pruned[0], "other's build stays kept")
}

// A rollback of a first install removes the package: when a package outside the service
// has come to require it since, DNF would remove that one too. The rollback fails at
// packages, naming it, and runs no transaction; a dependent that is the service's own
// package goes with it.
func TestRollbackRemovesNoPackageThatIsNotTheServices(t *testing.T) {
	for _, c := range []struct {
		name       string
		dependents []string
		refused    bool
	}{
		{"another package requires it: refused", []string{"appb-1.0-1.noarch"}, true},
		{"only the service's own require it", []string{"demo-2.0-1.noarch"}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			g := newTarget(t)
			delete(g.rpm.installed, "demo")
			pkgs := &movingPackages{befores: []rollback.Package{{Name: "demo"}}, pins: []string{demoNew}, rpm: g.rpm}
			d := rbDeps(g, pkgs, &failingProcess{fail: []bool{true}})
			d.Predict = fakePredict{dependents: c.dependents}
			out := ansible.Call(context.Background(), Spec(), rbArgs("", "", map[string]any{"unit": "demo"}), false, false, Handler(d))
			require.Equal(t, true, out["failed"])
			done := resultOf(out, "rolled_back")
			require.NotNil(t, done)
			if !c.refused {
				require.Len(t, g.txn.ran, 1)
				assert.Equal(t, "remove demo\nrun\n", g.txn.script)
				return
			}
			assert.Empty(t, g.txn.ran, "no transaction")
			assert.Equal(t, "packages", done["failed"])
			assert.Contains(t, out["msg"], "would also remove appb-1.0-1.noarch")
			require.NotNil(t, g.record(t), "the record is kept")
		})
	}
}

// A removal prunes the service's kept builds under the service's lock even when it has no
// record: a run with rollback keeping builds at that moment has none yet.
func TestARemovalPrunesUnderTheServicesLock(t *testing.T) {
	g := newTarget(t)
	var locked []string
	held := false
	d := rbDeps(g, nil, &failingProcess{})
	d.Lock = func(_ context.Context, name string) (func(), error) {
		locked = append(locked, name)
		held = true
		return func() { held = false }, nil
	}
	pruned := false
	g.keeper.onPrune = func() { pruned = held }
	out := ansible.Call(context.Background(), Spec(), map[string]any{"name": "demo", "state": "absent"}, false, false, Handler(d))
	require.Nil(t, out["failed"], out["msg"])
	assert.Contains(t, locked, "service-"+rollback.Key("demo"))
	assert.True(t, pruned, "pruned while the lock was held")
}

// A file an earlier unfinished run recorded that the task no longer declares is left as
// it is by the rollback (with a warning): it may be someone else's now.
func TestRollbackLeavesAFileNoLongerDeclared(t *testing.T) {
	g := newTarget(t)
	dir := t.TempDir()
	gone, site := filepath.Join(dir, "gone.conf"), filepath.Join(dir, "site.conf")
	require.NoError(t, os.WriteFile(gone, []byte("someone else's now\n"), 0o644))
	beginEarlier(t, g, rollback.PhaseRestoring, gone, "the service's once\n")
	args := rbArgs(site, "listen 81\n", map[string]any{"unit": "demo"})
	delete(args, "packages")
	g.rpm.installed["demo"] = []string{demoOldest} // as the earlier record has it
	out := ansible.Call(context.Background(), Spec(), args, false, false, Handler(rbDeps(g, nil, &failingProcess{fail: []bool{true}})))
	require.Equal(t, true, out["failed"])
	assert.Contains(t, out["msg"], "the previous state is back")
	data, err := os.ReadFile(gone)
	require.NoError(t, err)
	assert.Equal(t, "someone else's now\n", string(data), "not written back")
	assert.Contains(t, fmt.Sprint(out["warnings"]), gone+", which an earlier unfinished run changed, is no longer one of the service's files")
	assert.NoFileExists(t, site, "the declared file is put back (it did not exist)")
}

// A kept build from a repository with gpgcheck on is installed by the rollback with DNF's
// check of local packages on (offline and with the repositories); one from a repository
// without it with DNF's default.
func TestRollbackInstallsSignedKeptBuildsWithTheirCheck(t *testing.T) {
	for _, signed := range []bool{true, false} {
		t.Run(fmt.Sprint("gpgcheck=", signed), func(t *testing.T) {
			g := newTarget(t)
			if signed {
				g.keeper.signed = []string{demoOld}
			}
			g.txn.after = map[string][]string{"demo": {demoNew}} // not restored: both tries run
			out := ansible.Call(context.Background(), Spec(), rbArgs("", "", map[string]any{"unit": "demo"}), false, false,
				Handler(rbDeps(g, demoMoves(g.rpm), &failingProcess{fail: []bool{true}})))
			require.Equal(t, true, out["failed"])
			require.Len(t, g.txn.ran, 2)
			for _, tr := range g.txn.ran {
				assert.Equal(t, signed, slices.Contains(tr.Argv, "--setopt=localpkg_gpgcheck=True"), tr.Argv)
			}
		})
	}
}

// refusingConfigs is diskConfigs whose validator refuses every write: nothing is written.
type refusingConfigs struct{ diskConfigs }

func (d *refusingConfigs) Apply(_ context.Context, p configfile.Plan, _ func() error) (*configfile.Result, error) {
	res := p.Result()
	res.Changed = false
	return res, fmt.Errorf("%s: %w: the validator exited 1: bad directive", p.Want.Path, configfile.ErrValidation)
}

// A change with rollback that fails before any part moved (the packages step refused, a
// config's validator refused) puts nothing back and touches no process: the task is
// unchanged, says that nothing had changed, and leaves no record, no saved content and
// no reaction owed.
func TestARollbackWithNothingMovedDoesNothing(t *testing.T) {
	cases := []struct {
		name    string
		refuse  bool // the packages step fails
		config  bool // the config's validator refuses
		failure string
	}{
		{name: "a pin no repository has", refuse: true, failure: "no enabled repository has"},
		{name: "a config its validator refuses", config: true, failure: "bad directive"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			g := newTarget(t)
			path := filepath.Join(t.TempDir(), "site.conf")
			require.NoError(t, os.WriteFile(path, []byte("listen 80\n"), 0o644))
			procs := &failingProcess{}
			args := rbArgs(path, "listen 81\n", map[string]any{"unit": "demo", "restart_on": []any{"package:demo", "config:site"}})
			pkgs := demoMoves(g.rpm)
			pkgs.refuse = c.refuse
			d := rbDeps(g, pkgs, procs)
			if c.config {
				// The packages are where the task wants them: only the config would move.
				delete(args, "packages")
				args["processes"] = []any{map[string]any{"unit": "demo", "restart_on": []any{"config:site"}}}
				d.Packages = Module{}
				d.Configs = &refusingConfigs{}
			}
			pending := d.Pending.(*fakePending)
			out := ansible.Call(context.Background(), Spec(), args, false, false, Handler(d))

			require.Equal(t, true, out["failed"])
			assert.Contains(t, out["msg"], c.failure, "the change's failure")
			assert.Contains(t, out["msg"], "nothing had changed")
			assert.NotContains(t, out["msg"], "rolled back:")
			assert.Equal(t, false, out["changed"])
			assert.Nil(t, out["rolled_back"], "nothing was put back")
			assert.Empty(t, procs.calls, "no process was restarted or reloaded")
			assert.Empty(t, g.txn.ran, "no restoring transaction")
			assert.Empty(t, pending.records, "no reaction is owed")
			data, err := os.ReadFile(path)
			require.NoError(t, err)
			assert.Equal(t, "listen 80\n", string(data))
			assert.Nil(t, g.record(t))
			assert.True(t, g.storeEmpty(t), "no record and no saved content left")
		})
	}
}

// A rollback reacts only to the parts that move back: a recorded config already as
// recorded (an earlier run's record, the file back since) is left alone and its reload is
// not carried out; the package that moved is put back and restarts the process.
func TestARollbackReactsOnlyToWhatMovesBack(t *testing.T) {
	g := newTarget(t)
	path := filepath.Join(t.TempDir(), "site.conf")
	require.NoError(t, os.WriteFile(path, []byte("listen 80\n"), 0o644))
	require.NoError(t, os.Chmod(path, 0o644))
	rec := rollback.Record{Service: "demo", Phase: rollback.PhaseChanging,
		Packages: []rollback.Package{{Name: "demo", Before: []string{demoOld}}},
		Files:    []rollback.File{{Path: path, Existed: true, Mode: 0o644, UID: os.Getuid(), GID: os.Getgid()}}}
	require.NoError(t, g.store.Begin(rec, map[string][]byte{path: []byte("listen 80\n")}))
	g.txn.after = map[string][]string{"demo": {demoOld}}
	procs := &failingProcess{fail: []bool{true}}
	args := rbArgs(path, "listen 80\n", map[string]any{"unit": "demo", "restart_on": []any{"package:demo"}, "reload_on": []any{"config:site"}})
	out := ansible.Call(context.Background(), Spec(), args, false, false, Handler(rbDeps(g, demoMoves(g.rpm), procs)))

	require.Equal(t, true, out["failed"])
	assert.Contains(t, out["msg"], "the previous state is back and healthy")
	done := resultOf(out, "rolled_back")
	require.NotNil(t, done)
	assert.Equal(t, []any{}, done["files"], "the config did not move: not put back")
	assert.NotContains(t, stringsOf(out["plan"]), "rollback: restore "+path)
	require.Len(t, procs.calls, 2, "the change's process step, then the rollback's")
	restart, _ := procs.calls[1]["restart_on"].([]any)
	reload, _ := procs.calls[1]["reload_on"].([]any)
	assert.True(t, refChanged(restart), "the package moved back: restarted")
	assert.False(t, refChanged(reload), "the config did not move: no reload owed for it: %v", reload)
}

func toAny(s []string) []any {
	out := make([]any, len(s))
	for i, v := range s {
		out[i] = v
	}
	return out
}
