package rpmexact

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/richt/services/pkg/ansible"
	"github.com/richt/services/pkg/runner/runnertest"
)

// memoFixture is a fake rpm on PATH, a database directory and a configuration directory.
type memoFixture struct {
	memo   *QueryMemo
	db     Database
	rpm    string
	config string
}

func newMemoFixture(t *testing.T) *memoFixture {
	root := t.TempDir()
	bin, dbDir, config := filepath.Join(root, "bin"), filepath.Join(root, "rpmdb"), filepath.Join(root, "etc-rpm")
	for _, d := range []string{bin, dbDir, config} {
		require.NoError(t, os.Mkdir(d, 0o755))
	}
	require.NoError(t, os.WriteFile(filepath.Join(bin, "rpm"), []byte("#!/bin/sh\n"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dbDir, "rpmdb.sqlite"), []byte("db"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(config, "macros.dist"), []byte("%dist .el10\n"), 0o644))
	t.Setenv("PATH", bin)
	return &memoFixture{
		memo:   &QueryMemo{Dir: filepath.Join(root, "memo"), Config: []string{config, filepath.Join(root, "home/.rpmmacros")}},
		db:     Database{Path: dbDir, Backend: "sqlite"},
		rpm:    filepath.Join(bin, "rpm"),
		config: config,
	}
}

// later is a query start far enough after the fixture's files were written.
func later() time.Time { return time.Now().Add(time.Hour) }

var installedV1 = Installed{NEVRAs: []string{"demo-0:1.0-1.noarch"}}

func TestQueryMemoRemembersUntilAFileOfTheKeyChanges(t *testing.T) {
	changes := []struct {
		name   string
		change func(t *testing.T, f *memoFixture)
	}{
		{"database written", func(t *testing.T, f *memoFixture) {
			appendTo(t, filepath.Join(f.db.Path, "rpmdb.sqlite"), "x")
		}},
		{"write-ahead log appears", func(t *testing.T, f *memoFixture) {
			require.NoError(t, os.WriteFile(filepath.Join(f.db.Path, "rpmdb.sqlite-wal"), nil, 0o644))
		}},
		{"write-ahead log written", func(t *testing.T, f *memoFixture) {
			appendTo(t, filepath.Join(f.db.Path, "rpmdb.sqlite-wal"), "frame")
		}},
		{"database replaced by one of the same size", func(t *testing.T, f *memoFixture) {
			p := filepath.Join(f.db.Path, "rpmdb.sqlite")
			require.NoError(t, os.WriteFile(p+".new", []byte("DB"), 0o644))
			require.NoError(t, os.Rename(p+".new", p))
		}},
		{"rpm executable replaced", func(t *testing.T, f *memoFixture) {
			appendTo(t, f.rpm, "# another rpm\n")
		}},
		{"configuration file edited", func(t *testing.T, f *memoFixture) {
			appendTo(t, filepath.Join(f.config, "macros.dist"), "%_dbpath /elsewhere\n")
		}},
		{"configuration file added", func(t *testing.T, f *memoFixture) {
			require.NoError(t, os.WriteFile(filepath.Join(f.config, "macros.db"), []byte("%_dbpath /elsewhere\n"), 0o644))
		}},
		{"user macros appear", func(t *testing.T, f *memoFixture) {
			p := f.memo.Config[1]
			require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
			require.NoError(t, os.WriteFile(p, []byte("%_dbpath /elsewhere\n"), 0o644))
		}},
		{"RPM_CONFIGDIR set", func(t *testing.T, f *memoFixture) {
			t.Setenv("RPM_CONFIGDIR", "/opt/rpm")
		}},
	}
	for _, c := range changes {
		t.Run(c.name, func(t *testing.T) {
			f := newMemoFixture(t)
			require.NoError(t, os.WriteFile(filepath.Join(f.db.Path, "rpmdb.sqlite-wal"), nil, 0o644))
			require.NoError(t, f.memo.Record("demo", installedV1, f.db, later()))
			got, ok := f.memo.Lookup("demo")
			require.True(t, ok, "unchanged files: remembered")
			assert.Equal(t, installedV1, got)
			_, ok = f.memo.Lookup("other")
			assert.False(t, ok, "records are per package name")

			c.change(t, f)
			_, ok = f.memo.Lookup("demo")
			assert.False(t, ok, "after the change the answer must come from rpm again")
		})
	}
}

func TestQueryMemoSurvivesReadersOfTheLog(t *testing.T) {
	// SQLite readers running as root fchown the write-ahead log to the database's owner:
	// its ctime moves although nothing was written.
	f := newMemoFixture(t)
	wal := filepath.Join(f.db.Path, "rpmdb.sqlite-wal")
	require.NoError(t, os.WriteFile(wal, nil, 0o644))
	require.NoError(t, f.memo.Record("demo", installedV1, f.db, later()))
	time.Sleep(10 * time.Millisecond)
	require.NoError(t, os.Chmod(wal, 0o644)) // moves the ctime like fchown, for any user
	_, ok := f.memo.Lookup("demo")
	assert.True(t, ok)
}

func TestQueryMemoRecordsOnlyWhatItCanTrust(t *testing.T) {
	f := newMemoFixture(t)
	err := f.memo.Record("demo", installedV1, f.db, time.Now())
	assert.ErrorContains(t, err, "before the query", "files written just now could change again within the same clock tick")
	assert.NoFileExists(t, f.memo.path("demo"))

	for _, db := range []Database{{Path: f.db.Path, Backend: "ndb"}, {Path: f.db.Path, Backend: "%{_db_backend}"}, {Path: "relative", Backend: "sqlite"}, {}} {
		assert.ErrorContains(t, f.memo.Record("demo", installedV1, db, later()), "not remembered", db)
	}
	assert.NoFileExists(t, f.memo.path("demo"))

	require.NoError(t, f.memo.Record("demo", Installed{}, f.db, later()))
	got, ok := f.memo.Lookup("demo")
	require.True(t, ok)
	assert.Empty(t, got.NEVRAs, "not installed is remembered too")
}

func TestQueryMemoIgnoresBadRecords(t *testing.T) {
	f := newMemoFixture(t)
	require.NoError(t, f.memo.Record("demo", installedV1, f.db, later()))
	p := f.memo.path("demo")

	require.NoError(t, os.WriteFile(p, []byte(`{"key":`), 0o644))
	_, ok := f.memo.Lookup("demo")
	assert.False(t, ok, "a truncated record")

	require.NoError(t, f.memo.Record("demo", installedV1, f.db, later()))
	if os.Geteuid() == 0 {
		require.NoError(t, os.Chown(p, 4242, 4242))
		_, ok = f.memo.Lookup("demo")
		assert.False(t, ok, "a record owned by neither root nor this user")
	}
}

// memoCache is a scripted QueryCache.
type memoCache struct {
	have     *Installed
	recorded []Database
}

func (c *memoCache) Lookup(string) (Installed, bool) {
	if c.have == nil {
		return Installed{}, false
	}
	return *c.have, true
}

func (c *memoCache) Record(_ string, _ Installed, db Database, _ time.Time) error {
	c.recorded = append(c.recorded, db)
	return nil
}

func TestHandlerUsesTheQueryMemo(t *testing.T) {
	run := func(t *testing.T, cache *memoCache, calls []runnertest.Call, args map[string]any) map[string]any {
		t.Helper()
		s := runnertest.New(t, calls...)
		data, _ := json.Marshal(args)
		h := Handler(Deps{Runner: s, Txn: Inline{Runner: s, Sync: &recorder{}, UnitDirs: []string{t.TempDir()}}, Queries: cache})
		var res map[string]any
		require.NoError(t, json.Unmarshal(ansible.Execute(context.Background(), Spec(), []string{"-"}, bytesReader(data), h), &res))
		assert.Equal(t, len(calls), s.Count(), "every scripted command ran")
		return res
	}
	converged := map[string]any{"name": "demo", "version": "0:1.0-1.noarch"}

	t.Run("remembered answer: no process at all", func(t *testing.T) {
		res := run(t, &memoCache{have: &installedV1}, nil, converged)
		assert.Equal(t, false, res["changed"])
		assert.Equal(t, ObservedMemo, res["observed"])
		assert.Equal(t, []any{"demo-0:1.0-1.noarch"}, res["before"])
	})
	t.Run("no memo: one query, remembered with its database", func(t *testing.T) {
		cache := &memoCache{}
		res := run(t, cache, []runnertest.Call{{Argv: rpmQ("demo"), Stdout: v1Out}}, converged)
		assert.Equal(t, ObservedQuery, res["observed"])
		assert.Equal(t, []Database{{Path: "/var/lib/rpm", Backend: "sqlite"}}, cache.recorded)
	})
	t.Run("check mode reads the memo but records nothing", func(t *testing.T) {
		cache := &memoCache{}
		run(t, cache, []runnertest.Call{{Argv: rpmQ("demo"), Stdout: v1Out}}, map[string]any{"name": "demo", "_ansible_check_mode": true})
		assert.Empty(t, cache.recorded)
	})
	t.Run("a run that acts remembers nothing: its transaction changes the database", func(t *testing.T) {
		cache := &memoCache{}
		res := run(t, cache, append([]runnertest.Call{
			{Argv: rpmQ("demo"), Stdout: v1Out},
			ownsDemo,
			{Argv: []string{"dnf", "--version"}, Stdout: "4.23.0\n"}},
			txn(d1, d2, []string{"demo-0:2.0-1.noarch"}, runnertest.Call{Argv: []string{"dnf", "-y", "install-nevra", "--", "demo-0:2.0-1.noarch"}})...,
		), map[string]any{"name": "demo", "version": "0:2.0-1.noarch"})
		assert.Nil(t, res["failed"], res["msg"])
		assert.Empty(t, cache.recorded)
	})
	t.Run("a transaction is verified by rpm, never by the memo", func(t *testing.T) {
		cache := &memoCache{have: &installedV1}
		res := run(t, cache, append([]runnertest.Call{
			ownsDemo,
			{Argv: []string{"dnf", "--version"}, Stdout: "4.23.0\n"}},
			txn(d1, d2, []string{"demo-0:2.0-1.noarch"}, runnertest.Call{Argv: []string{"dnf", "-y", "install-nevra", "--", "demo-0:2.0-1.noarch"}})...,
		), map[string]any{"name": "demo", "version": "0:2.0-1.noarch"})
		assert.Nil(t, res["failed"], res["msg"])
		assert.Equal(t, []any{"demo-0:2.0-1.noarch"}, res["after"])
		assert.Empty(t, cache.recorded, "the answer after a transaction is not remembered: the database just changed")
	})
}

func appendTo(t *testing.T, path, s string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	require.NoError(t, err)
	_, err = f.WriteString(s)
	require.NoError(t, err)
	require.NoError(t, f.Close())
}

func TestSettled(t *testing.T) {
	queried := time.Date(2026, 12, 1, 10, 0, 0, 500_000_000, time.UTC)
	tick := settleFor(memoKey{fine: true})
	require.Greater(t, tick, time.Duration(0))
	require.Less(t, tick, Settle, "two ticks of the coarse clock")
	cases := []struct {
		name    string
		key     memoKey
		trusted bool
	}{
		{"fine stamps, older than two ticks", memoKey{newest: queried.Add(-tick - time.Millisecond), fine: true}, true},
		{"fine stamps, within two ticks", memoKey{newest: queried.Add(-tick / 2), fine: true}, false},
		{"fine stamps, after the query began", memoKey{newest: queried.Add(time.Millisecond), fine: true}, false},
		// A file system keeping whole seconds: a second write in the same second looks
		// like the first.
		{"whole seconds, a second old", memoKey{newest: queried.Truncate(time.Second).Add(-time.Second)}, false},
		{"whole seconds, older than Settle", memoKey{newest: queried.Add(-Settle - time.Second).Truncate(time.Second)}, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := settled(c.key, queried)
			if c.trusted {
				assert.NoError(t, err)
			} else {
				assert.ErrorContains(t, err, "before the query")
			}
		})
	}
}

