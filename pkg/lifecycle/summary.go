package lifecycle

import (
	"fmt"
	"strings"

	"github.com/richt/services/pkg/reaction"
)

// Summary is the one line a person reads to learn what the run did to the unit and why:
// "demo.service: reload (config:env)", "demo.service: restart (package:demo)",
// "demo.service: nothing (converged)"; in check mode "demo.service: would reload (…)".
// The collection's action plugin prints it at the default verbosity, so whether a
// process was reloaded, restarted or left alone (what this collection exists to get
// right) never needs `-v` or a registered variable. It is built from the result only,
// after the run, so it says what happened, not what was planned (a failed run says how
// far it got).
func Summary(res *Result, check bool, failed bool) string {
	var what []string
	started := false
	for _, a := range res.Actions {
		started = started || Step(a) == StepStart
		what = append(what, a)
	}
	verb := strings.Join(what, ", ")
	why := reasons(res, started)
	switch {
	case failed && verb == "":
		return res.Unit + ": failed before any change"
	case failed:
		return fmt.Sprintf("%s: %s, then failed", res.Unit, verb)
	case verb == "":
		verb = "nothing"
		if why == "" {
			why = "converged"
		}
	case check:
		verb = "would " + verb
	}
	if why == "" {
		return res.Unit + ": " + verb
	}
	return fmt.Sprintf("%s: %s (%s)", res.Unit, verb, why)
}

// reasons says why: the changed triggers by name, a reaction due from an earlier run, a
// restart a package scriptlet already did, a reaction a stopped unit does not need, a
// start.
func reasons(res *Result, started bool) string {
	var out []string
	switch res.Reaction {
	case reaction.None, "":
		// A start loads every change: no restart or reload after it, and no list of
		// what changed (on a first install, everything did).
		if started {
			out = append(out, "was stopped")
		}
	case reaction.Restart, reaction.Reload:
		out = append(out, res.Triggers...)
	case reaction.Served:
		out = append(out, "the restart "+strings.Join(res.Triggers, ", ")+" asked for was already done by the package's scriptlet")
	case reaction.Ignored:
		out = append(out, strings.Join(res.Triggers, ", ")+" changed; the unit is not to run, so no reaction")
	}
	return strings.Join(out, "; ")
}
