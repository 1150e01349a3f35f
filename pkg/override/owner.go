package override

import (
	"context"
	"fmt"
	"os"

	"github.com/richt/services/pkg/filemode"
	"github.com/richt/services/pkg/safefile"
)

// lookupUID and lookupGID resolve owner and group on the target (safefile's rule: through
// NSS, and a numeric id must exist as well as a name).
func (d Deps) lookupUID(ctx context.Context, v string) (int, error) {
	return safefile.UID(ctx, d.Runner, "owner", v)
}

func (d Deps) lookupGID(ctx context.Context, v string) (int, error) {
	return safefile.GID(ctx, d.Runner, "group", v)
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
	return fmt.Sprintf("owner %s (uid %d) can write the %s (mode %04o): that user can change what systemd runs as root; use owner root, or mode 0444/0400 if that is not intended", owner, uid, what, filemode.Unix(mode))
}
