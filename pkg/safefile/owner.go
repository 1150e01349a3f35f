package safefile

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/richt/services/pkg/nss"
	"github.com/richt/services/pkg/runner"
)

// ErrUnknownID is in the chain of UID's and GID's error for a user or group that no
// source on the target knows (today: a package that creates it may not be installed yet).
var ErrUnknownID = errors.New("unknown user or group")

// UID resolves the owner v (a name or a numeric uid) on the target, through NSS (package
// nss: the files, then getent through r). A numeric id must exist as well as a name: chown
// accepts any number, and a file owned by an id nobody has today belongs to whoever is
// given that id tomorrow. param names the parameter in the error ("owner").
func UID(ctx context.Context, r runner.Runner, param, v string) (int, error) {
	return lookupID(param, "user", v, func() (int, error) { return nss.Resolver{Runner: r}.User(ctx, v) })
}

// GID is UID for the group.
func GID(ctx context.Context, r runner.Runner, param, v string) (int, error) {
	return lookupID(param, "group", v, func() (int, error) { return nss.Resolver{Runner: r}.Group(ctx, v) })
}

func lookupID(param, kind, v string, resolve func() (int, error)) (int, error) {
	id, err := resolve()
	if err == nil {
		return id, nil
	}
	if !errors.Is(err, nss.ErrNotFound) {
		return 0, fmt.Errorf("%s: look up %s %q on the target: %w", param, kind, v, err)
	}
	if _, numErr := strconv.ParseUint(v, 10, 32); numErr == nil {
		return 0, &unknownID{msg: fmt.Sprintf("%s: %q is a numeric id no %s on the target has (%v); create the %s first or use an existing one", param, v, kind, err, kind), err: err}
	}
	return 0, &unknownID{msg: fmt.Sprintf("%s: %q is not a known name or a numeric id on the target (%v); create the %s first or use an existing one", param, v, err, kind), err: err}
}

// unknownID is the error for a user or group no source knows: ErrUnknownID and the
// lookup's own error are in its chain, and its message is the one users read.
type unknownID struct {
	msg string
	err error
}

func (e *unknownID) Error() string   { return e.msg }
func (e *unknownID) Unwrap() []error { return []error{ErrUnknownID, e.err} }
