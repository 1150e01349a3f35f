package override

import (
	"context"
	"fmt"
	"os"
	"strconv"

	"github.com/richt/services/pkg/ansible"
	"github.com/richt/services/pkg/nss"
)

// lookupUID and lookupGID resolve owner and group on the target, through NSS (package
// nss: the files, then getent). A numeric id must exist as well as a name: chown accepts
// any number, and a file owned by an id nobody has today belongs to whoever is given that
// id tomorrow.
func (d Deps) lookupUID(ctx context.Context, v string) (int, error) {
	return lookupID("owner", "user", v, func() (int, error) { return nss.Resolver{Runner: d.Runner}.User(ctx, v) })
}

func (d Deps) lookupGID(ctx context.Context, v string) (int, error) {
	return lookupID("group", "group", v, func() (int, error) { return nss.Resolver{Runner: d.Runner}.Group(ctx, v) })
}

func lookupID(param, kind, v string, resolve func() (int, error)) (int, error) {
	id, err := resolve()
	if err == nil {
		return id, nil
	}
	if _, numErr := strconv.ParseUint(v, 10, 32); numErr == nil {
		return 0, fmt.Errorf("%s: %q is a numeric id no %s on the target has (%v); create the %s first or use an existing one", param, v, kind, err, kind)
	}
	return 0, fmt.Errorf("%s: %q is not a known name or a numeric id on the target (%v); create the %s first or use an existing one", param, v, err, kind)
}

// ownerWriteWarning is the decision on a non-root owner with the owner-write bit: it is
// allowed, with a warning naming the owner. Refusing it would break plays that hand a
// unit to a service account on purpose, and the owner is named explicitly in the task
// (unlike group or other write bits, which reach users nobody named, and are refused).
// The warning says what it means: that owner can change what root runs.
func ownerWriteWarning(owner string, uid int, mode os.FileMode, what string) string {
	if uid == 0 || mode&0o200 == 0 {
		return ""
	}
	return fmt.Sprintf("owner %s (uid %d) can write the %s (mode %04o): that user can change what systemd runs as root; use owner root, or mode 0444/0400 if that is not intended", owner, uid, what, ansible.UnixMode(mode))
}
