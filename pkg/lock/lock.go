// Package lock serializes module runs that share state on a target. A lock is flock(2) on
// a file in a root-owned directory that only root can write (by default /run/richt/lock):
// the kernel releases it when the holder exits or is killed, so a crashed run never leaves
// a lock behind. The holder writes its PID into the file, so a run that waits in vain can
// name who holds it.
package lock

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/richt/services/pkg/statedir"
)

// DefaultDir holds root's lock files on a target. Locks need not survive a reboot, so
// they live on /run (a tmpfs), away from the durable records.
const DefaultDir = "/run/richt/lock"

// Dir is where the running user's locks live: DefaultDir for root, else the user's runtime
// directory (/run/user/UID, which systemd creates for a user with a manager), else a
// directory of that user's under the temporary directory.
func Dir() string {
	uid := os.Geteuid()
	if uid == 0 {
		return DefaultDir
	}
	if rt := fmt.Sprintf("/run/user/%d", uid); isDir(rt) {
		return filepath.Join(rt, "richt", "lock")
	}
	return filepath.Join(os.TempDir(), fmt.Sprintf("richt-%d", uid), "lock")
}

func isDir(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.IsDir()
}

// Func takes a named lock and returns its release.
type Func func(ctx context.Context, name string) (release func(), err error)

// In returns a Func over the lock files in dir.
func In(dir string) Func {
	return func(ctx context.Context, name string) (func(), error) {
		l, err := Acquire(ctx, dir, name)
		if err != nil {
			return nil, err
		}
		return l.Release, nil
	}
}

// Names of the locks the modules share. Every run takes at most one unit lock, and takes
// Records only briefly while it holds nothing but a unit lock or Transaction: that order
// is what keeps two runs from waiting for each other forever.
const (
	// Records guards the host-wide durable records (the manager-sync record).
	Records = "records"
	// Transaction is held by rpm_exact from before its observation until its package
	// transaction has ended, also after the module itself has returned.
	Transaction = "rpm-transaction"
)

// Service is the name of the lock a service's runs with rollback share, for the whole
// run: its rollback record is one. It is taken before any other lock.
func Service(key string) string { return "service-" + key }

// Unit is the name of the lock one unit's lifecycle and override runs share.
func Unit(unit string) string { return "unit-" + unit }

// ErrHeld is returned (wrapped) when the deadline passed while another process held the lock.
var ErrHeld = errors.New("held by another run")

// Lock is a held lock.
type Lock struct {
	f    *os.File
	path string
}

// pollEvery is how often a waiting run tries again. flock(2) has no timeout, and a
// blocking flock in a goroutine could not be abandoned at the deadline without leaking it.
var pollEvery = 20 * time.Millisecond

// Acquire takes the lock name in dir, waiting until ctx ends. dir is created (0700, root)
// when missing and refused when another user owns it or others can write it. On a deadline
// the error names the holder's PID and how long the run waited.
func Acquire(ctx context.Context, dir, name string) (*Lock, error) {
	if err := statedir.Ensure(dir, 0o700); err != nil {
		return nil, err
	}
	// The directories above count too: a non-root user's fallback under /tmp
	// (/tmp/richt-UID/lock) could have been made first by someone else.
	if err := statedir.CheckAncestors(dir); err != nil {
		return nil, err
	}
	path := filepath.Join(dir, name+".lock")
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open lock %s: %w", path, err)
	}
	start := time.Now()
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			break
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) && !errors.Is(err, syscall.EINTR) {
			f.Close()
			return nil, fmt.Errorf("lock %s: %w", path, err)
		}
		select {
		case <-ctx.Done():
			holder := Holder(path)
			f.Close()
			return nil, fmt.Errorf("%s: %w (%s) after waiting %s: %w", path, ErrHeld, holder, time.Since(start).Round(time.Millisecond), ctx.Err())
		case <-time.After(pollEvery):
		}
	}
	l := &Lock{f: f, path: path}
	if err := l.SetHolder(os.Getpid()); err != nil {
		l.Release()
		return nil, err
	}
	return l, nil
}

// SetHolder records pid as the holder: a child that inherits the lock and outlives this
// process (rpm_exact's transaction) names itself.
func (l *Lock) SetHolder(pid int) error { return WriteHolder(l.f, pid) }

// WriteHolder records pid as the holder in an open lock file, for a process that holds
// the lock through a file it inherited.
func WriteHolder(f *os.File, pid int) error {
	if err := f.Truncate(0); err != nil {
		return fmt.Errorf("record holder of %s: %w", f.Name(), err)
	}
	if _, err := f.WriteAt([]byte(strconv.Itoa(pid)+"\n"), 0); err != nil {
		return fmt.Errorf("record holder of %s: %w", f.Name(), err)
	}
	return nil
}

// File is the open lock file. A child process given it (exec.Cmd.ExtraFiles) shares the
// lock: it stays held until the last holder of the open file closes it or exits.
func (l *Lock) File() *os.File { return l.f }

// Release lets the next run in by closing this process's copy of the lock file: the lock
// ends when the last copy is closed, so a child given the file (File) keeps holding it.
// An explicit LOCK_UN would end it for the child too. The file stays: removing it would
// let a waiter hold a lock on an unlinked file while a newcomer locks a new one.
func (l *Lock) Release() {
	if l == nil || l.f == nil {
		return
	}
	_ = l.f.Close()
	l.f = nil
}

// Holder describes who holds the lock at path: "PID 123" (with its command line when
// readable), or what is known.
func Holder(path string) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return "holder unknown"
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
	if err != nil || pid <= 0 {
		return "holder unknown"
	}
	desc := "PID " + strconv.Itoa(pid)
	if cmd, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid)); err == nil && len(cmd) > 0 {
		desc += ": " + strings.TrimSpace(strings.ReplaceAll(string(cmd), "\x00", " "))
	}
	return desc
}
