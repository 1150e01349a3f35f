package rpmexact

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/richt/services/pkg/atomicfile"
	"github.com/richt/services/pkg/lock"
	"github.com/richt/services/pkg/runner"
	"github.com/richt/services/pkg/statedir"
	"github.com/richt/services/pkg/timeout"
)

// Detached runs each transaction under a supervisor that survives the module.
type Detached struct {
	Dir     string // DefaultTransactionDir on a target
	LockDir string // package lock's directory
	// Self is the executable started as the supervisor: /proc/self/exe, which works
	// even after Ansible has removed the module file.
	Self string
	// NoScope keeps the supervisor in the caller's cgroup even where systemd is PID 1
	// (tests of the supervisor alone).
	NoScope bool
	// Name is the supervisor's argv[0]: the module's name, which is how the collection's
	// multi-call binary (one program for every module) knows that rpm_exact runs.
	Name string
	Sync SyncRecorder

	held *lock.Lock
}

// DefaultDetached is the transactor of the rpm_exact binary.
func DefaultDetached(sync SyncRecorder) *Detached {
	return &Detached{Dir: DefaultTransactionDir, LockDir: lock.Dir(), Self: "/proc/self/exe", Name: moduleName, Sync: sync}
}

// Begin implements Transactor: it takes the transaction lock, waiting while an earlier
// transaction (of a run that stopped waiting for it) is still under way, and reports the
// earliest unreported outcome.
func (d *Detached) Begin(ctx context.Context, check bool, names []string) (func(), *Earlier, error) {
	l, err := lock.Acquire(ctx, d.LockDir, lock.Transaction)
	if err != nil {
		if errors.Is(err, lock.ErrHeld) {
			where := ""
			if dir := d.running(); dir != "" {
				where = "; its output is kept in " + dir
			}
			return nil, nil, fmt.Errorf("an earlier package transaction is still running and was not stopped%s; run again once it has finished (%w)", where, err)
		}
		return nil, nil, err
	}
	d.held = l
	// The records below are read as facts (what ran, how it ended) and acted on: only from
	// a directory nobody else can write.
	if err := statedir.Check(d.Dir); err != nil {
		l.Release()
		d.held = nil
		return nil, nil, err
	}
	return l.Release, d.unreported(names), nil
}

// Run implements Transactor. An error before the supervisor started wraps ErrNotStarted,
// and leaves no record behind: DNF never ran.
func (d *Detached) Run(ctx context.Context, t Transaction) (out Outcome, err error) {
	if d.held == nil {
		return Outcome{}, errors.New("transaction started without Begin")
	}
	if err := statedir.Ensure(d.Dir, 0o700); err != nil {
		return Outcome{}, err
	}
	now := time.Now().UTC()
	dir := filepath.Join(d.Dir, d.nextID(now))
	if err := os.Mkdir(dir, 0o700); err != nil {
		return Outcome{}, fmt.Errorf("%w: create transaction record %s: %w", ErrNotStarted, dir, err)
	}
	out = Outcome{Result: runner.Result{Argv: t.Argv}, Log: dir}
	req := request{Transaction: t, Started: now}
	if d.Self == "/proc/self/exe" { // supervisorCmd passes it
		req.ExeFD = exeFD
	}
	started := false
	defer func() {
		if started {
			return
		}
		// Nothing ran: no record to report later, no reload due on its account.
		_ = os.RemoveAll(dir)
		if req.AheadID != "" {
			cctx, cancel := timeout.Cleanup(context.Background())
			defer cancel()
			_ = d.Sync.RemoveManagerSyncEntry(cctx, req.AheadID)
		}
		out.Log = ""
		err = fmt.Errorf("%w: %w", ErrNotStarted, err)
	}()
	if d.Sync != nil {
		id, err := d.Sync.MarkManagerSyncDue(ctx, t.Reason+" (transaction under way: "+dir+")")
		if err != nil {
			return out, err
		}
		req.AheadID = id
	}
	data, err := json.Marshal(req)
	if err != nil {
		return out, err
	}
	if err := atomicfile.Write(filepath.Join(dir, requestFile), data, atomicfile.Options{Mode: 0o600, UID: -1, GID: -1}); err != nil {
		return out, err
	}

	scope := d.scopeUnit(dir)
	out.Scope = scope
	if scope == "" {
		out.Scope = "none: systemd is not PID 1 here; the transaction runs in the caller's cgroup"
	}
	cmd, err := d.supervisorCmd(dir, scope, osHost{})
	if err != nil {
		return out, err
	}
	if err := cmd.Start(); err != nil {
		return out, fmt.Errorf("start the transaction's supervisor: %w", err)
	}
	started = true
	// Records only grow here, so here is where old ones go; a converged run lists the
	// directory once (for an unreported outcome) and removes nothing.
	d.prune(dir)
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case werr := <-done:
		markReported(dir)
		return d.read(dir, t, out, werr)
	case <-ctx.Done():
		holder := lock.Holder(filepath.Join(d.LockDir, lock.Transaction+".lock"))
		return out, fmt.Errorf("%w: %s was still running at the deadline (%s); it was not stopped and finishes on its own, its output is kept in %s, and the next rpm_exact run waits for it and reports its outcome",
			ErrStillRunning, strings.Join(t.Argv, " "), holder, dir)
	}
}

// read turns the supervisor's records into the outcome.
func (d *Detached) read(dir string, t Transaction, out Outcome, werr error) (Outcome, error) {
	stdout, _ := os.ReadFile(filepath.Join(dir, stdoutFile))
	stderr, _ := os.ReadFile(filepath.Join(dir, stderrFile))
	out.Stdout, out.Stderr = string(stdout), string(stderr)
	data, err := os.ReadFile(filepath.Join(dir, outcomeFile))
	var rec outcomeRecord
	if err == nil {
		err = json.Unmarshal(data, &rec)
	}
	if err != nil {
		return out, fmt.Errorf("the transaction's supervisor ended (%v) without a readable outcome in %s: %w; read its output there and check the RPM database", werr, dir, err)
	}
	if rec.StartErr != "" {
		return out, fmt.Errorf("%w: start %s: %s", ErrNotStarted, strings.Join(t.Argv, " "), rec.StartErr)
	}
	// A supervisor that ended any other way than at the end of its work (a panic, a
	// signal) may have written an outcome that reads as success: its exit status says so.
	if werr != nil || (rec.Done != nil && !*rec.Done) {
		return out, fmt.Errorf("the transaction's supervisor ended before it finished settling (%v; DNF exited %d); its outcome in %s is incomplete: read its output there and check the RPM database", exitOf(werr), rec.ExitCode, dir)
	}
	out.ExitCode = rec.ExitCode
	out.UnitFilesChanged = rec.UnitFilesChanged
	out.After, out.Moves, out.FilesPlaced = rec.After, rec.Moves, rec.FilesPlaced
	if rec.AfterErr != "" {
		out.AfterErr = errors.New(rec.AfterErr)
	}
	return out, nil
}

// exitOf describes how the supervisor ended.
func exitOf(werr error) string {
	if werr == nil {
		return "exit status 0"
	}
	return werr.Error()
}
