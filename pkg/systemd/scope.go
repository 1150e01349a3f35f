package systemd

import (
	"errors"
	"fmt"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"syscall"

	"github.com/richt/services/pkg/durable"
	"github.com/richt/services/pkg/lock"
)

// Scope is the manager a run talks to and where its records and locks live.
type Scope struct {
	// User: the running user's own manager (systemctl --user), else the system's.
	User bool
	// RuntimeDir is the user's /run/user/UID (user scope only).
	RuntimeDir string
	// Socket is the manager's private D-Bus socket.
	Socket string
	// StoreDir keeps the durable records; LockDir the locks.
	StoreDir, LockDir string
}

// SystemScope is the system manager, with the host's records.
func SystemScope() Scope {
	return Scope{Socket: privateSocket, StoreDir: durable.DefaultDir, LockDir: lock.Dir()}
}

// ErrNoUserManager is returned (wrapped) when the running user has no manager to talk to.
var ErrNoUserManager = errors.New("no user manager")

// UserScope is the manager of the user the module runs as, found the way systemd itself
// lays it out (/run/user/UID), so it works through become_user, su or sudo, where neither
// XDG_RUNTIME_DIR nor a session bus is in the environment. Records live in that user's
// home (~/.local/state/richt, the home taken from the user database, not $HOME, which
// sudo may keep as the caller's), locks in the runtime directory.
func UserScope() (Scope, error) {
	uid := os.Geteuid()
	u, err := user.LookupId(strconv.Itoa(uid))
	if err != nil {
		// The modules are static (no NSS): a user from a directory service is not in
		// /etc/passwd. Their $HOME serves when it is theirs.
		home := os.Getenv("HOME")
		if fi, serr := os.Stat(home); home == "" || serr != nil || !ownedBy(fi, uid) {
			return Scope{}, fmt.Errorf("scope: user: uid %d is not in /etc/passwd and $HOME (%q) is not a directory it owns: %w", uid, home, err)
		}
		u = &user.User{Uid: strconv.Itoa(uid), Username: "uid " + strconv.Itoa(uid), HomeDir: home}
	}
	rt := fmt.Sprintf("/run/user/%d", uid)
	sock := filepath.Join(rt, "systemd", "private")
	if _, err := os.Stat(sock); err != nil {
		return Scope{}, fmt.Errorf("scope: user: %w for %s (uid %d): %s is missing; start it with lingering (loginctl enable-linger %s) or a login session",
			ErrNoUserManager, u.Username, uid, sock, u.Username)
	}
	return Scope{
		User: true, RuntimeDir: rt, Socket: sock,
		StoreDir: filepath.Join(u.HomeDir, ".local", "state", "richt"),
		LockDir:  filepath.Join(rt, "richt", "lock"),
	}, nil
}

func ownedBy(fi os.FileInfo, uid int) bool {
	st, ok := fi.Sys().(*syscall.Stat_t)
	return ok && fi.IsDir() && int(st.Uid) == uid
}

// ScopeOf is the scope the `scope` parameter names.
func ScopeOf(name string) (Scope, error) {
	if name == "user" {
		return UserScope()
	}
	return SystemScope(), nil
}

// Store is the durable store of the scope.
func (s Scope) Store() *durable.Store { return &durable.Store{Dir: s.StoreDir, LockDir: s.LockDir} }

// Env is what commands of this scope need in their environment: systemctl --user and
// journalctl find the user's manager through XDG_RUNTIME_DIR.
func (s Scope) Env() map[string]string {
	if !s.User {
		return nil
	}
	return map[string]string{"XDG_RUNTIME_DIR": s.RuntimeDir, "DBUS_SESSION_BUS_ADDRESS": "unix:path=" + filepath.Join(s.RuntimeDir, "bus")}
}
