package rpmexact

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/richt/services/pkg/runner"
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
	// Name is the package read back from the RPM database once DNF has ended.
	Name string `json:"name"`
	// Before are the package's builds before, to tell a later run what changed.
	Before []string `json:"before"`
	// UnitFiles are the package's unit files before, to tell whether DNF changed any.
	UnitFiles map[string]string `json:"unit_files"`
	// Reason is written into the manager-sync record when unit files changed.
	Reason string `json:"reason"`
}

// Outcome is what an ended transaction did.
type Outcome struct {
	runner.Result
	// After is the package as the RPM database shows it once DNF had ended; AfterErr says
	// why it could not be read (then a manager sync was recorded, since a unit file
	// change could not be ruled out).
	After    Installed
	AfterErr error
	// UnitFilesChanged: DNF added, replaced or removed a file of the package under
	// systemd's unit directories (and the manager sync is recorded).
	UnitFilesChanged bool
	// SyncRecorded: the manager sync this transaction needed (unit files changed, or
	// that could not be ruled out) is recorded; false when it needed none.
	SyncRecorded bool
	// Log is the directory that keeps the transaction's request, output and outcome on
	// the target; empty when the transaction ran inline.
	Log string
}

// Transactor runs DNF transactions. Begin is called before the run observes anything and
// waits (inside the run's deadline) for a transaction that is still under way; it returns
// what an earlier transaction for the same package did that no run has reported yet, and
// marks it reported unless the run is a check (check mode writes nothing). Run starts one
// transaction and waits for it until the context ends.
type Transactor interface {
	Begin(ctx context.Context, check bool, name string) (release func(), earlier *Earlier, err error)
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

	// What it changed, carried into the reporting run's result (package contract), so a
	// trigger wired to the task still sees the change its failed run could not report.
	packageChanged, unitFilesChanged bool
	ended                            time.Time
}

// Inline runs transactions in this process through a Runner, so the handler's logic can be
// tested with a scripted runner. The runner's deadline ends DNF with it: the module
// binaries never use Inline, they use Detached.
type Inline struct {
	Runner runner.Runner
	Sync   SyncRecorder
}

// Begin implements Transactor: inline transactions end with their run, so nothing is
// waited for.
func (Inline) Begin(context.Context, bool, string) (func(), *Earlier, error) {
	return func() {}, nil, nil
}

// Run implements Transactor.
func (i Inline) Run(ctx context.Context, t Transaction) (Outcome, error) {
	res, err := i.Runner.Run(ctx, t.Argv...)
	if err != nil {
		return Outcome{Result: res}, err
	}
	return settle(ctx, i.Runner, i.Sync, t, res), nil
}

// settle reads the package back from the RPM database once DNF has ended and records a
// manager sync when its unit files changed, or when that cannot be ruled out. Detached
// transactions settle in their supervisor, so this happens also when the module that
// started them is gone.
func settle(ctx context.Context, r runner.Runner, sync SyncRecorder, t Transaction, res runner.Result) Outcome {
	out := Outcome{Result: res}
	out.After, _, out.AfterErr = Observe(ctx, r, t.Name)
	reason := t.Reason
	switch {
	case out.AfterErr != nil:
		reason += " (could not be ruled out: " + out.AfterErr.Error() + ")"
	case unitFilesDiffer(t.UnitFiles, out.After.UnitFiles):
		out.UnitFilesChanged = true
	default:
		return out
	}
	if sync != nil {
		_, err := sync.MarkManagerSyncDue(ctx, reason)
		out.SyncRecorded = err == nil
		if err != nil && out.AfterErr == nil {
			out.AfterErr = fmt.Errorf("unit files changed, but recording that systemd's manager must be reloaded failed: %w", err)
		}
	}
	return out
}

// needsSync reports whether a settled transaction needed a manager sync.
func (o Outcome) needsSync() bool { return o.UnitFilesChanged || o.AfterErr != nil }
