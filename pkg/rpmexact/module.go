package rpmexact

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/richt/services/pkg/ansible"
	"github.com/richt/services/pkg/contract"
	"github.com/richt/services/pkg/dnfsummary"
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
	// Files, when set, lets the manager check read DNF 4's version from its files before
	// it asks `dnf --version` (QuickManagerVersion).
	Files *ManagerFiles
}

// Where the first observation of a run came from, as reported in the result's `observed`.
const (
	ObservedQuery = "rpm-query"
	ObservedMemo  = "memo"
)

// Report is what every result carries, for one package or a set.
type Report struct {
	Changed bool `json:"changed"`
	// package_changed, unit_files_changed, daemon_reload, changed_at, files_placed: what
	// later tasks read (package contract).
	contract.Change
	// Moved is every package the transactions installed, upgraded, downgraded or
	// removed, asked for or not (DNF's solver moves dependents of a pin too).
	Moved          []Move `json:"moved"`
	ManagerVersion string `json:"manager_version,omitempty"`
	Observed       string `json:"observed"`
	// TransactionLog is where the transaction's request, output and outcome are kept
	// (the last transaction's, for a set that also removed).
	TransactionLog string `json:"transaction_log,omitempty"`
	// TransactionScope is the transient systemd scope the transaction ran in (so that
	// stopping the caller does not stop DNF), or why it had none.
	TransactionScope string `json:"transaction_scope,omitempty"`
	// EarlierTransaction is a transaction an earlier run stopped waiting for, reported
	// once by the next run after it ended.
	EarlierTransaction *Earlier      `json:"earlier_transaction,omitempty"`
	Stdout             string        `json:"stdout,omitempty"`
	Stderr             string        `json:"stderr,omitempty"`
	Diff               *ansible.Diff `json:"diff,omitempty"`
	// WouldMove is check mode's list of what DNF would move, asked for or not, when DNF
	// could tell without changing anything; CheckNote says what the prediction rests on.
	WouldMove *[]WouldMove `json:"would_move,omitempty"`
	CheckNote string       `json:"check_mode_note,omitempty"`
}

// Result is the module's return value for one package (`name`).
type Result struct {
	Report
	Name      string   `json:"name"`
	Before    []string `json:"before"`
	After     []string `json:"after"`
	Operation string   `json:"operation"`
	Command   []string `json:"command"`
}

// SetResult is the module's return value for a set (`packages`).
type SetResult struct {
	Report
	Packages []EntryResult `json:"packages"`
	Commands [][]string    `json:"commands"`
}

// EntryResult is one entry of a set.
type EntryResult struct {
	Name      string   `json:"name"`
	Before    []string `json:"before"`
	After     []string `json:"after"`
	Operation string   `json:"operation"`
}

// Params are rpm_exact's parameters, decoded as Spec declares them.
type Params struct {
	Name     *string       `ansible:"name"`
	Version  *string       `ansible:"version"`
	State    string        `ansible:"state"`
	Packages []Package     `ansible:"packages"` // nil when omitted
	Manager  string        `ansible:"manager"`
	Timeout  time.Duration `ansible:"timeout"`
}

// Package is one item of `packages`.
type Package struct {
	Name    string  `ansible:"name"`
	Version *string `ansible:"version"`
	State   string  `ansible:"state"`
}

// moduleName is the module's name: its Spec's, and the supervisor's argv[0].
const moduleName = "rpm_exact"

