package rpmexact

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/richt/services/pkg/runner"
	"github.com/richt/services/pkg/stamp"
)

// ErrNotStarted is returned (wrapped) when a transaction could not be started at all: DNF
// never ran, nothing changed.
var ErrNotStarted = errors.New("transaction not started")

// ErrStillRunning is returned (wrapped) when the deadline ended the wait for a transaction
// that is still under way. It was not stopped: killing rpm half-way through can leave two
// versions of a package in the database.
var ErrStillRunning = errors.New("transaction still running at the deadline")

// Transaction is one DNF run and what is needed to settle it afterwards.
type Transaction struct {
	Argv []string `json:"argv"`
	// Names are the packages the task asked for; what else moved is reported as not
	// requested.
	Names []string `json:"names"`
	// Reason is written into the manager-sync record when unit files changed.
	Reason string `json:"reason"`
}

// Outcome is what an ended transaction did.
type Outcome struct {
	runner.Result
	// After maps each requested name to its builds once DNF had ended; AfterErr says why
	// the database could not be read (then a manager sync was recorded, since a unit
	// file change could not be ruled out, and Moves is empty).
	After    map[string][]string
	AfterErr error
	// Moves are every package whose builds changed, requested or not.
	Moves []Move
	// UnitFilesChanged: an entry of systemd's unit directories was added, replaced or
	// removed while DNF ran (and the manager sync is recorded).
	UnitFilesChanged bool
	// FilesPlaced is when the files of the builds it installed were all in place (zero
	// when it installed none, or that could not be read): a unit active since then runs
	// with them.
	FilesPlaced stamp.Stamp
	// SyncRecorded: the manager sync this transaction needed (unit files changed, or
	// that could not be ruled out) is recorded; false when it needed none.
	SyncRecorded bool
	// Scope is the transient systemd scope the transaction ran in, or why there was none.
	Scope string
	// Log is the directory that keeps the transaction's request, output and outcome on
	// the target; empty when the transaction ran inline.
	Log string
	// BeforeListed says where the packages before DNF came from (ListedRPM, ListedMemo).
	BeforeListed string
}

// Transactor runs DNF transactions. Begin is called before the run observes anything and
// waits (inside the run's deadline) for a transaction that is still under way; it returns
// what an earlier transaction for the same package did that no run has reported yet, and
// marks it reported unless the run is a check (check mode writes nothing). Run starts one
// transaction and waits for it until the context ends.
type Transactor interface {
	Begin(ctx context.Context, check bool, names []string) (release func(), earlier *Earlier, err error)
	Run(ctx context.Context, t Transaction) (Outcome, error)
}

// Earlier is a transaction whose module stopped waiting for it (its deadline passed, or
// it was killed), as the next run reports it.
type Earlier struct {
	Command []string `json:"command"`
	// Outcome: "succeeded", "failed (exit N)", or "unknown: …" when it left no outcome.
	Outcome string `json:"outcome"`
	Log     string `json:"log"`
	Ended   string `json:"ended,omitempty"`

	// Moves are the packages it moved.
	Moves []Move `json:"moves,omitempty"`

	// What it changed, carried into the reporting run's result (package contract), so a
	// trigger wired to the task still sees the change its failed run could not report.
	packageChanged, unitFilesChanged bool
	ended                            time.Time
	filesPlaced                      stamp.Stamp
	// record is the transaction's directory, marked reported once the reporting run
	// returns (MarkReported).
	record string
}

// Inline runs transactions in this process through a Runner, so the handler's logic can be
// tested with a scripted runner. The runner's deadline ends DNF with it: the module
// binaries never use Inline, they use Detached.
type Inline struct {
	Runner runner.Runner
	Sync   SyncRecorder
	// UnitDirs replaces systemd's unit directories, for tests.
	UnitDirs []string
	// Listings remembers each transaction's listing after DNF for the next one (nil:
	// every transaction lists twice).
	Listings *QueryMemo
}

// Begin implements Transactor: inline transactions end with their run, so nothing is
// waited for.
func (Inline) Begin(context.Context, bool, []string) (func(), *Earlier, error) {
	return func() {}, nil, nil
}

// Run implements Transactor.
func (i Inline) Run(ctx context.Context, t Transaction) (Outcome, error) {
	st := settler{Runner: i.Runner, Sync: i.Sync, UnitDirs: i.UnitDirs, Listings: i.Listings}
	before, err := st.before(ctx)
	if err != nil {
		return Outcome{}, fmt.Errorf("%w: %w", ErrNotStarted, err)
	}
	res, err := i.Runner.Run(ctx, t.Argv...)
	if err != nil {
		return Outcome{Result: res}, err
	}
	return st.settle(ctx, t, before, res), nil
}

// settler is what a transaction's snapshots and its settling read and write through.
type settler struct {
	Runner   runner.Runner
	Sync     SyncRecorder
	UnitDirs []string // nil: systemd's
	Listings *QueryMemo
}

// settle reads the RPM database and the unit directories back once DNF has ended, and
// records a manager sync when unit files changed, or when that cannot be ruled out.
// Detached transactions settle in their supervisor, so this happens also when the module
// that started them is gone.
func (st settler) settle(ctx context.Context, t Transaction, before Snapshot, res runner.Result) Outcome {
	r, sync := st.Runner, st.Sync
	out := Outcome{Result: res, BeforeListed: before.Listed}
	after, remembered, err := st.after(ctx, before.Database)
	defer func() { <-remembered }()
	reason := t.Reason
	switch {
	case err != nil:
		out.AfterErr = err
		reason += " (could not be ruled out: " + err.Error() + ")"
	default:
		out.After = map[string][]string{}
		for _, n := range t.Names {
			out.After[n] = nonNil(after.Packages[n])
		}
		out.Moves = movesBetween(before, after, t.Names)
		// Only a reaction's shortcut depends on it: without it, restarts happen as asked.
		out.FilesPlaced, _ = filesPlaced(ctx, r, added(out.Moves))
		out.UnitFilesChanged = unitsDiffer(before.Units, after.Units)
		if !out.UnitFilesChanged {
			return out
		}
	}
	if sync != nil {
		var err error
		if ps, ok := sync.(PlacedSyncRecorder); ok && out.AfterErr == nil {
			_, err = ps.MarkManagerSyncPlaced(ctx, reason, unitsPlaced(before.Units, after.Units, os.Lstat))
		} else {
			_, err = sync.MarkManagerSyncDue(ctx, reason)
		}
		out.SyncRecorded = err == nil
		if err != nil && out.AfterErr == nil {
			out.AfterErr = fmt.Errorf("unit files changed, but recording that systemd's manager must be reloaded failed: %w", err)
		}
	}
	return out
}

// needsSync reports whether a settled transaction needed a manager sync.
func (o Outcome) needsSync() bool { return o.UnitFilesChanged || o.AfterErr != nil }
