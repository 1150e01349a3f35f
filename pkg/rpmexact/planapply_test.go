package rpmexact

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/richt/services/pkg/ansible"
	"github.com/richt/services/pkg/runner/runnertest"
)

// planTxn is a Transactor that carries out the transactions its plan names, in the plan's
// order, and fails the test on any other: Apply may do nothing the plan does not name.
type planTxn struct {
	t    *testing.T
	plan [][]string
	ran  [][]string
	// unitFiles is what the snapshots around each transaction see in the unit directories.
	unitFiles bool
	// after is each requested name's builds once a transaction ended.
	after map[string][]string
}

func (f *planTxn) Begin(context.Context, bool, []string) (func(), *Earlier, error) {
	return func() {}, nil, nil
}

func (f *planTxn) Run(_ context.Context, tx Transaction) (Outcome, error) {
	i := len(f.ran)
	f.ran = append(f.ran, tx.Argv)
	if i >= len(f.plan) || !slices.Equal(f.plan[i], tx.Argv) {
		f.t.Errorf("transaction %q is not the plan's next step (plan: %q)", tx.Argv, f.plan)
	}
	out := Outcome{After: map[string][]string{}, UnitFilesChanged: f.unitFiles}
	for _, n := range tx.Names {
		out.After[n] = nonNil(f.after[n])
		out.Moves = append(out.Moves, Move{Name: n, After: f.after[n], Requested: true})
	}
	return out, nil
}

// planRows are the plan table: every way an entry stands against the installed builds,
// with what the installed builds own in the unit directories, and the plan each gets.
var planRows = []struct {
	name string
	args map[string]any
	// query answers the one rpm query; owned the file query of the replaced builds (nil:
	// not asked, because no installed build is replaced or removed).
	query runnertest.Call
	owned *runnertest.Call
	// after is what the RPM database shows once the transactions ended.
	after map[string][]string
	plan  []string
	// unitFiles: the plan says the transactions change unit files.
	unitFiles bool
}{
	{
		name:  "pin already installed: converged, one query",
		args:  map[string]any{"name": "demo", "version": "0:1.0-1.noarch"},
		query: runnertest.Call{Argv: rpmQ("demo"), Stdout: v1Out},
		plan:  []string{},
	},
	{
		name:  "pin moves a build that ships a unit file: the reload it leaves due is planned",
		args:  map[string]any{"name": "demo", "version": "0:2.0-1.noarch"},
		query: runnertest.Call{Argv: rpmQ("demo"), Stdout: v1Out},
		owned: ptr(owns([]string{"demo"}, "/usr/bin/demo", "/usr/lib/systemd/system/demo.service")),
		after: map[string][]string{"demo": {"demo-0:2.0-1.noarch"}},
		plan:  []string{"install-nevra demo-0:2.0-1.noarch", StepRecordReload}, unitFiles: true,
	},
	{
		name:  "pin moves a build without unit files: no reload",
		args:  map[string]any{"name": "demo", "version": "0:2.0-1.noarch"},
		query: runnertest.Call{Argv: rpmQ("demo"), Stdout: v1Out},
		owned: ptr(owns([]string{"demo"}, "/usr/bin/demo", "/usr/lib/systemd/system-preset/90-demo.preset")),
		after: map[string][]string{"demo": {"demo-0:2.0-1.noarch"}},
		plan:  []string{"install-nevra demo-0:2.0-1.noarch"},
	},
	{
		name:  "install of an absent package: its files are not known before DNF (the rule's limit)",
		args:  map[string]any{"name": "demo"},
		query: runnertest.Call{Argv: rpmQ("demo"), ExitCode: 1, Stdout: absent},
		after: map[string][]string{"demo": {"demo-0:2.0-1.noarch"}},
		plan:  []string{"install-n demo"},
	},
	{
		name:  "pin of an absent package",
		args:  map[string]any{"name": "demo", "version": "0:2.0-1.noarch"},
		query: runnertest.Call{Argv: rpmQ("demo"), ExitCode: 1, Stdout: absent},
		after: map[string][]string{"demo": {"demo-0:2.0-1.noarch"}},
		plan:  []string{"install-nevra demo-0:2.0-1.noarch"},
	},
	{
		name:  "removal of a build that ships a drop-in",
		args:  map[string]any{"name": "demo", "state": "absent"},
		query: runnertest.Call{Argv: rpmQ("demo"), Stdout: v1Out},
		owned: ptr(owns([]string{"demo"}, "/usr/lib/systemd/system/demo.service.d", "/usr/lib/systemd/system/demo.service.d/10-demo.conf")),
		after: map[string][]string{"demo": {}},
		plan:  []string{"remove demo", StepRecordReload}, unitFiles: true,
	},
	{
		name:  "removal: a file deeper than the snapshots look is no unit file",
		args:  map[string]any{"name": "demo", "state": "absent"},
		query: runnertest.Call{Argv: rpmQ("demo"), Stdout: v1Out},
		owned: ptr(owns([]string{"demo"}, "/usr/lib/systemd/system/demo.d/deep/x.conf", "/etc/systemd/demo.conf")),
		after: map[string][]string{"demo": {}},
		plan:  []string{"remove demo"},
	},
	{
		name:  "the owned files cannot be listed: a unit-file change is not ruled out",
		args:  map[string]any{"name": "demo", "state": "absent"},
		query: runnertest.Call{Argv: rpmQ("demo"), Stdout: v1Out},
		owned: ptr(runnertest.Call{Argv: ownedArgv("demo"), ExitCode: 1, Stderr: "error: rpmdb: damaged header\n"}),
		after: map[string][]string{"demo": {}},
		plan:  []string{"remove demo", StepRecordReload}, unitFiles: true,
	},
	{
		name:  "absent and absent: converged",
		args:  map[string]any{"name": "demo", "state": "absent"},
		query: runnertest.Call{Argv: rpmQ("demo"), ExitCode: 1, Stdout: absent},
		plan:  []string{},
	},
	{
		name: "a set: one install, then the removal, the reload planned once",
		args: map[string]any{"packages": []any{
			map[string]any{"name": "app", "version": "0:2.0-1.noarch"},
			map[string]any{"name": "new"},
			map[string]any{"name": "old", "state": "absent"},
		}},
		query: runnertest.Call{Argv: queryArgv("app", "new", "old"), ExitCode: 1,
			Stdout: dbOut + "@@app\t0:1.0-1.noarch\npackage new is not installed\n@@old\t0:1.0-1.noarch\n"},
		owned: ptr(owns([]string{"app", "old"}, "/usr/lib/systemd/system/app.service")),
		after: map[string][]string{"app": {"app-0:2.0-1.noarch"}, "new": {"new-0:1.0-1.noarch"}, "old": {}},
		plan:  []string{"install app-0:2.0-1.noarch new", "remove old", StepRecordReload}, unitFiles: true,
	},
}

