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

// Applied is what Apply did.
type Applied struct {
	Report
	// After is each requested name's builds once the transactions ended (the plan's
	// expectation where they could not be read).
	After map[string][]string
	// Commands are the transactions started, in order.
	Commands [][]string
}

// Apply carries out exactly the plan's steps, in a real run: the manager check the plan
// made is remembered, the install transaction runs, then, only once it succeeded, the
// removal; then the requested state must hold. A converged plan only remembers the rpm
// answers it read. It decides nothing: a plan made in check mode is the plan applied.
// With the detached transaction runner (Detached), a module run goes through Hold and
// Finish instead, which begin the transaction's record before planning.
func (d Deps) Apply(ctx context.Context, p Plan) (Applied, error) {
	r := &run{Deps: d, want: p.Want, limit: p.Want.Timeout, res: &Report{Moved: []Move{}}}
	r.planned(p)
	var err error
	if p.Changes() {
		err = r.apply(ctx)
	} else {
		r.remember(p.observed)
	}
	return Applied{Report: *r.res, After: r.after, Commands: r.commands}, err
}

// apply is Apply within a module run, folding every outcome into the run's result.
func (r *run) apply(ctx context.Context) error {
	if err := r.rememberManager(r.want.Manager, r.plan.managerFresh, r.plan.ManagerVersion); err != nil {
		r.res.Changed = false
		return err
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