// Spec is rpm_exact's parameter contract.
func Spec() *ansible.Spec {
	s := &ansible.Spec{
		Name: moduleName,
		Params: []ansible.Param{
			{
				Name: "name", Kind: ansible.Str,
				Description: []string{
					`The RPM package NAME. Letters, digits and C(. _ + -); it must not start with C(-) or
					C(.). Globs, paths and shell characters are refused.`,
					`One of I(name) and I(packages) is required.`,
				},
			},
			{
				Name: "version", Kind: ansible.Str,
				Description: []string{
					`Exact C(EPOCH:VERSION-RELEASE.ARCH), the epoch always written (C(0:) for none), for
					example C(0:1.0-1.noarch).`,
					`Omitted means any installed version is fine.`,
					`Cannot be combined with C(state=absent), which removes every installed version.`,
					`Goes with I(name); not with I(packages).`,
				},
			},
			{
				Name: "state", Kind: ansible.Str, Default: "present", Choices: []string{"present", "absent"},
				Description: []string{
					`Whether the package should be installed or removed.`,
					`Goes with I(name); not with I(packages).`,
				},
			},
			{
				Name: "packages", Kind: ansible.List, Elements: ansible.Dict, VersionAdded: "0.2.0",
				Description: []string{
					`A set of packages moved together, each a mapping with I(name) and optionally
					I(version) and I(state), which mean what the options of the same names mean for one
					package. See the description for how the set is carried out.`,
					`Mutually exclusive with I(name), I(version) and I(state); one of I(name) and
					I(packages) is required.`,
					`Refused when empty, when a name appears twice, and when an entry has a key other
					than C(name), C(version) and C(state) or a value that is not a string.`,
					`I(manager) and I(timeout) apply to the whole set.`,
				},
				Suboptions: []ansible.Param{
					{
						Name: "name", Kind: ansible.Str, Required: true,
						Description: []string{
							`The RPM package NAME, as for I(name).`,
						},
					},
					{
						Name: "version", Kind: ansible.Str,
						Description: []string{
							`Exact C(EPOCH:VERSION-RELEASE.ARCH), as for I(version); omitted means any
							version. Cannot be combined with C(state=absent).`,
						},
					},
					{
						Name: "state", Kind: ansible.Str, Default: "present", Choices: []string{"present", "absent"},
						Description: []string{
							`Whether this package should be installed or removed.`,
						},
					},
				},
			},
			{
				Name: "manager", Kind: ansible.Str, Default: "dnf", Choices: []string{"dnf", "yum"},
				Description: []string{
					`The DNF 4 command to run. C(yum) is accepted where it is DNF 4's compatibility
					command.`,
				},
			},
			{
				Name: "timeout", Kind: ansible.Duration, Default: "10m",
				Description: []string{
					`How long the module waits, as a positive Go duration (C(30s), C(1m30s), C(10m)). One
					deadline covers waiting for an earlier transaction still under way, the DNF version
					check, in check mode DNF's C(--assumeno) answers, and waiting for this task's
					transactions to end and be checked.`,
					`It ends the module's wait, never a DNF transaction. When it passes while DNF is
					running, the task fails with C(changed=true) and C(package_changed=true) and names
					the transaction's record directory (I(transaction_log)); DNF is not stopped and
					finishes on its own, and a removal that was to follow it is not started. The next
					run of this module on the host waits for it and reports its outcome as
					I(earlier_transaction).`,
				},
			},
		},
		MutuallyExclusive: [][]string{{"name", "packages"}, {"version", "packages"}, {"state", "packages"}},
	}
	s.Check = func(v ansible.Values) error {
		var p Params
		err := s.Decode(v, &p)
		_, err = entriesFrom(p, err)
		return err
	}
	return s
}

// entriesFrom reads `name`/`version`/`state` or `packages` into entries, validating each.
// decodeErr is what decoding the parameters reported: a malformed item of `packages` is
// reported after the items before it were checked, so the first problem in the list is
// the one reported.
func entriesFrom(p Params, decodeErr error) ([]Entry, error) {
	var bad *ansible.ItemError
	if decodeErr != nil && !errors.As(decodeErr, &bad) {
		return nil, decodeErr
	}
	if p.Packages == nil {
		if p.Name == nil {
			return nil, errors.New("one of the following is required: name, packages")
		}
		e, err := entry(*p.Name, p.Version, p.State)
		if err != nil {
			return nil, err
		}
		return []Entry{e}, nil
	}
	if len(p.Packages) == 0 && bad == nil {
		return nil, errors.New("packages: is empty; list at least one {name, version, state}")
	}
	var out []Entry
	seen := map[string]int{}
	for i, pkg := range p.Packages {
		ref := fmt.Sprintf("packages[%d]", i)
		e, err := entry(pkg.Name, pkg.Version, pkg.State)
		if err != nil {
			return nil, fmt.Errorf("%s.%w", ref, err)
		}
		if j, dup := seen[e.Name]; dup {
			return nil, fmt.Errorf("%s.name: %s is already packages[%d]; name each package once", ref, e.Name, j)
		}
		seen[e.Name] = i
		out = append(out, e)
	}
	if bad != nil {
		return nil, bad
	}
	return out, nil
}

