package rpmexact

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/richt/services/pkg/atomicfile"
	"github.com/richt/services/pkg/lock"
	"github.com/richt/services/pkg/runner"
	"github.com/richt/services/pkg/statedir"
	"github.com/richt/services/pkg/timeout"
)

// TrustedRequest checks that dir holds a request this module wrote: dir is a transaction
// of root (the transactions directory: one of its entries, not any directory that looks
// safe), root and dir are real directories of the running user that neither group nor
// others can write, and the request is such a file too.
func TrustedRequest(root, dir string) error {
	root, dir = filepath.Clean(root), filepath.Clean(dir)
	if !filepath.IsAbs(dir) {
		return fmt.Errorf("%s is not an absolute path", dir)
	}
	if filepath.Dir(dir) != root {
		return fmt.Errorf("%s is not a transaction in %s", dir, root)
	}
	for _, d := range []string{root, dir} {
		if err := statedir.CheckExisting(d); err != nil {
			return err
		}
	}
	return statedir.CheckFile(filepath.Join(dir, requestFile))
}

// claimRequest makes this supervisor the only one to run the request in dir: one with an
// outcome, or whose command was started (its output file exists), ran already; creating
// the output file exclusively keeps two supervisors started at once from both running it.
func claimRequest(dir string) error {
	if _, err := os.Lstat(filepath.Join(dir, outcomeFile)); !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("transaction %s has an outcome already (%v): a request runs once", dir, err)
	}
	f, err := os.OpenFile(filepath.Join(dir, stdoutFile), os.O_WRONLY|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW, 0o600)
	if errors.Is(err, os.ErrExist) {
		return fmt.Errorf("transaction %s was started already: a request runs once", dir)
	}
	if err != nil {
		return fmt.Errorf("claim transaction %s: %w", dir, err)
	}
	return f.Close()
}

// SuperviseEnv names the transaction directory when the module binary is started as a
// transaction's supervisor; main checks it before anything else.
const SuperviseEnv = "RICHT_RPM_TRANSACTION"

// settleTimeout bounds each side of the supervisor's own work around DNF (the snapshots,
// the file list of what it installed, one record); DNF itself has no deadline there.
const settleTimeout = 2 * time.Minute

// Supervise is the supervisor: it runs the transaction recorded in dir to its end, with
// the transaction lock inherited as file descriptor 3, keeps DNF's output, settles the
// transaction and writes its outcome. It returns the process exit code.
func Supervise(dir string, sync SyncRecorder, listings *QueryMemo) int {
	held := os.NewFile(3, "transaction lock")
	defer held.Close()
	return supervise(DefaultTransactionDir, dir, held, supervisorDeps{
		Sync: sync, Listings: listings, Runner: runner.Exec{},
		Launch: func(argv0 string) (dnfLaunch, bool) { return launchFor(argv0, hostScriptFiles) },
	})
}

// supervisorDeps is what the supervisor reads the host through and how it starts DNF.
type supervisorDeps struct {
	Sync     SyncRecorder
	Listings *QueryMemo
	// Runner runs the snapshots' commands.
	Runner runner.Runner
	// UnitDirs replaces systemd's unit directories (nil: systemd's), for tests.
	UnitDirs []string
	// Launch says whether the command is started through DNF's launcher (launcher.go);
	// nil: never.
	Launch func(argv0 string) (dnfLaunch, bool)
}