func ptr[T any](v T) *T { return &v }

var dnf4 = runnertest.Call{Argv: []string{"dnf", "--version"}, Stdout: "4.23.0\n"}

// For every row of the plan table, check mode reports the plan the real run then carries
// out, with the same package contract (unit_files_changed, daemon_reload), and the real
// run starts exactly the plan's transactions: the runner sees only the plan's reads, the
// transactor only the plan's transactions.
func TestCheckModePlanIsTheAppliedPlan(t *testing.T) {
	for _, row := range planRows {
		t.Run(row.name, func(t *testing.T) {
			reads := []runnertest.Call{row.query}
			if row.owned != nil {
				reads = append(reads, *row.owned)
			}
			changes := len(row.plan) > 0
			if changes {
				reads = append(reads, dnf4)
			}
			run := func(check bool, calls []runnertest.Call, txn *planTxn) map[string]any {
				args := map[string]any{"_ansible_check_mode": check}
				for k, v := range row.args {
					args[k] = v
				}
				data, _ := json.Marshal(args)
				h := Handler(Deps{Runner: runnertest.New(t, calls...), Txn: txn})
				var res map[string]any
				require.NoError(t, json.Unmarshal(ansible.Execute(context.Background(), Spec(), []string{"-"}, bytesReader(data), h), &res))
				require.Nil(t, res["failed"], res["msg"])
				return res
			}
			noTxn := &planTxn{t: t}
			// Check mode asks DNF what it would move; here DNF cannot be asked, which leaves
			// the prediction to the RPM database.
			checkReads := reads
			if changes {
				checkReads = append(slices.Clone(reads), runnertest.Call{Argv: assumenoArgv(row.plan[0]), Err: errors.New("no repositories here")})
			}
			check := run(true, checkReads, noTxn)
			assert.Empty(t, noTxn.ran, "check mode starts no transaction")

			plan := planOf(t, row.args, row.query, row.owned, len(row.plan) > 0)
			txn := &planTxn{t: t, plan: plan.Commands(), unitFiles: row.unitFiles, after: row.after}
			real := run(false, reads, txn)

			assert.Equal(t, toAny(row.plan), check["plan"], "check mode's plan")
			assert.Equal(t, check["plan"], real["plan"], "the applied plan is check mode's")
			assert.Equal(t, plan.Commands(), txn.ran, "exactly the plan's transactions, in order")
			assert.Equal(t, changes, check["changed"])
			assert.Equal(t, check["changed"], real["changed"])
			assert.Equal(t, check["package_changed"], real["package_changed"])
			assert.Equal(t, row.unitFiles, check["unit_files_changed"], "check mode predicts the unit-file change")
			assert.Equal(t, check["unit_files_changed"], real["unit_files_changed"])
			assert.Equal(t, check["daemon_reload"], real["daemon_reload"])
		})
	}
}

