package rpmexact

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"time"

	"github.com/richt/services/pkg/stamp"
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
//	bin/COMMAND    DNF's launcher, when DNF 4's script is started through it (launcher.go)
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

// DefaultTransactionDir keeps the transactions' records on a target.
const DefaultTransactionDir = "/var/lib/richt/transactions"

// keepTransactions is how many transaction directories stay for reading afterwards.
const (
	keepTransactions = 20
	keepUnreported   = 100
)

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

func overlaps(a, b []string) bool {
	for _, x := range a {
		if slices.Contains(b, x) {
			return true
		}
	}
	return false
}
