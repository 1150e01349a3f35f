package testenv

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"
)

// slotsEnv overrides how many test processes may run targets at once on this machine.
const slotsEnv = "TESTENV_MAX_TARGET_PROCESSES"

// targetSlots is how many test processes may run targets at once: TESTENV_MAX_TARGET_PROCESSES,
// where 0 means no limit, else one per CPU and one more. (One per two CPUs left a 2-core
// machine's CPU a fifth to a third idle while targets waited on systemd, DNF and probes;
// one per CPU still 7.5 % idle over a make test, one more 1.2 %, and the run 401 s → 373 s;
// docs/testenv.md.)
func targetSlots() (int, error) {
	if v := os.Getenv(slotsEnv); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			return 0, fmt.Errorf("%s=%q: want a whole number, 0 for no limit", slotsEnv, v)
		}
		return n, nil
	}
	return max(1, runtime.NumCPU()) + 1, nil
}

// slot is this process's hold on one of the machine's target slots: taken at the first
// target start of a test process and kept until the process exits (the kernel releases
// the lock with the last descriptor, also on a crash).
var slot struct {
	mu   sync.Mutex
	held bool
	file *os.File
}

// slotPoll is how often a process waiting for a slot tries the slots again.
const slotPoll = 250 * time.Millisecond

// holdSlot takes one of the machine's target slots for this test process, waiting until one
// is free or ctx ends; outside a test binary it does nothing (a command such as the
// benchmark starts its own targets and sizes its own load). It returns how long it
// waited.
//
// The unit is a test process, not a target, so the wait can never deadlock: a process
// that waits holds no slot, and a process that holds one never waits again, whatever its
// tests do (a test holding a target while its subtests start more, several targets for
// one scenario). Within a process, `go test -parallel` (GOMAXPROCS by default) already
// bounds how many tests run at once.
func holdSlot(ctx context.Context) (time.Duration, error) {
	slot.mu.Lock()
	defer slot.mu.Unlock()
	if slot.held || !testing.Testing() {
		return 0, nil
	}
	n, err := targetSlots()
	if err != nil || n == 0 {
		slot.held = err == nil
		return 0, err
	}
	dir := filepath.Join(os.TempDir(), "richt-testenv-slots")
	if err := os.MkdirAll(dir, 0o1777); err != nil {
		return 0, fmt.Errorf("target slots: %w", err)
	}
	began := time.Now()
	for {
		for i := range n {
			f, ok, err := tryLock(filepath.Join(dir, fmt.Sprintf("slot-%d.lock", i)))
			if err != nil {
				return time.Since(began), err
			}
			if ok {
				slot.held, slot.file = true, f
				return time.Since(began), nil
			}
		}
		select {
		case <-ctx.Done():
			return time.Since(began), fmt.Errorf("wait for one of %d target slots (%s): %w", n, slotsEnv, ctx.Err())
		case <-time.After(slotPoll):
		}
	}
}

// tryLock takes an exclusive lock on path without waiting; ok is false when another
// process holds it. The descriptor is close-on-exec (Go's default), so commands a test
// runs do not keep the slot after the test process ends.
func tryLock(path string) (*os.File, bool, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o666)
	if err != nil {
		return nil, false, fmt.Errorf("open target slot %s: %w", path, err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if err == syscall.EWOULDBLOCK {
			return nil, false, nil
		}
		return nil, false, fmt.Errorf("lock target slot %s: %w", path, err)
	}
	return f, true, nil
}