// entry validates one package's request; its errors start with the parameter's name.
func entry(name string, version *string, state string) (Entry, error) {
	if err := nevra.ValidateName(name); err != nil {
		return Entry{}, fmt.Errorf("name: %w", err)
	}
	e := Entry{Name: name, Absent: state == "absent"}
	if version == nil {
		return e, nil
	}
	if e.Absent {
		return Entry{}, fmt.Errorf("version: cannot be combined with state=absent (absent removes every version of %s)", name)
	}
	evra, err := nevra.ParseEVRA(*version)
	if err != nil {
		return Entry{}, fmt.Errorf("version: %w", err)
	}
	e.Version = &evra
	return e, nil
}

func wantFrom(p Params) Want {
	entries, _ := entriesFrom(p, nil) // validated by Spec.Check
	return Want{Entries: entries, Manager: p.Manager}
}

// Handler returns rpm_exact's behaviour over the given side effects.
func Handler(d Deps) ansible.Handler {
	return func(ctx context.Context, req *ansible.Request) (any, error) {
		var p Params
		if err := req.Decode(&p); err != nil {
			return nil, err
		}
		ctx, cancel := timeout.Deadline(ctx, p.Timeout)
		defer cancel()
		r := &run{Deps: d, req: req, limit: p.Timeout, want: wantFrom(p), res: &Report{Moved: []Move{}}}
		err := r.run(ctx)
		if p.Packages != nil {
			return r.setResult(), err
		}
		return r.singleResult(), err
	}
}

// run is one module run: the request, what it observed and decided, and its outcome.
type run struct {
	Deps
	req   *ansible.Request
	limit time.Duration // the timeout parameter
	want  Want
	res   *Report
	plan  Plan
	// before and after per requested name; after is the prediction until a transaction
	// settled.
	before, after map[string][]string
	// commands are the transactions started (or, in check mode, that would be).
	commands [][]string
}

func (r *run) run(ctx context.Context) error {
	names := r.want.Names()
	// Wait for a transaction an earlier run left under way before looking: its outcome
	// is what this run must observe.
	release, earlier, err := r.Txn.Begin(ctx, r.req.CheckMode, names)
	if err != nil {
		return err
	}
	defer release()
	// Reported when this run returns its result, failed or not, and while it still holds
	// the lock: a run killed before that leaves the report to the next one.
	if !r.req.CheckMode {
		defer MarkReported(earlier)
	}
	r.res.EarlierTransaction = earlier
	obs, err := r.observe(ctx, names)
	r.res.Observed = obs.source
	if err != nil {
		return err
	}
	r.before, r.after = map[string][]string{}, map[string][]string{}
	for _, n := range names {
		r.before[n] = nonNil(obs.have[n].NEVRAs)
		r.after[n] = r.before[n]
	}
	if r.plan, err = Decide(r.want, obs.have); err != nil {
		return err
	}
	if !r.plan.Changes() {
		if !r.req.CheckMode { // check mode writes nothing
			r.remember(obs)
		}
		r.carry(earlier)
		return nil
	}
	r.res.Changed = true
	r.commands = r.plan.Commands()
	for _, ep := range r.plan.Entries {
		r.after[ep.Name] = ep.Expect
	}
	r.res.Diff = r.diff(nil)

	// DNF 4 is checked before any transaction, and before check mode reports one; a
	// converged run never gets here and does not pay for it.
	if r.res.ManagerVersion, err = r.checkManager(ctx, r.want.Manager, !r.req.CheckMode); err != nil {
		r.res.Changed = false
		return err
	}
	if r.req.CheckMode {
		r.res.PackageChanged = true // as the real run would report
		return r.predict(ctx)
	}
	for i, argv := range r.commands {
		if err := r.transact(ctx, argv); err != nil {
			r.commands = r.commands[:i+1]
			return err
		}
	}
	for _, e := range r.want.Entries {
		if err := Holds(e, r.after[e.Name]); err != nil {
			return fmt.Errorf("%s exited 0 but the RPM database does not show the requested state: %w", strings.Join(r.commands[len(r.commands)-1], " "), err)
		}
	}
	return nil
}

