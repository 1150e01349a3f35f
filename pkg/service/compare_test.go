package service

import (
	"fmt"
	"slices"
	"strings"
)

// planRule names the one way a real run's plan may differ from the plan check mode
// reported for the same host. Everything else a real run does is an entry of that plan:
// the difference is never a decision the real run makes on its own, but what a step's
// outcome says happened (docs/reliability.md, "The plan and the run").
type planRule string

const (
	// ruleSamePlan: the real run's plan is check mode's, entry for entry.
	ruleSamePlan planRule = "same plan"
	// ruleScriptletServed: a package transaction's scriptlet reloaded the manager after
	// the unit files were in place; the process step's outcome says so
	// (daemon_reload_served), and its plan lacks the daemon-reload check mode planned,
	// which cannot see a reload a transaction not yet run will do.
	ruleScriptletServed planRule = "scriptlet served"
	// ruleRollbackAfterFailure: a step failed in the real run that check mode could not
	// foresee (a process that does not come up, a transaction DNF refuses). Up to the
	// failed step the plan is check mode's; after it come only the reaction recorded
	// ahead for a step that changed nothing, withdrawn, and the rollback's entries
	// (`rollback: …`), whose every action check mode's `rollback` named.
	ruleRollbackAfterFailure planRule = "rollback after a failure"
)

// comparePlans compares a real run's plan (applied) with check mode's (planned) under
// rule; served reports whether a unit's process step says a scriptlet served its manager
// reload (its typed outcome). nil: they agree as the rule allows.
func comparePlans(rule planRule, planned, applied []string, served func(unit string) bool) error {
	switch rule {
	case ruleSamePlan:
		return sameEntries(planned, applied)
	case ruleScriptletServed:
		want := slices.DeleteFunc(slices.Clone(planned), func(e string) bool {
			unit, step, ok := strings.Cut(strings.TrimPrefix(e, "process "), ": ")
			return ok && strings.HasPrefix(e, "process ") && step == "daemon-reload" && served(unit)
		})
		return sameEntries(want, applied)
	case ruleRollbackAfterFailure:
		at := slices.IndexFunc(applied, func(e string) bool { return !slices.Contains(planned, e) })
		if at < 0 {
			return fmt.Errorf("%s: the real run did nothing check mode did not plan: no rollback", rule)
		}
		if at > len(planned) {
			return fmt.Errorf("%s: the real run's plan is longer than check mode's before it fails", rule)
		}
		if err := sameEntries(planned[:at], applied[:at]); err != nil {
			return fmt.Errorf("%s: before the failure: %w", rule, err)
		}
		for _, e := range applied[at:] {
			if !strings.HasPrefix(e, "rollback: ") && !strings.HasPrefix(e, "withdraw-pending ") {
				return fmt.Errorf("%s: after the failure the real run did %q, which is neither a withdrawn prediction nor the rollback", rule, e)
			}
		}
		return nil
	}
	return fmt.Errorf("no comparison rule %q", rule)
}

// sameEntries: want and got list the same entries in the same order.
func sameEntries(want, got []string) error {
	if slices.Equal(want, got) {
		return nil
	}
	return fmt.Errorf("the real run's plan differs from check mode's:\ncheck mode: %s\nreal run:   %s",
		strings.Join(want, " | "), strings.Join(got, " | "))
}