func TestKeyTellsWholeSecondStampsFromFine(t *testing.T) {
	f := newMemoFixture(t)
	require.NoError(t, os.WriteFile(filepath.Join(f.db.Path, "rpmdb.sqlite-wal"), nil, 0o644))
	k, err := f.memo.key(f.db)
	require.NoError(t, err)
	assert.True(t, k.fine, "the test's files have nanosecond timestamps")
	whole := time.Now().Add(-time.Hour).Truncate(time.Second)
	require.NoError(t, os.Chtimes(filepath.Join(f.db.Path, "rpmdb.sqlite-wal"), whole, whole))
	k, err = f.memo.key(f.db)
	require.NoError(t, err)
	assert.False(t, k.fine, "a log modified at a whole second: Settle applies")
}

// rpm reads macros from more places than /etc/rpm and /usr/lib/rpm/macros(.d) (rpm
// --showrc, "Macro path"): the per-platform file of its target, the vendor's macros and
// rpmrc, the file attributes, and /etc/rpm/%{_target}/macros. Any of them can redefine
// %_dbpath, so each is part of the key: edited, appearing or going, it changes the key.
// The default configuration follows RPM_CONFIGDIR, as rpm does.
func TestDefaultQueryMemoKeysRPMsWholeMacroPath(t *testing.T) {
	changes := []struct {
		name   string
		change func(t *testing.T, confdir string)
	}{
		{"platform macros of the target edited", func(t *testing.T, confdir string) {
			appendTo(t, filepath.Join(confdir, "platform/x86_64-linux/macros"), "%_dbpath /elsewhere\n")
		}},
		{"platform macros appear", func(t *testing.T, confdir string) {
			require.NoError(t, os.WriteFile(filepath.Join(confdir, "platform/aarch64-linux/macros"), []byte("%_dbpath /elsewhere\n"), 0o644))
		}},
		{"vendor macros edited", func(t *testing.T, confdir string) {
			appendTo(t, filepath.Join(confdir, "redhat/macros"), "%_dbpath /elsewhere\n")
		}},
		{"vendor macros appear", func(t *testing.T, confdir string) {
			require.NoError(t, os.WriteFile(filepath.Join(confdir, "debian/macros"), []byte("%_dbpath /elsewhere\n"), 0o644))
		}},
		{"vendor rpmrc edited", func(t *testing.T, confdir string) {
			appendTo(t, filepath.Join(confdir, "redhat/rpmrc"), "include: /elsewhere\n")
		}},
		{"file attributes edited", func(t *testing.T, confdir string) {
			appendTo(t, filepath.Join(confdir, "fileattrs/elf.attr"), "%_dbpath /elsewhere\n")
		}},
		{"rpmrc edited", func(t *testing.T, confdir string) {
			appendTo(t, filepath.Join(confdir, "rpmrc"), "include: /elsewhere\n")
		}},
	}
	for _, c := range changes {
		t.Run(c.name, func(t *testing.T) {
			f := newMemoFixture(t)
			confdir := filepath.Join(t.TempDir(), "usr-lib-rpm")
			for _, p := range []string{"macros", "rpmrc", "macros.d/macros.dist", "platform/x86_64-linux/macros",
				"redhat/macros", "redhat/rpmrc", "fileattrs/elf.attr", "platform/aarch64-linux/.keep", "debian/.keep"} {
				require.NoError(t, os.MkdirAll(filepath.Dir(filepath.Join(confdir, p)), 0o755))
				require.NoError(t, os.WriteFile(filepath.Join(confdir, p), []byte("# "+p+"\n"), 0o644))
			}
			t.Setenv("RPM_CONFIGDIR", confdir)
			t.Setenv("HOME", t.TempDir())
			m := DefaultQueryMemo()
			before, err := m.key(f.db)
			require.NoError(t, err)
			c.change(t, confdir)
			after, err := m.key(f.db)
			require.NoError(t, err)
			assert.NotEqual(t, before.text, after.text)
		})
	}
	assert.Contains(t, DefaultQueryMemo().Config, "/etc/rpm/*/macros", "rpm reads /etc/rpm/%{_target}/macros")
}

