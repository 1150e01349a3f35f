package durable

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/richt/services/pkg/reaction"
	"github.com/richt/services/pkg/stamp"
	"github.com/richt/services/pkg/statedir"
)

func store(t *testing.T) *Store {
	d := t.TempDir()
	return &Store{Dir: d + "/richt", LockDir: d + "/lock"}
}

func TestManagerSyncRecord(t *testing.T) {
	ctx := context.Background()
	s := store(t)
	seen, err := s.ManagerSync()
	require.NoError(t, err)
	require.False(t, seen.Due())
	require.NoError(t, s.ClearManagerSync(ctx, seen), "nothing seen, nothing cleared")
	_, err = s.MarkManagerSyncDue(ctx, "rpm_exact demo: unit\nfiles changed")
	require.NoError(t, err)
	seen, err = s.ManagerSync()
	require.NoError(t, err)
	require.True(t, seen.Due())
	require.Equal(t, []string{"rpm_exact demo: unit files changed"}, seen.Reasons())

	// An entry recorded after the reader looked (while it reloads) survives its clearing.
	_, err = s.MarkManagerSyncDue(ctx, "unit_override changed during the reload")
	require.NoError(t, err)
	require.NoError(t, s.ClearManagerSync(ctx, seen))
	after, err := s.ManagerSync()
	require.NoError(t, err)
	require.Equal(t, []string{"unit_override changed during the reload"}, after.Reasons())
	require.NoError(t, s.ClearManagerSync(ctx, after))
	require.NoFileExists(t, filepath.Join(s.Dir, syncDueFile), "the last entry removes the file")

	// A writer withdraws its own entry only.
	id, err := s.MarkManagerSyncDue(ctx, "ahead of a transaction")
	require.NoError(t, err)
	_, err = s.MarkManagerSyncDue(ctx, "other")
	require.NoError(t, err)
	require.NoError(t, s.RemoveManagerSyncEntry(ctx, id))
	seen, _ = s.ManagerSync()
	require.Equal(t, []string{"other"}, seen.Reasons())
}

func TestManagerSyncConcurrentWriters(t *testing.T) {
	ctx := context.Background()
	s := store(t)
	var wg sync.WaitGroup
	for i := 0; i < 16; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			_, err := s.MarkManagerSyncDue(ctx, fmt.Sprintf("writer %d", i))
			assert.NoError(t, err)
		}(i)
	}
	wg.Wait()
	seen, err := s.ManagerSync()
	require.NoError(t, err)
	assert.Len(t, seen.Entries, 16, "no writer's entry is lost")
}

func TestManagerSyncUnreadableRecord(t *testing.T) {
	ctx := context.Background()
	for name, setup := range map[string]func(path string){
		"corrupt":           func(p string) { require.NoError(t, os.WriteFile(p, []byte("{not json"), 0o644)) },
		"old one-line form": func(p string) { require.NoError(t, os.WriteFile(p, []byte("2026-01-01T00:00:00Z reason\n"), 0o644)) },
		"a directory":       func(p string) { require.NoError(t, os.Mkdir(p, 0o755)) },
	} {
		t.Run(name, func(t *testing.T) {
			s := store(t)
			require.NoError(t, os.MkdirAll(s.Dir, 0o755))
			path := filepath.Join(s.Dir, syncDueFile)
			setup(path)
			seen, err := s.ManagerSync()
			require.NoError(t, err)
			require.True(t, seen.Due(), "an unreadable record is never 'nothing due'")
			assert.Contains(t, seen.Reasons()[0], path)
			if name != "a directory" {
				require.NoError(t, s.ClearManagerSync(ctx, seen))
				seen, _ = s.ManagerSync()
				assert.False(t, seen.Due(), "replaced once a reader reloaded")
			}
		})
	}
}

func TestInsecureStateDirectory(t *testing.T) {
	s := store(t)
	require.NoError(t, os.MkdirAll(s.Dir, 0o755))
	require.NoError(t, os.Chmod(s.Dir, 0o777))
	_, err := s.ManagerSync()
	require.ErrorIs(t, err, statedir.ErrInsecure)
	assert.ErrorContains(t, err, "writable by group or others")
	_, err = s.GetPending("demo.service")
	require.ErrorIs(t, err, statedir.ErrInsecure)
	require.ErrorIs(t, s.SetPending("demo.service", Pending{Reaction: "restart"}), statedir.ErrInsecure)
}

