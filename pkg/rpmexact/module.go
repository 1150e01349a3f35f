package rpmexact

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/richt/services/pkg/ansible"
	"github.com/richt/services/pkg/contract"
	"github.com/richt/services/pkg/nevra"
	"github.com/richt/services/pkg/runner"
	"github.com/richt/services/pkg/timeout"
)

// SyncRecorder records that systemd's manager must be reloaded (package durable).
type SyncRecorder interface {
	MarkManagerSyncDue(ctx context.Context, reason string) (id string, err error)
	RemoveManagerSyncEntry(ctx context.Context, id string) error
}

// ManagerMemo remembers accepted manager checks by the executable's identity (package
// durable), so repeated transactions do not pay 0.25–0.4 s for `MANAGER --version` while
// the manager stays the same file.
type ManagerMemo interface {
	ManagerChecked(manager, identity string) (string, bool)
	RecordManagerCheck(manager, identity, version string) error
}

// QueryCache remembers rpm query answers while the files they depend on are unchanged
// (QueryMemo).
type QueryCache interface {
	Lookup(name string) (Installed, bool)
	Record(name string, inst Installed, db Database, queried time.Time) error
}

// Deps are the module's side effects. Memo and Identify are optional: without them every
// transaction checks the manager. Queries is optional: without it every run asks rpm.
// Txn runs the transactions (Detached in the module, Inline in tests).
type Deps struct {
	Runner   runner.Runner
	Txn      Transactor
	Memo     ManagerMemo
	Identify func(command string) (string, error)
	Queries  QueryCache
}

// Where the first observation of a run came from, as reported in the result's `observed`.
const (
	ObservedQuery = "rpm-query"
	ObservedMemo  = "memo"
)

// Result is the module's return value.
type Result struct {
	Changed   bool     `json:"changed"`
	Name      string   `json:"name"`
	Before    []string `json:"before"`
	After     []string `json:"after"`
	Operation string   `json:"operation"`
	Command   []string `json:"command"`
	// package_changed, unit_files_changed, daemon_reload, changed_at: what later tasks
	// read (package contract).
	contract.Change
	ManagerVersion string `json:"manager_version,omitempty"`
	Observed       string `json:"observed"`
	// TransactionLog is where the transaction's request, output and outcome are kept.
	TransactionLog string `json:"transaction_log,omitempty"`
	// EarlierTransaction is a transaction an earlier run stopped waiting for, reported
	// once by the next run after it ended.
	EarlierTransaction *Earlier      `json:"earlier_transaction,omitempty"`
	Stdout             string        `json:"stdout,omitempty"`
	Stderr             string        `json:"stderr,omitempty"`
	Diff               *ansible.Diff `json:"diff,omitempty"`
}

// Spec is rpm_exact's parameter contract.
func Spec() *ansible.Spec {
	return &ansible.Spec{
		Name: "rpm_exact",
		Params: []ansible.Param{
			{Name: "name", Kind: ansible.Str, Required: true, Help: "RPM package NAME"},
			{Name: "version", Kind: ansible.Str, Help: "exact EPOCH:VERSION-RELEASE.ARCH, e.g. 0:1.0-1.noarch"},
			{Name: "state", Kind: ansible.Str, Default: "present", Choices: []string{"present", "absent"}, Help: "present or absent"},
			{Name: "manager", Kind: ansible.Str, Default: "dnf", Choices: []string{"dnf", "yum"}, Help: "dnf, or yum where it is DNF 4's compatibility command"},
			{Name: "timeout", Kind: ansible.Duration, Default: "10m", Help: "deadline for the transaction and its verification"},
		},
		Check: func(v ansible.Values) error {
			if err := nevra.ValidateName(v.String("name")); err != nil {
				return fmt.Errorf("name: %w", err)
			}
			if v.IsSet("version") {
				if v.String("state") == "absent" {
					return fmt.Errorf("version: cannot be combined with state=absent (absent removes every version of %s)", v.String("name"))
				}
				if _, err := nevra.ParseEVRA(v.String("version")); err != nil {
					return fmt.Errorf("version: %w", err)
				}
			}
			return nil
		},
	}
}