// transact runs one transaction and folds its outcome into the result. Removals run only
// after the install transaction succeeded: an error here ends the run.
func (r *run) transact(ctx context.Context, argv []string) error {
	out, err := r.Txn.Run(ctx, Transaction{Argv: argv, Names: r.want.Names(),
		Reason: "rpm_exact " + strings.Join(r.want.Names(), ", ") + ": unit files changed"})
	r.res.Stdout, r.res.Stderr = out.Stdout, out.Stderr
	if out.Log != "" {
		r.res.TransactionLog = out.Log
	}
	if out.Scope != "" {
		r.res.TransactionScope = out.Scope
	}
	limit := r.limit
	if errors.Is(err, ErrNotStarted) {
		r.res.Changed = r.res.PackageChanged // DNF never ran; an earlier transaction of this run may have
		return fmt.Errorf("%s: %w", strings.Join(argv, " "), err)
	}
	if err != nil {
		// DNF may have acted: a change cannot be ruled out, nor a changed unit file (the
		// manager sync is recorded ahead of every transaction, and settled when it ends).
		r.res.PackageChanged = true
		r.res.DaemonReload = contract.ReloadNeeded
		if errors.Is(err, ErrStillRunning) {
			return fmt.Errorf("timeout %s: %w", limit, err)
		}
		if timeout.Expired(err) {
			return fmt.Errorf("%s timed out after %s; DNF may have acted; check with rpm -q %s",
				strings.Join(argv, " "), limit, strings.Join(r.want.Names(), " "))
		}
		return fmt.Errorf("run %s: %w", strings.Join(argv, " "), err)
	}
	// The transaction settled by reading the database once DNF had ended, and recorded a
	// changed unit file for systemd's manager, also if this task fails below.
	returned := time.Now() // changed_at, when something moved
	if out.AfterErr == nil {
		for n, nevras := range out.After {
			r.after[n] = nevras
		}
		r.res.Moved = mergeMoves(r.res.Moved, out.Moves)
		r.res.Diff = r.diff(r.res.Moved)
	}
	r.res.UnitFilesChanged = r.res.UnitFilesChanged || out.UnitFilesChanged
	if r.res.UnitFilesChanged || out.AfterErr != nil {
		// Recorded by the transaction (also when a change could not be ruled out);
		// rpm_exact never reloads.
		r.res.DaemonReload = contract.ReloadNeeded
	}
	// Unverified, a change cannot be ruled out.
	moved := len(r.res.Moved) > 0 || out.AfterErr != nil
	r.res.Changed, r.res.PackageChanged = moved, moved
	if moved {
		r.res.Stamp(returned)
		r.res.Placed(out.FilesPlaced)
	}
	if out.ExitCode != 0 {
		return fmt.Errorf("%s failed (exit %d): %s", strings.Join(argv, " "), out.ExitCode, lastLines(out.Output(), 8))
	}
	if out.AfterErr != nil {
		return fmt.Errorf("verify after %s: %w", strings.Join(argv, " "), out.AfterErr)
	}
	return nil
}

// mergeMoves adds a later transaction's moves: a package moved twice keeps its first
// before and its last after.
func mergeMoves(all, later []Move) []Move {
	for _, m := range later {
		i := slices.IndexFunc(all, func(x Move) bool { return x.Name == m.Name })
		if i < 0 {
			all = append(all, m)
			continue
		}
		all[i].After = m.After
	}
	sort.Slice(all, func(i, j int) bool { return all[i].Name < all[j].Name })
	return all
}

