package rollback

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestMergeKeepsTheEarlierState(t *testing.T) {
	earlier := &Record{Service: "web", Phase: PhaseRestoring,
		Packages: []Package{{Name: "nginx", Before: []string{"nginx-2:1-1.noarch"}}},
		Files:    []File{{Path: "/etc/a", Existed: true, Saved: "0-a"}}}
	now := Record{Service: "web", Phase: PhaseChanging,
		Packages: []Package{{Name: "nginx", Before: []string{"nginx-2:1-3.noarch"}}, {Name: "redis"}},
		Files:    []File{{Path: "/etc/a", Existed: true}, {Path: "/etc/b"}}}
	for _, tc := range []struct {
		name    string
		earlier *Record
		want    Record
	}{
		{"no earlier record: the run's own", nil, now},
		{"an earlier record: its entries win, the run adds the rest", earlier, Record{Service: "web", Phase: PhaseRestoring,
			Packages: []Package{{Name: "nginx", Before: []string{"nginx-2:1-1.noarch"}}, {Name: "redis"}},
			Files:    []File{{Path: "/etc/a", Existed: true, Saved: "0-a"}, {Path: "/etc/b"}}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, Merge(tc.earlier, now))
		})
	}
	assert.Equal(t, "nginx-2:1-1.noarch", earlier.Packages[0].Before[0], "the earlier record is not changed")
}

// A record's life on disk: begun with the files' contents saved root-only, its phase
// moved, the files put back (content, mode; a file that did not exist removed), then done
// with nothing left.
func TestRecordBeginRestoreDone(t *testing.T) {
	dir := t.TempDir()
	s := Store{Dir: filepath.Join(dir, "rollback")}
	etc := filepath.Join(dir, "etc")
	require.NoError(t, os.Mkdir(etc, 0o755))
	kept, created := filepath.Join(etc, "kept.conf"), filepath.Join(etc, "new.conf")
	require.NoError(t, os.WriteFile(kept, []byte("old\n"), 0o640))

	rec, err := s.Load("web")
	require.NoError(t, err)
	require.Nil(t, rec, "no record yet")

	var files []File
	contents := map[string][]byte{}
	for _, p := range []string{kept, created} {
		f, data, err := Observe(p)
		require.NoError(t, err)
		files = append(files, f)
		contents[p] = data
	}
	require.NoError(t, s.Begin(Record{Service: "web", Phase: PhaseChanging, Files: files}, contents))
	fi, err := os.Stat(s.RecordPath("web"))
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), fi.Mode().Perm(), "the record is root's alone")

	// The change: both files written.
	require.NoError(t, os.WriteFile(kept, []byte("new\n"), 0o644))
	require.NoError(t, os.WriteFile(created, []byte("new\n"), 0o644))

	rec, err = s.Load("web")
	require.NoError(t, err)
	require.NotNil(t, rec)
	require.NoError(t, s.SetPhase(rec, PhaseRestoring))
	// A rollback run again changes nothing the second time.
	for _, want := range [][]bool{{true, true}, {false, false}} {
		var changed []bool
		for _, f := range rec.Files {
			c, err := s.RestoreFile(rec, f)
			require.NoError(t, err)
			changed = append(changed, c)
		}
		assert.Equal(t, want, changed)
		data, err := os.ReadFile(kept)
		require.NoError(t, err)
		assert.Equal(t, "old\n", string(data))
		fi, err := os.Stat(kept)
		require.NoError(t, err)
		assert.Equal(t, os.FileMode(0o640), fi.Mode().Perm())
		assert.NoFileExists(t, created)
	}
	again, err := s.Load("web")
	require.NoError(t, err)
	assert.Equal(t, PhaseRestoring, again.Phase)

	require.NoError(t, s.Done("web"))
	entries, err := os.ReadDir(s.Dir)
	require.NoError(t, err)
	assert.Empty(t, entries, "nothing is left")
	require.NoError(t, s.Done("web"), "done twice is fine")
}

func TestKeyIsSafeAndUnique(t *testing.T) {
	for _, tc := range []struct{ a, b string }{{"web", "web "}, {"a/b", "a_b"}, {"../x", "__x"}} {
		assert.NotEqual(t, key(tc.a), key(tc.b))
		assert.NotContains(t, key(tc.a), "/")
	}
}

// A file swapped for a link between its inspection and its read (its directory is the
// daemon's user's: Debian's /etc/redis) never puts the link's target in the record: the
// content saved is the file's that was inspected, read through the one descriptor. A link
// at the path from the start is refused.
func TestObserveNeverSavesWhatALinkPointsAt(t *testing.T) {
	dir := t.TempDir()
	secret := filepath.Join(dir, "shadow")
	require.NoError(t, os.WriteFile(secret, []byte("root:$6$secret\n"), 0o600))
	path := filepath.Join(dir, "redis.conf")
	require.NoError(t, os.WriteFile(path, []byte("port 6379\n"), 0o640))
	t.Cleanup(func() { observing = func(string) {} })
	observing = func(p string) {
		// What the daemon's user does at that instant: the config's name to a link.
		require.NoError(t, os.Rename(p, p+".away"))
		require.NoError(t, os.Symlink(secret, p))
	}
	f, data, err := Observe(path)
	require.NoError(t, err)
	assert.NotContains(t, string(data), "secret")
	assert.Equal(t, "port 6379\n", string(data), "the inspected file's content")
	assert.Equal(t, os.FileMode(0o640), f.Mode)

	observing = func(string) {}
	_, data, err = Observe(path) // the link itself
	require.Error(t, err)
	assert.Contains(t, err.Error(), "symbolic link")
	assert.Nil(t, data)
}
