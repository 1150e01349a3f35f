package rpmexact

import (
	"context"
	"github.com/richt/services/pkg/stamp"
	"time"

	"github.com/richt/services/pkg/runner"
)

// SyncRecorder records that systemd's manager must be reloaded (package durable).
type SyncRecorder interface {
	MarkManagerSyncDue(ctx context.Context, reason string) (id string, err error)
	RemoveManagerSyncEntry(ctx context.Context, id string) error
}

// PlacedSyncRecorder records a manager sync together with when the change's unit files
// were all in place (durable.Store.MarkManagerSyncPlaced), so a reload that began after
// that (a package scriptlet's) serves it.
type PlacedSyncRecorder interface {
	MarkManagerSyncPlaced(ctx context.Context, reason string, placed stamp.Stamp) (id string, err error)
}

// ManagerMemo remembers accepted manager checks by the executable's identity (package
// durable), so repeated transactions do not pay 0.25–0.4 s for `MANAGER --version` while
// the manager stays the same file.
type ManagerMemo interface {
	ManagerChecked(manager, identity string) (string, bool)
	RecordManagerCheck(manager, identity, version string) error
}

// QueryCache remembers rpm query answers while the files they depend on are unchanged
// (QueryMemo).
type QueryCache interface {
	Lookup(name string) (Installed, bool)
	Record(name string, inst Installed, db Database, queried time.Time) error
}

// Deps are the module's side effects. Memo and Identify are optional: without them every
// transaction checks the manager. Queries is optional: without it every run asks rpm.
// Txn runs the transactions (Detached in the module, Inline in tests).
type Deps struct {
	Runner   runner.Runner
	Txn      Transactor
	Memo     ManagerMemo
	Identify func(command string) (string, error)
	Queries  QueryCache
	// Files, when set, lets the manager check read DNF 4's version from its files before
	// it asks `dnf --version` (QuickManagerVersion).
	Files *ManagerFiles
}