// predict is check mode's answer to what DNF would move beyond the request: DNF's own
// transaction summary (--assumeno resolves against the repositories and stops before
// anything changes). A transaction DNF says cannot run fails the check as it would fail
// the run; a summary that cannot be read leaves the prediction to the RPM database, and the
// note says so. A removal after an install is resolved against today's state.
func (r *run) predict(ctx context.Context) error {
	would := []WouldMove{}
	for _, argv := range r.commands {
		ask := append([]string{argv[0], "--assumeno"}, argv[2:]...) // argv[1] is -y
		res, err := r.Runner.Run(ctx, ask...)
		if err != nil {
			r.res.CheckNote = fmt.Sprintf("predicted from the RPM database only: asking DNF what it would move failed (%v)", err)
			return nil
		}
		moves, err := dnfsummary.Parse(res.Stdout)
		if errors.Is(err, dnfsummary.ErrNoSummary) && res.ExitCode != 0 {
			r.res.Changed, r.res.PackageChanged = false, false
			return fmt.Errorf("check mode: DNF says %s cannot run (exit %d): %s", strings.Join(argv, " "), res.ExitCode, lastLines(res.Output(), 8))
		}
		if err != nil {
			r.res.CheckNote = fmt.Sprintf("predicted from the RPM database only: DNF's transaction summary could not be read (%v)", err)
			return nil
		}
		for _, m := range moves {
			would = append(would, WouldMove{Name: m.Name, Action: string(m.Action), Version: m.EVR + "." + m.Arch,
				Repo: m.Repo, Requested: slices.Contains(r.want.Names(), m.Name)})
		}
	}
	r.res.WouldMove = &would
	r.res.CheckNote = "would_move is DNF's transaction summary (" + r.want.Manager + " --assumeno): every package the transaction would move, asked for or not; nothing was changed"
	return nil
}

// WouldMove is one package check mode expects DNF to move.
type WouldMove struct {
	Name string `json:"name"`
	// Action is install, upgrade, downgrade, remove, reinstall or obsolete (replaced by
	// another package).
	Action string `json:"action"`
	// Version is [EPOCH:]VERSION-RELEASE.ARCH as DNF prints it (epoch only when not 0):
	// the build installed, or removed.
	Version   string `json:"version"`
	Repo      string `json:"repo,omitempty"`
	Requested bool   `json:"requested"`
}

// diff lists the requested packages and every other package that moved.
func (r *run) diff(moved []Move) *ansible.Diff {
	var before, after []string
	for _, n := range r.want.Names() {
		before = append(before, r.before[n]...)
		after = append(after, r.after[n]...)
	}
	for _, m := range moved {
		if !m.Requested {
			before = append(before, m.Before...)
			after = append(after, m.After...)
		}
	}
	what := strings.Join(r.want.Names(), ", ")
	return &ansible.Diff{Before: lines(before), After: lines(after),
		BeforeHeader: "rpm " + what + " (before)", AfterHeader: "rpm " + what + " (after)"}
}

// singleResult is the result of a `name` task.
func (r *run) singleResult() *Result {
	res := &Result{Report: *r.res, Operation: OpNone, Command: []string{}}
	if len(r.want.Entries) == 0 {
		return res
	}
	res.Name = r.want.Entries[0].Name
	res.Before, res.After = nonNil(r.before[res.Name]), nonNil(r.after[res.Name])
	if len(r.plan.Entries) > 0 {
		res.Operation = r.plan.Entries[0].Operation
	}
	if len(r.commands) > 0 {
		res.Command = r.commands[0]
	}
	return res
}

