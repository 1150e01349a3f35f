// Package nss resolves user and group names and ids on the target the way the C library
// does, through every source /etc/nsswitch.conf names. The modules are built without cgo,
// and Go's os/user then reads only /etc/passwd and /etc/group: an owner from SSSD, LDAP or
// any other source (common on EL) would be "unknown". A name or id the files do not have
// is asked of getent(1), which goes through NSS.
package nss

import (
	"context"
	"errors"
	"fmt"
	"os/user"
	"strconv"
	"strings"

	"github.com/richt/services/pkg/runner"
)

// ErrNotFound is in the chain of an error for a name or id that no source has.
var ErrNotFound = errors.New("not found")

// Resolver looks users and groups up, in the files first (in process) and then through
// getent.
type Resolver struct {
	Runner runner.Runner
}

// User returns the uid of a user name, or checks that a numeric uid belongs to a user.
func (r Resolver) User(ctx context.Context, v string) (int, error) {
	return r.lookup(ctx, "passwd", v, func(s string) (string, error) {
		u, err := user.Lookup(s)
		if err != nil {
			return "", err
		}
		return u.Uid, nil
	}, func(s string) error { _, err := user.LookupId(s); return err })
}

// Group returns the gid of a group name, or checks that a numeric gid belongs to a group.
func (r Resolver) Group(ctx context.Context, v string) (int, error) {
	return r.lookup(ctx, "group", v, func(s string) (string, error) {
		g, err := user.LookupGroup(s)
		if err != nil {
			return "", err
		}
		return g.Gid, nil
	}, func(s string) error { _, err := user.LookupGroupId(s); return err })
}

func (r Resolver) lookup(ctx context.Context, db, v string, byName func(string) (string, error), byID func(string) error) (int, error) {
	if n, err := strconv.ParseUint(v, 10, 32); err == nil {
		id := strconv.FormatUint(n, 10)
		if byID(id) == nil {
			return int(n), nil
		}
		if _, err := r.getent(ctx, db, id); err != nil {
			return 0, err
		}
		return int(n), nil
	}
	if id, err := byName(v); err == nil {
		return strconv.Atoi(id)
	}
	return r.getent(ctx, db, v)
}

// getent asks NSS for one entry of db (passwd or group) and returns its id.
func (r Resolver) getent(ctx context.Context, db, key string) (int, error) {
	if r.Runner == nil {
		return 0, fmt.Errorf("%s %q: %w in /etc/%s (no other source asked)", db, key, ErrNotFound, db)
	}
	res, err := r.Runner.Run(ctx, "getent", db, "--", key)
	if err != nil {
		return 0, fmt.Errorf("getent %s %s: %w", db, key, err)
	}
	switch res.ExitCode {
	case 0:
		return ParseEntry(res.Stdout)
	case 2: // getent's "key not found"
		return 0, fmt.Errorf("getent %s %s: %w in any source of /etc/nsswitch.conf", db, key, ErrNotFound)
	}
	return 0, fmt.Errorf("getent %s %s: exit %d: %s", db, key, res.ExitCode, strings.TrimSpace(res.Output()))
}

// ParseEntry reads the id of the first line getent printed: name:password:id:... for
// passwd and group alike.
func ParseEntry(out string) (int, error) {
	line, _, _ := strings.Cut(out, "\n")
	fields := strings.Split(line, ":")
	if len(fields) < 4 || fields[0] == "" {
		return 0, fmt.Errorf("getent printed %q, not an entry", line)
	}
	id, err := strconv.ParseUint(fields[2], 10, 32)
	if err != nil {
		return 0, fmt.Errorf("getent printed %q: its id %q is not a number", line, fields[2])
	}
	return int(id), nil
}
