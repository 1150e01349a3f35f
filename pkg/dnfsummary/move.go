package dnfsummary

import "errors"

// Action is what a transaction does to one package.
type Action string

// The actions a DNF 4 transaction table can show.
const (
	ActionInstall   Action = "install"
	ActionUpgrade   Action = "upgrade"
	ActionDowngrade Action = "downgrade"
	ActionRemove    Action = "remove"
	ActionReinstall Action = "reinstall"
	// ActionObsolete is an installed package that leaves the system because the package
	// listed just before it obsoletes it (DNF's "replacing" line). DNF prints no repository
	// for it, so its Move has an empty Repo.
	ActionObsolete Action = "obsolete"
)

// Known reports whether a is one of the actions Parse returns.
func (a Action) Known() bool {
	switch a {
	case ActionInstall, ActionUpgrade, ActionDowngrade, ActionRemove, ActionReinstall, ActionObsolete:
		return true
	}
	return false
}

// Move is one package the transaction would change.
type Move struct {
	Name string
	Arch string
	// EVR is written as DNF prints it: [EPOCH:]VERSION-RELEASE, the epoch only when it is
	// not zero.
	EVR string
	// Repo is the repository id the package comes from; "@commandline" for a local file.
	// For a removal DNF prints the repository it was installed from, prefixed with "@"
	// ("@System" when unknown).
	Repo   string
	Action Action
}

// ErrNoSummary means the output holds neither a transaction table nor "Nothing to do.":
// DNF failed before it resolved a transaction (an unknown package, a dependency problem)
// or ran with -q, which hides the table.
var ErrNoSummary = errors.New("no DNF transaction summary")

// ErrFormat is wrapped by every error about a table Parse cannot read.
var ErrFormat = errors.New("unreadable DNF transaction table")
