package testenv

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
)

// AddUserWithManager creates a user whose systemd user manager runs without a login
// (lingering, as `loginctl enable-linger` does) and waits until the manager answers on its
// private socket, /run/user/UID/systemd/private; it returns the uid. Targets carry
// libpam-systemd, which user managers need to start.
func (t *Target) AddUserWithManager(tb testing.TB, name string) int {
	tb.Helper()
	out := t.Shell(tb, fmt.Sprintf(`useradd -m -s /bin/sh %[1]s && loginctl enable-linger %[1]s && uid=$(id -u %[1]s) &&
for i in $(seq 100); do [ -S /run/user/$uid/systemd/private ] && break; sleep 0.1; done
[ -S /run/user/$uid/systemd/private ] || { systemctl status user@$uid --no-pager; exit 1; }
echo $uid`, name))
	uid, err := strconv.Atoi(strings.TrimSpace(out))
	if err != nil {
		tb.Fatalf("uid of %s: %q: %v", name, out, err)
	}
	return uid
}
