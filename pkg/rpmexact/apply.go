package rpmexact

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/richt/services/pkg/contract"
	"github.com/richt/services/pkg/timeout"
)

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