// A configuration entry with a wildcard names every file it matches, and every directory
// it lists to find them: a file that matches is in the key edited, appearing or going.
func TestQueryMemoKeyFollowsWildcards(t *testing.T) {
	changes := []struct {
		name   string
		change func(t *testing.T, etc string)
	}{
		{"target macros edited", func(t *testing.T, etc string) {
			appendTo(t, filepath.Join(etc, "x86_64-linux/macros"), "%_dbpath /elsewhere\n")
		}},
		{"target macros appear", func(t *testing.T, etc string) {
			require.NoError(t, os.WriteFile(filepath.Join(etc, "aarch64-linux/macros"), []byte("%_dbpath /elsewhere\n"), 0o644))
		}},
		{"target macros go", func(t *testing.T, etc string) {
			require.NoError(t, os.Remove(filepath.Join(etc, "x86_64-linux/macros")))
		}},
		{"a target directory appears", func(t *testing.T, etc string) {
			require.NoError(t, os.Mkdir(filepath.Join(etc, "ppc64le-linux"), 0o755))
		}},
	}
	for _, c := range changes {
		t.Run(c.name, func(t *testing.T) {
			f := newMemoFixture(t)
			etc := filepath.Join(t.TempDir(), "etc-rpm")
			require.NoError(t, os.MkdirAll(filepath.Join(etc, "x86_64-linux"), 0o755))
			require.NoError(t, os.MkdirAll(filepath.Join(etc, "aarch64-linux"), 0o755))
			require.NoError(t, os.WriteFile(filepath.Join(etc, "x86_64-linux/macros"), []byte("%_vendor x\n"), 0o644))
			f.memo.Config = []string{filepath.Join(etc, "*/macros")}
			before, err := f.memo.key(f.db)
			require.NoError(t, err)
			c.change(t, etc)
			after, err := f.memo.key(f.db)
			require.NoError(t, err)
			assert.NotEqual(t, before.text, after.text)
		})
	}
}