func TestPending(t *testing.T) {
	s := store(t)
	p, err := s.GetPending("demo.service")
	require.NoError(t, err)
	require.Nil(t, p)
	require.NoError(t, s.SetPending("demo.service", Pending{Reaction: "restart", Triggers: []string{"restart_on[0]"}}))
	p, err = s.GetPending("demo.service")
	require.NoError(t, err)
	require.Equal(t, "restart", p.Reaction)
	require.NoError(t, s.ClearPending("demo.service"))
	p, _ = s.GetPending("demo.service")
	require.Nil(t, p)
	// A directory under /var/lib/richt that cannot be created fails clearly.
	bad := &Store{Dir: "/proc/richt-cannot-exist"}
	require.ErrorContains(t, bad.SetPending("x.service", Pending{Reaction: "reload"}), "create")

	// A record this version cannot read is never read as "nothing due", nor guessed: it
	// reads as reaction unknown, naming its file and why.
	for _, content := range []string{"{", `{"reaction":"explode"}`, "", `{"unit":"demo.service","action":"restart"}`, `{"reaction":"unknown"}`} {
		require.NoError(t, os.WriteFile(s.pendingPath("demo.service"), []byte(content), 0o644))
		p, err = s.GetPending("demo.service")
		require.NoError(t, err, content)
		assert.Equal(t, Unknown, p.Reaction, content)
		assert.Equal(t, s.pendingPath("demo.service"), p.Path)
		assert.Contains(t, p.Unreadable, "not a record this version can read", content)
		assert.False(t, p.Reported)
	}
	// Once reported (written back by this version), it reads as written.
	p.Reported = true
	require.NoError(t, s.SetPending("demo.service", *p))
	again, err := s.GetPending("demo.service")
	require.NoError(t, err)
	assert.Equal(t, p.Unreadable, again.Unreadable)
	assert.True(t, again.Reported)
	// A file that cannot be read at all stays an error naming it.
	require.NoError(t, os.Remove(s.pendingPath("demo.service")))
	require.NoError(t, os.Mkdir(s.pendingPath("demo.service"), 0o755))
	_, err = s.GetPending("demo.service")
	require.ErrorContains(t, err, s.pendingPath("demo.service"))
}

func TestOwedOnUnknown(t *testing.T) {
	at := stamp.Stamp{BootID: "b1", Mono: 7}
	unknown := &Pending{Reaction: Unknown, Unreadable: "why", Reported: true, At: stamp.Stamp{BootID: "b1", Mono: 3}}
	// A restart serves whatever was due: the record becomes a plain restart.
	r := Owed(unknown, reaction.Restart, []string{"t"}, at)
	assert.Equal(t, Pending{Reaction: "restart", Triggers: []string{"t"}, Since: unknown.Since, At: at}, r)
	// A reload does not: the unknown record stays as it was.
	assert.Equal(t, *unknown, Owed(unknown, reaction.Reload, nil, at))
}

func TestPendingServedBy(t *testing.T) {
	at := stamp.Stamp{BootID: "b1", Mono: 1000}
	p := Pending{Reaction: "restart", At: at}
	cases := []struct {
		name    string
		now     stamp.Stamp
		running bool
		enter   uint64
		want    bool
	}{
		{"activated after the record", stamp.Stamp{BootID: "b1", Mono: 5000}, true, 1001, true},
		{"activated before the record", stamp.Stamp{BootID: "b1", Mono: 5000}, true, 999, false},
		{"activated at the same microsecond", stamp.Stamp{BootID: "b1", Mono: 5000}, true, 1000, false},
		{"not running", stamp.Stamp{BootID: "b1", Mono: 5000}, false, 2000, false},
		{"rebooted since: active now means started since", stamp.Stamp{BootID: "b2", Mono: 10}, true, 5, true},
		{"never active", stamp.Stamp{BootID: "b1", Mono: 5000}, true, 0, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			assert.Equal(t, c.want, p.ServedBy(c.now, c.running, c.enter))
		})
	}
	assert.False(t, Pending{Reaction: "restart"}.ServedBy(stamp.Stamp{BootID: "b1", Mono: 5}, true, 3), "a record without a stamp (older version) is never served")
}