func wantFrom(v ansible.Values) Want {
	w := Want{Name: v.String("name"), Absent: v.String("state") == "absent", Manager: v.String("manager")}
	if v.IsSet("version") {
		e, _ := nevra.ParseEVRA(v.String("version")) // validated by Spec.Check
		w.Version = &e
	}
	return w
}

// Handler returns rpm_exact's behaviour over the given side effects.
func Handler(d Deps) ansible.Handler {
	return func(ctx context.Context, req *ansible.Request) (any, error) {
		w := wantFrom(req.Params)
		ctx, cancel := timeout.Deadline(ctx, req.Params.Duration("timeout"))
		defer cancel()

		res := &Result{Name: w.Name, Operation: OpNone, Command: []string{}}
		// Wait for a transaction an earlier run left under way before looking: its
		// outcome is what this run must observe.
		release, earlier, err := d.Txn.Begin(ctx, req.CheckMode, w.Name)
		if err != nil {
			return res, err
		}
		defer release()
		res.EarlierTransaction = earlier
		obs, err := d.observe(ctx, w.Name)
		res.Observed = obs.source
		if err != nil {
			return res, err
		}
		before := obs.Installed
		res.Before, res.After = nonNil(before.NEVRAs), nonNil(before.NEVRAs)
		p := Decide(w, before)
		res.Operation = p.Operation
		if p.Operation == OpNone {
			if !req.CheckMode { // check mode writes nothing
				d.remember(w.Name, obs)
			}
			res.carry(earlier)
			return res, nil
		}
		res.Changed = true
		res.Command = p.Argv
		res.Diff = diffOf(w.Name, res.Before, p.Expect)

		// DNF 4 is checked before any transaction, and before check mode reports one; a
		// converged run never gets here and does not pay for it.
		if res.ManagerVersion, err = d.checkManager(ctx, w.Manager, !req.CheckMode); err != nil {
			res.Changed = false
			return res, err
		}
		if req.CheckMode {
			res.After = nonNil(p.Expect)
			res.PackageChanged = true // as the real run would report
			return res, nil
		}

		out, err := d.Txn.Run(ctx, Transaction{Argv: p.Argv, Name: w.Name, Before: before.NEVRAs, UnitFiles: before.UnitFiles,
			Reason: "rpm_exact " + w.Name + ": unit files changed"})
		run := out.Result
		res.Stdout, res.Stderr, res.TransactionLog = run.Stdout, run.Stderr, out.Log
		if errors.Is(err, ErrNotStarted) {
			res.Changed = false // DNF never ran
			return res, fmt.Errorf("%s: %w", strings.Join(p.Argv, " "), err)
		}
		if err != nil {
			// DNF may have acted: a change cannot be ruled out, nor a changed unit file (the
			// manager sync is recorded ahead of every transaction, and settled when it ends).
			res.PackageChanged = true
			res.DaemonReload = contract.ReloadNeeded
			if errors.Is(err, ErrStillRunning) {
				return res, fmt.Errorf("timeout %s: %w", req.Params.Duration("timeout"), err)
			}
			if timeout.Expired(err) {
				return res, fmt.Errorf("%s timed out after %s; DNF may have acted; check with rpm -q %s",
					strings.Join(p.Argv, " "), req.Params.Duration("timeout"), w.Name)
			}
			return res, fmt.Errorf("run %s: %w", strings.Join(p.Argv, " "), err)
		}
		// Verification always asks rpm (the transaction settles by reading the database
		// once DNF has ended), and a changed unit file is recorded for systemd's manager
		// even if this task fails below.
		returned := time.Now() // changed_at, when rpm shows a change
		after, oerr := out.After, out.AfterErr
		if oerr == nil {
			res.After = nonNil(after.NEVRAs)
			res.Diff = diffOf(w.Name, res.Before, res.After)
			res.Changed = !equal(res.Before, res.After)
		}
		res.UnitFilesChanged = out.UnitFilesChanged
		// Unverified, a change cannot be ruled out: package_changed follows changed.
		res.PackageChanged = res.Changed
		if res.UnitFilesChanged {
			res.DaemonReload = contract.ReloadNeeded // recorded by the transaction; rpm_exact never reloads
		}
		if res.Changed {
			res.Stamp(returned)
		}
		if run.ExitCode != 0 {
			return res, fmt.Errorf("%s failed (exit %d): %s", strings.Join(p.Argv, " "), run.ExitCode, lastLines(run.Output(), 8))
		}
		if oerr != nil {
			return res, fmt.Errorf("verify after %s: %w", p.Operation, oerr)
		}
		if err := Holds(w, after); err != nil {
			return res, fmt.Errorf("%s exited 0 but the RPM database does not show the requested state: %w", strings.Join(p.Argv, " "), err)
		}
		return res, nil
	}
}

