package rpmexact

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/richt/services/pkg/atomicfile"
	"github.com/richt/services/pkg/lock"
	"github.com/richt/services/pkg/runner"
	"github.com/richt/services/pkg/stamp"
	"github.com/richt/services/pkg/statedir"
)

// A deadline ends the module's wait, never a transaction. So DNF runs under a supervisor,
// the module binary itself started again in a session of its own: it outlives the module
// (its deadline, Ansible's timeout, a killed SSH connection), keeps DNF's output in files,
// settles the transaction (manager-sync record) when DNF ends, and holds the transaction
// lock until then, so the next run waits for it and then reads its outcome.
//
// Files of one transaction, in Detached.Dir/ID/:
//
//	request.json   what to run and how to settle it (written by the module)
//	stdout, stderr DNF's output
//	outcome.json   exit code, end, whether unit files changed (written by the supervisor)
//	reported       a run has reported the outcome: the module that waited to the end, or,
//	               when it stopped waiting (deadline, killed), the next run
const (
	requestFile  = "request.json"
	outcomeFile  = "outcome.json"
	reportedFile = "reported"
	stdoutFile   = "stdout"
	stderrFile   = "stderr"
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

// DefaultTransactionDir keeps the transactions' records on a target.
const DefaultTransactionDir = "/var/lib/richt/transactions"

// keepTransactions is how many transaction directories stay for reading afterwards.
const (
	keepTransactions = 20
	keepUnreported   = 100
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

type request struct {
	Transaction
	// AheadID is the manager-sync entry written before DNF started: if nothing settles
	// the transaction (the supervisor is killed too), a later systemd_lifecycle run still
	// reloads the manager.
	AheadID string    `json:"ahead_id"`
	Started time.Time `json:"started"`
	// ExeFD is the inherited descriptor the supervisor was executed from (exeFD), which
	// it keeps from DNF and the scriptlets; 0: none.
	ExeFD int `json:"exe_fd,omitempty"`
}

type outcomeRecord struct {
	// Done is false until the supervisor finished settling, and stays false in the record a
	// panicking supervisor writes on its way out; nil in records of earlier releases, which
	// wrote one only at the end.
	Done *bool `json:"done,omitempty"`
	// Stopped names the signal the supervisor received while DNF ran (its scope stopped).
	Stopped          string              `json:"stopped,omitempty"`
	ExitCode         int                 `json:"rc"`
	StartErr         string              `json:"start_error,omitempty"`
	Ended            time.Time           `json:"ended"`
	UnitFilesChanged bool                `json:"unit_files_changed"`
	PackageChanged   bool                `json:"package_changed"`
	After            map[string][]string `json:"after"`
	Moves            []Move              `json:"moves"`
	FilesPlaced      stamp.Stamp         `json:"files_placed"`
	AfterErr         string              `json:"after_error,omitempty"`
	// BeforeListed says where the listing before DNF came from (ListedRPM, ListedMemo).
	BeforeListed string `json:"before_listed,omitempty"`
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

// running is the directory of the newest transaction without an outcome.
func (d *Detached) running() string {
	ids := d.ids()
	for i := len(ids) - 1; i >= 0; i-- {
		dir := filepath.Join(d.Dir, ids[i])
		if _, err := os.Stat(filepath.Join(dir, outcomeFile)); errors.Is(err, os.ErrNotExist) {
			return dir
		}
	}
	return ""
}

// ids are the transaction directories, oldest first: by the sequence number each name
// starts with, never by the time in it, so a clock stepped back does not make the newest
// transaction look old (and be pruned while it runs). Names of releases before the
// sequence number count as older than any numbered one.
func (d *Detached) ids() []string {
	entries, err := os.ReadDir(d.Dir)
	if err != nil {
		return nil
	}
	var ids []string
	for _, e := range entries {
		if e.IsDir() {
			ids = append(ids, e.Name())
		}
	}
	sort.Slice(ids, func(i, j int) bool {
		si, sj := seqOf(ids[i]), seqOf(ids[j])
		if si != sj {
			return si < sj
		}
		return ids[i] < ids[j]
	})
	return ids
}

// seqDigits is the width of a transaction's sequence number in its directory's name.
const seqDigits = 12

// seqOf is the sequence number a transaction directory's name starts with (0 without one).
func seqOf(id string) uint64 {
	if len(id) <= seqDigits || id[seqDigits] != '-' {
		return 0
	}
	n, err := strconv.ParseUint(id[:seqDigits], 10, 64)
	if err != nil {
		return 0
	}
	return n
}

// nextID names a new transaction's directory: the next sequence number, then the time and
// the process for people reading the directory.
func (d *Detached) nextID(now time.Time) string {
	var last uint64
	if ids := d.ids(); len(ids) > 0 {
		last = seqOf(ids[len(ids)-1])
	}
	return fmt.Sprintf("%0*d-%s-%d", seqDigits, last+1, now.Format("20060102T150405.000000000Z"), os.Getpid())
}

// unreported reports (once) the oldest transaction whose module stopped waiting for it
// (its deadline passed, or it was killed). Begin holds the lock, so its supervisor has
// ended.
func (d *Detached) unreported(names []string) *Earlier {
	for _, id := range d.ids() {
		dir := filepath.Join(d.Dir, id)
		if _, err := os.Stat(filepath.Join(dir, reportedFile)); err == nil {
			continue
		}
		e := &Earlier{Log: dir, record: dir, Outcome: "unknown: the transaction left no outcome (its supervisor was killed); read its output and the RPM database"}
		var req request
		if data, err := os.ReadFile(filepath.Join(dir, requestFile)); err == nil && json.Unmarshal(data, &req) == nil {
			e.Command = req.Argv
		}
		if !overlaps(req.Names, names) {
			continue // a run for those packages reports it
		}
		var out outcomeRecord
		if data, err := os.ReadFile(filepath.Join(dir, outcomeFile)); err == nil && json.Unmarshal(data, &out) == nil {
			e.Ended, e.ended = out.Ended.Format(time.RFC3339), out.Ended
			e.packageChanged, e.unitFilesChanged = out.PackageChanged, out.UnitFilesChanged
			e.Moves, e.filesPlaced = out.Moves, out.FilesPlaced
			switch {
			case out.StartErr != "":
				e.Outcome = "not started: " + out.StartErr
			case out.Done != nil && !*out.Done:
				e.Outcome = fmt.Sprintf("unknown: its supervisor ended before it finished settling (DNF exited %d); read its output and the RPM database", out.ExitCode)
			case out.Stopped != "" && out.ExitCode != 0:
				e.Outcome = fmt.Sprintf("failed (exit %d): its scope was stopped (%s) while DNF ran", out.ExitCode, out.Stopped)
			case out.ExitCode == 0:
				e.Outcome = "succeeded"
			default:
				e.Outcome = fmt.Sprintf("failed (exit %d)", out.ExitCode)
			}
		}
		return e
	}
	return nil
}

func markReported(dir string) { _ = os.WriteFile(filepath.Join(dir, reportedFile), nil, 0o600) }

// MarkReported records that e was reported: called when the run that found it returns its
// result (a run killed before that leaves it for the next one). Nothing for nil, or for
// an Earlier that is not a record of Detached.
func MarkReported(e *Earlier) {
	if e != nil && e.record != "" {
		markReported(e.record)
	}
}

// scopeUnit names the transient scope a transaction runs in, or "" where systemd is not
// PID 1 (a container without it, a chroot): then the supervisor stays in the caller's
// cgroup, as before, and the result says so.
func (d *Detached) scopeUnit(dir string) string {
	if d.NoScope {
		return ""
	}
	if fi, err := os.Stat("/run/systemd/system"); err != nil || !fi.IsDir() {
		return ""
	}
	if _, err := exec.LookPath("systemd-run"); err != nil {
		return ""
	}
	return "richt-rpm-transaction-" + strings.SplitN(filepath.Base(dir), "-", 2)[0] + ".scope"
}

// scopeArgv wraps the supervisor's command line in systemd-run --scope. systemd-run
// executes the program it is given by its path, with that path as argv[0]: the module's
// name goes first among the arguments, where the multi-call binary looks.
func scopeArgv(scope, path string, argv []string, name string) (string, []string) {
	if path == exePath && name != "" {
		argv = []string{path, name}
	} else {
		argv = append([]string{path}, argv[1:]...)
	}
	unit := strings.TrimSuffix(scope, ".scope")
	run := []string{"systemd-run", "--scope", "--quiet", "--collect", "--unit=" + unit,
		"--description=richt.services rpm_exact package transaction", "--"}
	bin, err := exec.LookPath("systemd-run")
	if err != nil {
		bin = "systemd-run"
	}
	return bin, append(run, argv...)
}

// supervisorCmd is the command that starts the supervisor of the transaction in dir, in
// scope ("": none), holding the transaction lock.
func (d *Detached) supervisorCmd(dir, scope string, h host) (*exec.Cmd, error) {
	files := []*os.File{d.held.File()}
	if d.Self == "/proc/self/exe" {
		exe, err := h.OpenSelf()
		if err != nil {
			return nil, err
		}
		files = append(files, exe) // exeFD
	}
	path, argv := selfArgv(h, os.Getpid(), d.Self, d.Name)
	if scope != "" {
		// A transient scope of its own (systemd-run --scope registers it, then executes the
		// supervisor, which keeps its file descriptors and environment): stopping the
		// caller's unit, its session or its cgroup no longer reaches DNF.
		path, argv = scopeArgv(scope, path, argv, d.Name)
	}
	// Path set as is: exec.Command would look exePath up in this process, where exeFD is
	// some other file.
	cmd := &exec.Cmd{Path: path, Args: argv}
	cmd.Env = append(os.Environ(), SuperviseEnv+"="+dir)
	// Its own session: no signal sent to the module's process group or terminal (Ansible's
	// timeout, a closed SSH connection) reaches it. No stdio: Ansible waits for the
	// module's output to close, and must not wait for DNF.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	cmd.ExtraFiles = files
	return cmd, nil
}

// exitOf describes how the supervisor ended.
func exitOf(werr error) string {
	if werr == nil {
		return "exit status 0"
	}
	return werr.Error()
}

// prune keeps the newest transactions' records: beyond keepTransactions the reported ones
// go, beyond keepUnreported every one (a package nobody manages any more never reports).
func (d *Detached) prune(current string) {
	ids := d.ids()
	for i, id := range ids {
		dir := filepath.Join(d.Dir, id)
		if dir == current {
			continue // never the transaction under way, wherever it sorts
		}
		age := len(ids) - i // 1 for the newest
		_, rerr := os.Stat(filepath.Join(dir, reportedFile))
		if age > keepUnreported || (age > keepTransactions && rerr == nil) {
			_ = os.RemoveAll(dir)
		}
	}
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
			cctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
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

// settleTimeout bounds each side of the supervisor's own work around DNF (the snapshots,
// the file list of what it installed, one record); DNF itself has no deadline there.
const settleTimeout = 2 * time.Minute

// Supervise is the supervisor: it runs the transaction recorded in dir to its end, with
// the transaction lock inherited as file descriptor 3, keeps DNF's output, settles the
// transaction and writes its outcome. It returns the process exit code.
func Supervise(dir string, sync SyncRecorder, listings *QueryMemo) int {
	held := os.NewFile(3, "transaction lock")
	defer held.Close()
	return supervise(DefaultTransactionDir, dir, held, sync, listings)
}

// supervise is Supervise for a request in root (the transactions directory), with the
// transaction lock held.
func supervise(root, dir string, held *os.File, sync SyncRecorder, listings *QueryMemo) int {
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
	// The snapshot DNF's changes are read against; without it DNF does not run.
	st := settler{Runner: runner.Exec{}, Sync: sync, Listings: listings}
	bctx, bcancel := context.WithTimeout(context.Background(), settleTimeout)
	before, err := st.before(bctx)
	bcancel()
	if err != nil {
		rec.StartErr = err.Error()
		if req.AheadID != "" && sync != nil { // DNF never ran: no reload due on its account
			cctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
			defer cancel()
			_ = sync.RemoveManagerSyncEntry(cctx, req.AheadID)
		}
		done = true
		return 1
	}
	res, err := runLogged(dir, held, req.Argv)
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

// runLogged runs argv to its end with its output in dir's files and names DNF as the
// lock's holder while it runs.
func runLogged(dir string, held *os.File, argv []string) (runner.Result, error) {
	res := runner.Result{Argv: argv}
	open := func(name string) (*os.File, error) {
		return os.OpenFile(filepath.Join(dir, name), os.O_WRONLY|os.O_CREATE|os.O_TRUNC|syscall.O_NOFOLLOW, 0o600)
	}
	stdout, err := open(stdoutFile)
	if err != nil {
		return res, err
	}
	defer stdout.Close()
	stderr, err := open(stderrFile)
	if err != nil {
		return res, err
	}
	defer stderr.Close()
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = slices.DeleteFunc(runner.Env(), func(kv string) bool { return strings.HasPrefix(kv, SuperviseEnv+"=") })
	cmd.Stdout, cmd.Stderr = stdout, stderr
	if err := cmd.Start(); err != nil {
		return res, err
	}
	_ = lock.WriteHolder(held, cmd.Process.Pid) // only for messages of waiting runs
	err = cmd.Wait()
	var exitErr *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &exitErr):
		res.ExitCode = exitErr.ExitCode()
		if res.ExitCode < 0 { // ended by a signal
			res.ExitCode = 128 + int(exitErr.Sys().(syscall.WaitStatus).Signal())
		}
	default:
		return res, err
	}
	return res, nil
}

func overlaps(a, b []string) bool {
	for _, x := range a {
		if slices.Contains(b, x) {
			return true
		}
	}
	return false
}