// supervise is Supervise for a request in root (the transactions directory), with the
// transaction lock held.
func supervise(root, dir string, held *os.File, deps supervisorDeps) int {
	sync := deps.Sync
	// The directory comes from the environment, which a task can set: its request is
	// an argv run as root, so it is run only from where this module writes requests, in a
	// directory and a file nobody else can have written. Nothing is written to a directory
	// that fails this.
	if err := TrustedRequest(root, dir); err != nil {
		fmt.Fprintf(os.Stderr, "rpm_exact: not a transaction this module started: %v\n", err)
		return 2
	}
	if err := claimRequest(dir); err != nil {
		fmt.Fprintf(os.Stderr, "rpm_exact: %v\n", err)
		return 2
	}
	// Nothing the supervisor starts (rpm, DNF, the scriptlets) is a supervisor: a module a
	// scriptlet runs is a module run.
	_ = os.Unsetenv(SuperviseEnv)
	done := false
	rec := outcomeRecord{Done: &done}
	// Stopping the transaction's scope (a shutdown, an administrator) sends SIGTERM to DNF
	// and to this process alike: the supervisor stays to see DNF end and writes the outcome,
	// saying it was stopped.
	var stopped atomic.Value
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGINT)
	go func() {
		for sig := range sigs {
			stopped.Store(sig.String())
		}
	}()
	defer func() {
		if s, ok := stopped.Load().(string); ok {
			rec.Stopped = s
		}
		rec.Ended = time.Now().UTC()
		if data, err := json.Marshal(rec); err == nil {
			_ = atomicfile.Write(filepath.Join(dir, outcomeFile), data, atomicfile.Options{Mode: 0o600, UID: -1, GID: -1})
		}
	}()
	var req request
	data, err := os.ReadFile(filepath.Join(dir, requestFile))
	if err == nil {
		err = json.Unmarshal(data, &req)
	}
	if err != nil || len(req.Argv) == 0 {
		rec.StartErr = fmt.Sprintf("read %s: %v", filepath.Join(dir, requestFile), err)
		done = true
		return 1
	}
	if req.ExeFD > 2 {
		syscall.CloseOnExec(req.ExeFD) // the module's executable is no business of DNF's
	}
	// DNF never ran: no reload due on its account.
	notStarted := func(why string) int {
		rec.StartErr = why
		if req.AheadID != "" && sync != nil {
			cctx, cancel := timeout.Cleanup(context.Background())
			defer cancel()
			_ = sync.RemoveManagerSyncEntry(cctx, req.AheadID)
		}
		done = true
		return 1
	}
	// DNF 4's interpreter starts first, held at its gate while the snapshot is taken
	// (launcher.go); any other command starts after it.
	var proc *dnfProc
	if deps.Launch != nil {
		if l, ok := deps.Launch(req.Argv[0]); ok {
			proc = startLaunched(dir, held, req.Argv, l)
		}
	}
	// The snapshot DNF's changes are read against; without it DNF does not run.
	st := settler{Runner: deps.Runner, Sync: sync, UnitDirs: deps.UnitDirs, Listings: deps.Listings}
	bctx, bcancel := context.WithTimeout(context.Background(), settleTimeout)
	before, err := st.before(bctx)
	bcancel()
	if err != nil {
		why := err.Error()
		if proc != nil {
			if cerr := proc.closeGate(); cerr != nil {
				why += "; " + cerr.Error()
			}
			_ = lock.WriteHolder(held, os.Getpid())
		}
		return notStarted(why)
	}
	if proc == nil {
		if proc, err = startLogged(dir, held, req.Argv, ""); err != nil {
			rec.StartErr = err.Error()
			done = true
			return 1
		}
	} else if err := proc.openGate(); err != nil {
		_ = lock.WriteHolder(held, os.Getpid())
		return notStarted(err.Error())
	}
	res, err := proc.wait()
	if err != nil {
		rec.StartErr = err.Error()
		done = true
		return 1
	}
	rec.ExitCode = res.ExitCode
	ctx, cancel := context.WithTimeout(context.Background(), settleTimeout)
	defer cancel()
	out := st.settle(ctx, req.Transaction, before, res)
	rec.BeforeListed = out.BeforeListed
	_ = lock.WriteHolder(held, os.Getpid()) // DNF has ended; the supervisor holds on while it settles
	rec.UnitFilesChanged = out.UnitFilesChanged
	rec.PackageChanged = out.AfterErr != nil || len(out.Moves) > 0
	rec.After, rec.Moves, rec.FilesPlaced = out.After, out.Moves, out.FilesPlaced
	if out.AfterErr != nil {
		rec.AfterErr = out.AfterErr.Error()
	}
	// Settled: the entry written ahead is withdrawn unless a sync was needed and settle
	// could not record its own (a full disk): then it is the only record of the reload due.
	// settle records a new entry rather than keeping this one because a reader that
	// reloaded while DNF ran may have cleared it.
	if req.AheadID != "" && sync != nil && (!out.needsSync() || out.SyncRecorded) {
		_ = sync.RemoveManagerSyncEntry(ctx, req.AheadID)
	}
	done = true
	return 0
}

// startLaunched starts DNF through its launcher with the gate closed; nil when the launcher
// cannot be written or executed (a record directory on a noexec mount): then DNF starts
// after the snapshot, as without the launcher.
func startLaunched(dir string, held *os.File, argv []string, l dnfLaunch) *dnfProc {
	path, err := writeLauncher(dir, argv[0], l)
	if err == nil {
		var p *dnfProc
		if p, err = startLogged(dir, held, argv, path); err == nil {
			return p
		}
	}
	_ = os.RemoveAll(filepath.Join(dir, launcherDir))
	return nil
}