// observation is a run's first look at the RPM database.
type observation struct {
	Installed
	source  string    // ObservedQuery or ObservedMemo
	db      Database  // where rpm read it, for a query
	queried time.Time // when the query began
}

// observe is the remembered answer while the RPM database and rpm's configuration are the
// same files, else one rpm query.
func (d Deps) observe(ctx context.Context, name string) (observation, error) {
	if d.Queries != nil {
		if inst, ok := d.Queries.Lookup(name); ok {
			return observation{Installed: inst, source: ObservedMemo}, nil
		}
	}
	o := observation{source: ObservedQuery, queried: time.Now()}
	var err error
	o.Installed, o.db, err = Observe(ctx, d.Runner, name)
	return o, err
}

// remember keeps a converged run's queried answer for the next run. Runs that act do not
// call it: their transaction changes the database, which would void the record at once.
func (d Deps) remember(name string, o observation) {
	if d.Queries == nil || o.source != ObservedQuery {
		return
	}
	// A memo is only a shortcut: when it cannot be written (not root, a database that just
	// changed, another backend) the next run asks rpm again.
	_ = d.Queries.Record(name, o.Installed, o.db, o.queried)
}

// checkManager is CheckManager, skipped when the same executable passed before. Only an
// accepted check is remembered, and check mode only reads the memo (it writes nothing).
func (d Deps) checkManager(ctx context.Context, manager string, remember bool) (string, error) {
	id := ""
	if d.Memo != nil && d.Identify != nil {
		if i, err := d.Identify(manager); err == nil {
			id = i
			if v, ok := d.Memo.ManagerChecked(manager, id); ok {
				return v, nil
			}
		}
	}
	v, err := CheckManager(ctx, d.Runner, manager)
	if err != nil || id == "" || !remember {
		return v, err
	}
	if err := d.Memo.RecordManagerCheck(manager, id, v); err != nil {
		return v, err
	}
	return v, nil
}

func diffOf(name string, before, after []string) *ansible.Diff {
	return &ansible.Diff{
		Before: lines(before), After: lines(after),
		BeforeHeader: "rpm " + name + " (before)", AfterHeader: "rpm " + name + " (after)",
	}
}

func lines(l []string) string {
	if len(l) == 0 {
		return ""
	}
	return strings.Join(l, "\n") + "\n"
}

func nonNil(l []string) []string {
	if l == nil {
		return []string{}
	}
	return l
}

func equal(a, b []string) bool { return strings.Join(a, "\n") == strings.Join(b, "\n") }

func lastLines(s string, n int) string {
	l := strings.Split(strings.TrimSpace(s), "\n")
	if len(l) > n {
		l = l[len(l)-n:]
	}
	return strings.Join(l, "\n")
}

// carry reports the change of an earlier transaction of this package whose own run
// failed before it could (its deadline passed, it was killed): the task is changed, so a
// restart_on wired to it still fires once, and only in the run that reports it.
func (r *Result) carry(e *Earlier) {
	if e == nil || !e.packageChanged {
		return
	}
	r.Changed, r.PackageChanged = true, true
	if e.unitFilesChanged {
		r.UnitFilesChanged, r.DaemonReload = true, contract.ReloadNeeded
	}
	r.Stamp(e.ended)
}
