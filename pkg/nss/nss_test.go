package nss

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/richt/services/pkg/runner/runnertest"
)

func TestParseEntry(t *testing.T) {
	cases := []struct {
		out  string
		id   int
		fail bool
	}{
		{"ldapuser:*:4242:4242:LDAP user:/home/ldapuser:/bin/bash\n", 4242, false},
		{"ldapgroup:*:4343:alice,bob\n", 4343, false},
		{"a:x:1:1::/:/bin/sh\nsecond:x:2:2::/:/bin/sh\n", 1, false},
		{"", 0, true},
		{"broken\n", 0, true},
		{"name:x:minus:1::/:/bin/sh\n", 0, true},
		{"name:x:4294967296:1::/:/bin/sh\n", 0, true},
		{":x:1:1::/:/bin/sh\n", 0, true},
	}
	for _, c := range cases {
		id, err := ParseEntry(c.out)
		if c.fail {
			assert.Error(t, err, c.out)
			continue
		}
		require.NoError(t, err, c.out)
		assert.Equal(t, c.id, id)
	}
}

func FuzzParseEntry(f *testing.F) {
	f.Add("ldapuser:*:4242:4242:LDAP user:/home/ldapuser:/bin/bash\n")
	f.Add("g:x:0:\n")
	f.Add("::::")
	f.Fuzz(func(t *testing.T, out string) {
		id, err := ParseEntry(out)
		if err == nil && (id < 0 || id > 1<<32-1) {
			t.Fatalf("id %d out of range from %q", id, out)
		}
	})
}

// Names the files have never reach getent; others do, and getent's "not found" is one.
func TestResolverAsksNSSForWhatTheFilesLack(t *testing.T) {
	r := Resolver{Runner: runnertest.New(t)}
	uid, err := r.User(context.Background(), "root")
	require.NoError(t, err)
	assert.Equal(t, 0, uid)
	gid, err := r.Group(context.Background(), "0")
	require.NoError(t, err)
	assert.Equal(t, 0, gid)

	r = Resolver{Runner: runnertest.New(t,
		runnertest.Call{Argv: []string{"getent", "passwd", "--", "richt-ldap-user"}, ExitCode: 0, Stdout: "richt-ldap-user:*:4242:4242::/:/bin/sh\n"},
		runnertest.Call{Argv: []string{"getent", "group", "--", "4343"}, ExitCode: 0, Stdout: "ldapgroup:*:4343:\n"},
		runnertest.Call{Argv: []string{"getent", "passwd", "--", "nobody-anywhere"}, ExitCode: 2, Stdout: ""},
	)}
	uid, err = r.User(context.Background(), "richt-ldap-user")
	require.NoError(t, err)
	assert.Equal(t, 4242, uid)
	gid, err = r.Group(context.Background(), "4343")
	require.NoError(t, err)
	assert.Equal(t, 4343, gid)
	_, err = r.User(context.Background(), "nobody-anywhere")
	assert.ErrorIs(t, err, ErrNotFound)
}
