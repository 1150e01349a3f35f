package service

import (
	"context"
	"slices"

	"github.com/richt/services/pkg/ansible"
	"github.com/richt/services/pkg/rollback"
	"github.com/richt/services/pkg/wiring"
)

// The service's steps talk to one another in these types: a step's plan says what the
// service needs of it through its interface (PackagesPlan, FilePlan), never through a
// type assertion, and what a step did reaches the later steps as an Outcome, never as
// its result's map. The maps Ansible reports are built from the steps' results in one
// place (result.go).

// Outcome is what one step did (read from its result once it ran) or will do (as its
// plan predicts): whether it changed something, the contract.Change it made (package
// contract: what a later task reads), and, for the packages step, which packages moved.
type Outcome struct {
	wiring.Outcome
	// Moved are the packages the step moved, by name (the packages step only). A
	// packages result that lists no entries (it failed before them) moved every package
	// when it changed anything: Listed is false then.
	Moved  []string
	Listed bool
}

// moved reports whether the packages outcome moved the package name.
func (o Outcome) moved(name string) bool {
	if !o.Changed {
		return false
	}
	return !o.Listed || slices.Contains(o.Moved, name)
}

// Step is one step's plan in hand. It may hold what keeps the plan current (a lock) until
// it runs or is released. What the service needs of a plan beyond running it, the
// interface declares (Moves, Befores, Path); a step of another kind answers with nothing
// (plain).
type Step interface {
	// Names are the plan's steps as the step's result lists them (`plan`).
	Names() []string
	// Changes: the plan changes something. UnitFiles: it changes unit files.
	Changes() bool
	UnitFiles() bool
	// Err is why the plan could not be made; nil when it was.
	Err() error
	// Run carries out exactly the plan (in check mode it reports it) and returns the
	// step's result, as the module returns it; it releases what the plan held. req is a
	// request for the same arguments the plan was made from.
	Run(ctx context.Context, req *ansible.Request) (any, error)
	// Release lets go of what the plan holds without running it; after Run it does
	// nothing.
	Release()
	// Moves are the packages a packages plan moves, by name; known is false when the plan
	// cannot say (then it counts as moving every package when it changes anything).
	Moves() (names []string, known bool)
	// Befores are the packages a packages plan moves, with the builds they have (what a
	// rollback records); known is false when the plan cannot say.
	Befores() (pkgs []rollback.Package, known bool)
	// Path is the file a unit file's or drop-in's plan writes; "" for other steps.
	Path() string
}

// plain answers Step's questions with nothing: no package it can name, no builds, no
// path. Every step embeds it and answers the questions its plan can (a packages plan
// its moves, a file's plan its path).
type plain struct{}

func (plain) Moves() ([]string, bool)             { return nil, false }
func (plain) Befores() ([]rollback.Package, bool) { return nil, false }
func (plain) Path() string                        { return "" }
