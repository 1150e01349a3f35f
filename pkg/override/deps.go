package override

import (
	"context"

	"github.com/richt/services/pkg/durable"
	"github.com/richt/services/pkg/lock"
	"github.com/richt/services/pkg/rootpath"
	"github.com/richt/services/pkg/runner"
)

// UnitDir is where owned units and drop-ins live: the administrator's directory, which
// has the highest priority of systemd's persistent unit directories.
const UnitDir = "/etc/systemd/system"

// SyncRecorder records that systemd's manager must be reloaded (package durable).
type SyncRecorder interface {
	MarkManagerSyncDue(ctx context.Context, reason string) (string, error)
	ManagerSync() (durable.Sync, error)
	ClearManagerSync(ctx context.Context, seen durable.Sync) error
	RemoveManagerSyncEntry(ctx context.Context, id string) error
}

// Deps are the module's side effects.
type Deps struct {
	Runner runner.Runner
	Sync   SyncRecorder
	// Root is the filesystem root ("" for /); tests point it at a temporary directory.
	Root string
	// Lock serializes the runs for one unit with each other and with systemd_lifecycle's
	// (package lock); nil runs unserialized, for tests of a single run.
	Lock lock.Func
}

func (d Deps) full(p string) string { return rootpath.Join(d.Root, p) }
