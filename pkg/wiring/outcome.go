package wiring

import "github.com/richt/services/pkg/contract"

// Outcome is what one of the service's steps did to one part (or, from its plan, will
// do), as a process's trigger carries it: whether the part changed, and what the change
// tells a later task (package contract). Nothing else of the step's result travels: a
// key a step's result happens to have means nothing to the process it reaches.
type Outcome struct {
	Changed bool
	contract.Change
}

// Unchanged is the outcome of a part whose step did not run or changed nothing.
var Unchanged = Outcome{}

// Registered is the outcome as a registered result, the form systemd_lifecycle reads
// its triggers in (contract.Registered).
func (o Outcome) Registered() map[string]any { return contract.Registered(o.Changed, o.Change) }

// Outcomes are the service's parts' outcomes, keyed by reference (a part missing counts
// as unchanged).
type Outcomes map[Ref]Outcome