// setResult is the result of a `packages` task.
func (r *run) setResult() *SetResult {
	res := &SetResult{Report: *r.res, Packages: []EntryResult{}, Commands: nonNilCmds(r.commands)}
	for i, e := range r.want.Entries {
		er := EntryResult{Name: e.Name, Before: nonNil(r.before[e.Name]), After: nonNil(r.after[e.Name]), Operation: OpNone}
		if i < len(r.plan.Entries) {
			er.Operation = r.plan.Entries[i].Operation
		}
		res.Packages = append(res.Packages, er)
	}
	return res
}

func nonNilCmds(c [][]string) [][]string {
	if c == nil {
		return [][]string{}
	}
	return c
}

// observation is a run's first look at the RPM database, for every requested name.
type observation struct {
	have    map[string]Installed
	source  string    // ObservedQuery or ObservedMemo
	db      Database  // where rpm read it, for a query
	queried time.Time // when the query began
}

// observe is the remembered answers while the RPM database and rpm's configuration are
// the same files, else one rpm query for all names.
func (d Deps) observe(ctx context.Context, names []string) (observation, error) {
	if d.Queries != nil {
		have := make(map[string]Installed, len(names))
		for _, n := range names {
			inst, ok := d.Queries.Lookup(n)
			if !ok {
				break
			}
			have[n] = inst
		}
		if len(have) == len(names) {
			return observation{have: have, source: ObservedMemo}, nil
		}
	}
	o := observation{source: ObservedQuery, queried: time.Now()}
	var err error
	o.have, o.db, err = ObserveAll(ctx, d.Runner, names)
	return o, err
}

// remember keeps a converged run's queried answers for the next run. Runs that act do not
// call it: their transaction changes the database, which would void the records at once.
func (d Deps) remember(o observation) {
	if d.Queries == nil || o.source != ObservedQuery {
		return
	}
	// A memo is only a shortcut: when it cannot be written (not root, a database that just
	// changed, another backend) the next run asks rpm again.
	for n, inst := range o.have {
		_ = d.Queries.Record(n, inst, o.db, o.queried)
	}
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
	v, ok := "", false
	if d.Files != nil {
		v, ok = QuickManagerVersion(ctx, d.Runner, *d.Files, manager)
	}
	var err error
	if !ok {
		v, err = CheckManager(ctx, d.Runner, manager)
	}
	if err != nil || id == "" || !remember {
		return v, err
	}
	if err := d.Memo.RecordManagerCheck(manager, id, v); err != nil {
		return v, err
	}
	return v, nil
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

func lastLines(s string, n int) string {
	l := strings.Split(strings.TrimSpace(s), "\n")
	if len(l) > n {
		l = l[len(l)-n:]
	}
	return strings.Join(l, "\n")
}

// carry reports the change of an earlier transaction of these packages whose own run
// failed before it could (its deadline passed, it was killed): the task is changed, so a
// restart_on wired to it still fires once, and only in the run that reports it.
func (r *run) carry(e *Earlier) {
	if e == nil || !e.packageChanged {
		return
	}
	r.res.Changed, r.res.PackageChanged = true, true
	if e.unitFilesChanged {
		r.res.UnitFilesChanged, r.res.DaemonReload = true, contract.ReloadNeeded
	}
	r.res.Moved = mergeMoves(r.res.Moved, e.Moves)
	r.res.Stamp(e.ended)
	r.res.Placed(e.filesPlaced)
}

// PredictChange answers, reading only (the remembered rpm query while the database is
// unchanged, else one rpm query; no DNF), whether a run with these arguments would run a
// transaction: the decision a real run makes first. The service module uses it to record
// the reactions a package change will owe before it changes anything.
func (d Deps) PredictChange(ctx context.Context, args map[string]any) (bool, error) {
	s := Spec()
	vals, err := s.Validate(args)
	if err != nil {
		return false, err
	}
	var p Params
	if err := s.Decode(vals, &p); err != nil {
		return false, err
	}
	w := wantFrom(p)
	obs, err := d.observe(ctx, w.Names())
	if err != nil {
		return false, err
	}
	plan, err := Decide(w, obs.have)
	if err != nil {
		return false, err
	}
	return plan.Changes(), nil
}
