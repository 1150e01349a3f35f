package rpmexact

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/richt/services/pkg/runner/runnertest"
)

func withListings(f *memoFixture) *memoFixture {
	f.memo.ListingDir = filepath.Join(filepath.Dir(f.memo.Dir), "listing")
	return f
}

var listingV1 = map[string][]string{"demo": {"demo-0:1.0-1.noarch"}, "other": {"other-0:1.0-1.noarch"}}

func TestListingIsRememberedUntilAFileOfTheKeyChanges(t *testing.T) {
	f := withListings(newMemoFixture(t))
	_, _, ok := f.memo.LookupListing()
	assert.False(t, ok, "nothing remembered yet")

	require.NoError(t, f.memo.RecordListing(listingV1, f.db, later()))
	got, db, ok := f.memo.LookupListing()
	require.True(t, ok)
	assert.Equal(t, listingV1, got)
	assert.Equal(t, f.db, db)

	appendTo(t, filepath.Join(f.db.Path, "rpmdb.sqlite"), "x") // another rpm wrote the database
	_, _, ok = f.memo.LookupListing()
	assert.False(t, ok, "a written database needs a new listing")
}

func TestListingRecordsOnlyWhatItCanTrust(t *testing.T) {
	f := withListings(newMemoFixture(t))
	require.NoError(t, f.memo.RecordListing(listingV1, f.db, later()))

	// A listing that began while the database was still being written is not remembered,
	// and the earlier record, no longer true, is gone with it.
	appendTo(t, filepath.Join(f.db.Path, "rpmdb.sqlite"), "x")
	err := f.memo.RecordListing(listingV1, f.db, time.Now())
	assert.ErrorContains(t, err, "before the query")
	assert.NoFileExists(t, filepath.Join(f.memo.ListingDir, listingFile))

	for _, db := range []Database{{Path: f.db.Path, Backend: "ndb"}, {}} {
		assert.ErrorContains(t, f.memo.RecordListing(listingV1, db, later()), "not remembered")
	}

	require.NoError(t, f.memo.RecordListing(listingV1, f.db, later()))
	p := filepath.Join(f.memo.ListingDir, listingFile)
	for _, bad := range []string{`{"version":1`, `{"version":2,"key":"x","packages":{}}`, `{"version":1,"key":"","packages":{}}`} {
		require.NoError(t, os.WriteFile(p, []byte(bad), 0o644))
		_, _, ok := f.memo.LookupListing()
		assert.False(t, ok, bad)
	}
	require.NoError(t, f.memo.RecordListing(listingV1, f.db, later()))
	require.NoError(t, os.Chmod(f.memo.ListingDir, 0o777))
	_, _, ok := f.memo.LookupListing()
	assert.False(t, ok, "a directory others can write holds no listing")

	var none *QueryMemo
	_, _, ok = none.LookupListing()
	assert.False(t, ok)
	assert.NoError(t, none.RecordListing(listingV1, f.db, later()), "no memo: nothing to remember")
}

func TestTheNextTransactionUsesTheListingOfTheLastOne(t *testing.T) {
	f := withListings(newMemoFixture(t))
	dbLineOut := "@@rpmdb\t" + f.db.Path + "\tsqlite\n"
	withDB := func(c runnertest.Call) runnertest.Call { c.Stdout = dbLineOut + c.Stdout; return c }
	up := runnertest.Call{Argv: []string{"dnf", "-y", "install-nevra", "--", "demo-0:2.0-1.noarch"}}
	down := runnertest.Call{Argv: []string{"dnf", "-y", "install-nevra", "--", "demo-0:1.0-1.noarch"}}
	s := runnertest.New(t,
		withDB(qa(d1...)), up, withDB(qa(d2...)), files("demo-0:2.0-1.noarch"),
		// The second transaction lists only after DNF.
		down, withDB(qa(d1...)), files("demo-0:1.0-1.noarch"),
	)
	in := Inline{Runner: s, Sync: &recorder{}, UnitDirs: []string{t.TempDir()}, Listings: f.memo}
	// The fixture's files were written just now; a listing is remembered once they are two
	// clock ticks old.
	time.Sleep(settleFor(memoKey{fine: true}) + 5*time.Millisecond)
	out, err := in.Run(context.Background(), Transaction{Argv: up.Argv, Names: []string{"demo"}})
	require.NoError(t, err)
	assert.Equal(t, ListedRPM, out.BeforeListed)
	require.FileExists(t, filepath.Join(f.memo.ListingDir, listingFile))

	out, err = in.Run(context.Background(), Transaction{Argv: down.Argv, Names: []string{"demo"}})
	require.NoError(t, err)
	assert.Equal(t, ListedMemo, out.BeforeListed)
	require.Len(t, out.Moves, 1)
	assert.Equal(t, Move{Name: "demo", Before: []string{"demo-0:2.0-1.noarch"}, After: []string{"demo-0:1.0-1.noarch"}, Requested: true}, out.Moves[0])
	assert.Equal(t, 7, s.Count(), "one listing fewer")
}