// Apply, called with a plan in hand (as the service module will), carries out exactly its
// transactions and reads nothing of its own: the runner it is given has no calls left.
func TestApplyCarriesOutThePlanOnly(t *testing.T) {
	for _, row := range planRows {
		t.Run(row.name, func(t *testing.T) {
			plan := planOf(t, row.args, row.query, row.owned, len(row.plan) > 0)
			again := planOf(t, row.args, row.query, row.owned, len(row.plan) > 0)
			again.observed.queried = plan.observed.queried // the clock moved on
			assert.Equal(t, plan, again, "the same reads give the same plan")
			assert.Equal(t, row.plan, plan.Names())
			txn := &planTxn{t: t, plan: plan.Commands(), unitFiles: row.unitFiles, after: row.after}
			applied, err := Deps{Runner: runnertest.New(t), Txn: txn}.Apply(context.Background(), plan)
			require.NoError(t, err)
			assert.Equal(t, plan.Commands(), txn.ran)
			assert.Equal(t, plan.Commands(), applied.Commands)
			assert.Equal(t, plan.Changes(), applied.Changed)
			assert.Equal(t, row.unitFiles, applied.UnitFilesChanged)
		})
	}
}

// planOf is Deps.Plan for a row's arguments over its scripted reads (the manager check
// when the row changes anything).
func planOf(t *testing.T, args map[string]any, query runnertest.Call, owned *runnertest.Call, changes bool) Plan {
	t.Helper()
	_, parsed, err := Spec().ValidateParse(args)
	require.NoError(t, err)
	calls := []runnertest.Call{query}
	if owned != nil {
		calls = append(calls, *owned)
	}
	if changes {
		calls = append(calls, dnf4)
	}
	p, err := Deps{Runner: runnertest.New(t, calls...)}.Plan(context.Background(), parsed.(Task).Want)
	require.NoError(t, err)
	return p
}

// assumenoArgv is check mode's question to DNF for a plan entry "OP SPEC...".
func assumenoArgv(entry string) []string {
	f := strings.Fields(entry)
	return append([]string{"dnf", "--assumeno", f[0], "--"}, f[1:]...)
}

func toAny(l []string) []any {
	out := make([]any, len(l))
	for i, s := range l {
		out[i] = s
	}
	return out
}

// lockTxn is planTxn that says whether the transaction lock is held: taken by Begin,
// given back by the release it returns.
type lockTxn struct {
	planTxn
	held, begun, released int
	heldAtRun             []bool
}

func (f *lockTxn) Begin(context.Context, bool, []string) (func(), *Earlier, error) {
	f.held++
	f.begun++
	return func() { f.held--; f.released++ }, nil, nil
}

func (f *lockTxn) Run(ctx context.Context, tx Transaction) (Outcome, error) {
	f.heldAtRun = append(f.heldAtRun, f.held == 1)
	return f.planTxn.Run(ctx, tx)
}

// A plan held across other work (as the service module holds the packages step's) keeps
// the transaction lock from before its reads to the end of its transactions, and Finish
// carries it out without reading again: every read is scripted for Hold, none is left for
// Finish. Release after Finish gives nothing back twice.
func TestHeldPlanKeepsTheLockUntilFinish(t *testing.T) {
	for _, row := range planRows {
		t.Run(row.name, func(t *testing.T) {
			_, parsed, err := Spec().ValidateParse(row.args)
			require.NoError(t, err)
			task := parsed.(Task)
			reads := []runnertest.Call{row.query}
			if row.owned != nil {
				reads = append(reads, *row.owned)
			}
			if len(row.plan) > 0 {
				reads = append(reads, dnf4)
			}
			script := runnertest.New(t, reads...)
			plan := planOf(t, row.args, row.query, row.owned, len(row.plan) > 0)
			txn := &lockTxn{planTxn: planTxn{t: t, plan: plan.Commands(), unitFiles: row.unitFiles, after: row.after}}
			h := Deps{Runner: script, Txn: txn}.Hold(context.Background(), task, false)
			require.NoError(t, h.Err())
			assert.Equal(t, row.plan, h.Plan().Names())
			assert.Equal(t, 1, txn.held, "the lock is held while the plan is in hand")
			_, err = h.Finish(context.Background())
			require.NoError(t, err)
			h.Release()
			assert.Equal(t, plan.Commands(), txn.ran, "exactly the held plan's transactions")
			for _, held := range txn.heldAtRun {
				assert.True(t, held, "every transaction runs under the lock the plan was made under")
			}
			assert.Equal(t, []int{1, 1, 0}, []int{txn.begun, txn.released, txn.held})
		})
	}
}