func TestManagerCheckRecord(t *testing.T) {
	s := store(t)
	_, ok := s.ManagerChecked("dnf", "id1")
	assert.False(t, ok)
	require.NoError(t, s.RecordManagerCheck("dnf", "id1", "4.23.0"))
	require.NoError(t, s.RecordManagerCheck("yum", "id2", "4.23.0"))
	v, ok := s.ManagerChecked("dnf", "id1")
	assert.True(t, ok)
	assert.Equal(t, "4.23.0", v)
	_, ok = s.ManagerChecked("dnf", "id2")
	assert.False(t, ok, "another executable")
	_, ok = s.ManagerChecked("dnf", "")
	assert.False(t, ok, "an unknown identity never matches")
	require.NoError(t, s.RecordManagerCheck("dnf", "id3", "4.24.0"))
	_, ok = s.ManagerChecked("dnf", "id1")
	assert.False(t, ok, "one record per manager")
	_, ok = s.ManagerChecked("yum", "id2")
	assert.True(t, ok)
}

// Records are outside input: whatever a record file holds, reading it never panics, a
// sync record that is not a valid one reads as due, and a pending record either names a
// known reaction, or reads as reaction unknown saying why, or is an error naming its file.
func FuzzRecords(f *testing.F) {
	f.Add([]byte(`{"entries":[{"id":"1","reason":"r","since":"2026-01-01T00:00:00Z"}]}`))
	f.Add([]byte(`{"reaction":"restart","since":"2026-01-01T00:00:00Z","at":{"boot_id":"b","monotonic_us":5}}`))
	f.Add([]byte("2026-01-01T00:00:00Z old one-line record\n"))
	f.Add([]byte{})
	f.Add([]byte(`{"at":{"boot_id":"b","monotonic_us":5},"invocation":"i","time":"2026-01-01T00:00:00Z"}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		s := &Store{Dir: t.TempDir(), LockDir: t.TempDir()}
		require.NoError(t, os.MkdirAll(filepath.Join(s.Dir, "pending"), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(s.Dir, syncDueFile), data, 0o644))
		require.NoError(t, os.WriteFile(s.pendingPath("x.service"), data, 0o644))
		seen, err := s.ManagerSync()
		require.NoError(t, err)
		var rec syncRecord
		if json.Unmarshal(data, &rec) != nil && !seen.Due() {
			t.Fatalf("unparsable sync record %q read as nothing due", data)
		}
		p, err := s.GetPending("x.service")
		if err == nil && (p == nil || (p.Reaction != "restart" && p.Reaction != "reload" && (p.Reaction != Unknown || p.Unreadable == ""))) {
			t.Fatalf("pending record %q read as %+v", data, p)
		}
		if err != nil && !strings.Contains(err.Error(), s.pendingPath("x.service")) {
			t.Fatalf("error does not name the file: %v", err)
		}
		// The reload record: whatever it holds, either none or one with a moment.
		require.NoError(t, os.MkdirAll(filepath.Join(s.Dir, "reloaded"), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(s.Dir, "reloaded", "x.service.json"), data, 0o644))
		if r := s.LastReload("x.service"); r != nil && r.At.IsZero() {
			t.Fatalf("reload record %q read without its moment", data)
		}
	})
}

// Owed merges a new reaction into a unit's record: the stronger reaction, the earlier
// record's Since, and always the new stamp, so the record is never older than the last
// change it covers.
func TestOwed(t *testing.T) {
	since := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	at := stamp.Stamp{BootID: "b", Mono: 9}
	two := stamp.Stamp{BootID: "b", Mono: 2}
	cases := []struct {
		name     string
		earlier  *Pending
		kind     reaction.Kind
		want     string
		wantAt   stamp.Stamp
		reloadAt *stamp.Stamp
	}{
		{"no record: the kind", nil, reaction.Reload, "reload", at, nil},
		{"a reload owed on a restart: the restart keeps its stamp, the reload is stamped now", &Pending{Reaction: "restart", Since: since, At: two}, reaction.Reload, "restart", two, &at},
		{"a restart owed on a reload: the restart, stamped now", &Pending{Reaction: "reload", Since: since, At: two}, reaction.Restart, "restart", at, nil},
		{"a restart owed on a restart with a reload: one restart, stamped now", &Pending{Reaction: "restart", Since: since, At: two, ReloadAt: &two}, reaction.Restart, "restart", at, nil},
		{"a reload owed on a reload: stamped now", &Pending{Reaction: "reload", Since: since, At: two}, reaction.Reload, "reload", at, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := Owed(c.earlier, c.kind, []string{"service demo"}, at)
			assert.Equal(t, c.want, p.Reaction)
			assert.Equal(t, c.wantAt, p.At)
			assert.Equal(t, c.reloadAt, p.ReloadAt)
			assert.Equal(t, []string{"service demo"}, p.Triggers)
			if c.earlier != nil {
				assert.Equal(t, since, p.Since, "due since the earlier record")
			} else {
				assert.WithinDuration(t, time.Now(), p.Since, time.Hour)
			}
		})
	}
}

// A restart record with a later reload: an activation between the two serves the restart
// and leaves the reload, stamped when its change was made.
func TestUnserved(t *testing.T) {
	now := stamp.Stamp{BootID: "b", Mono: 100}
	reloadAt := stamp.Stamp{BootID: "b", Mono: 50}
	rec := Pending{Reaction: "restart", Since: time.Now(), At: stamp.Stamp{BootID: "b", Mono: 10}, ReloadAt: &reloadAt}
	assert.Equal(t, &rec, rec.Unserved(now, true, 5), "active since before the restart was recorded: all of it")
	left := rec.Unserved(now, true, 30)
	if assert.NotNil(t, left) {
		assert.Equal(t, "reload", left.Reaction)
		assert.Equal(t, reloadAt, left.At)
		assert.Nil(t, left.ReloadAt)
	}
	assert.Nil(t, rec.Unserved(now, true, 60), "active since after both: served")
	assert.Equal(t, &rec, rec.Unserved(now, false, 60), "not running: nothing served")
	assert.Nil(t, rec.Unserved(stamp.Stamp{BootID: "other", Mono: 1}, true, 1), "a later boot serves everything")
}

// Merge drops what the observed activation served before it merges, and keeps an earlier
// record whole when the writer observed nothing; either way the next observer's Unserved
// reaches the same reaction.
func TestMerge(t *testing.T) {
	since := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	two, at, later := stamp.Stamp{BootID: "b", Mono: 2}, stamp.Stamp{BootID: "b", Mono: 9}, stamp.Stamp{BootID: "b", Mono: 20}
	restart := &Pending{Reaction: "restart", Since: since, At: two}
	activeSince5 := &Activation{Now: stamp.Stamp{BootID: "b", Mono: 10}, Running: true, EnterMono: 5}
	cases := []struct {
		name    string
		earlier *Pending
		seen    *Activation
		kind    reaction.Kind
		want    string
		since   bool // due since the earlier record
		// next is what an observer at later, with the unit active since 5, finds owed.
		next string
	}{
		{"no record", nil, activeSince5, reaction.Reload, "reload", false, "reload"},
		{"served restart, observed: dropped, only the reload", restart, activeSince5, reaction.Reload, "reload", false, "reload"},
		{"served restart, not observed: kept, its stamp still says served", restart, nil, reaction.Reload, "restart", true, "reload"},
		{"unserved restart, observed: kept", restart, &Activation{Now: stamp.Stamp{BootID: "b", Mono: 10}, Running: false}, reaction.Reload, "restart", true, "restart"},
		{"served restart, a new restart: owed again either way", restart, nil, reaction.Restart, "restart", true, "restart"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := Merge(c.earlier, c.seen, c.kind, []string{"t"}, at)
			assert.Equal(t, c.want, p.Reaction)
			if c.since {
				assert.Equal(t, since, p.Since)
			} else {
				assert.NotEqual(t, since, p.Since)
			}
			running := c.seen == nil || c.seen.Running
			left := p.Unserved(later, running, 5)
			got := "none"
			if left != nil {
				got = left.Reaction
			}
			assert.Equal(t, c.next, got)
		})
	}
}

// The last verified reload round-trips; a missing, corrupt or foreign-writable record
// reads as none (it could only make a reload owed look served).
func TestReloadedRecord(t *testing.T) {
	s := store(t)
	assert.Nil(t, s.LastReload("nginx.service"), "none yet")
	r := Reloaded{At: stamp.Stamp{BootID: "b", Mono: 7}, Invocation: "inv", Triggers: []string{"config:main"}, Time: time.Unix(5, 0).UTC()}
	require.NoError(t, s.SetReloaded("nginx.service", r))
	assert.Equal(t, &r, s.LastReload("nginx.service"))

	path := filepath.Join(s.Dir, "reloaded", "nginx.service.json")
	require.NoError(t, os.WriteFile(path, []byte(`{"at":`), 0o644))
	assert.Nil(t, s.LastReload("nginx.service"), "corrupt")
	require.NoError(t, s.SetReloaded("nginx.service", r))
	require.NoError(t, os.Chmod(path, 0o666))
	assert.Nil(t, s.LastReload("nginx.service"), "writable by others")
}
