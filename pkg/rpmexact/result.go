package rpmexact

import (
	"strings"

	"github.com/richt/services/pkg/ansible"
	"github.com/richt/services/pkg/contract"
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
	// Plan is the run's plan (Plan.Names): carried out in a real run, reported in check
	// mode, the same list either way.
	Plan []string `json:"plan"`
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
