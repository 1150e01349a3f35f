package systemd

import (
	"context"
	"errors"
	"fmt"

	"github.com/richt/services/pkg/durable"
)

// Reloader reloads a systemd manager's configuration (daemon-reload): every backend of
// Systemd is one.
type Reloader interface {
	DaemonReload(ctx context.Context) error
}

// SyncClearer settles the durable manager-sync records (package durable) once a reload has
// served them.
type SyncClearer interface {
	ClearManagerSync(ctx context.Context, seen durable.Sync) error
}

// ErrReload marks a ReloadManager error as the reload's own (nothing was cleared), as
// against an error settling the records after a reload that happened.
var ErrReload = errors.New("daemon-reload")

// ReloadManager reloads the manager and then clears the manager-sync entries that were
// read before the reload (seen): the reload served them. An entry recorded while the reload
// ran stays due, and a failed reload clears nothing, so a later run still syncs. This is
// the one place where a reload settles the records; unit_override and systemd_lifecycle
// both sync through it.
func ReloadManager(ctx context.Context, m Reloader, records SyncClearer, seen durable.Sync) error {
	if err := m.DaemonReload(ctx); err != nil {
		return fmt.Errorf("%w: %w", ErrReload, err)
	}
	return records.ClearManagerSync(ctx, seen)
}

// SyncRecords are the durable manager-sync records as a reload reads and settles them.
type SyncRecords interface {
	SyncClearer
	ManagerSync() (durable.Sync, error)
}

// ReloadSeen reads the manager-sync records and reloads the manager, settling the entries it
// read (ReloadManager). A record that cannot be read was not served knowingly: it is left
// for systemd_lifecycle, which names it.
func ReloadSeen(ctx context.Context, m Reloader, records SyncRecords) error {
	seen, err := records.ManagerSync()
	if err != nil {
		seen = durable.Sync{}
	}
	return ReloadManager(ctx, m, records, seen)
}
