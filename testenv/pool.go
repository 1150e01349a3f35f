package testenv

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// spareLabel marks a target booted ahead by a test process's pool, with the process's
// PID as its value: a later pool removes the spares of processes that are gone (a test
// binary killed by its -timeout never reaches its own clean-up).
const spareLabel = LabelKey + ".spare-of"

// The pool of one test process: for each set of start options seen, one target booted
// ahead, handed to the next Start with the same options. A target is never handed out
// twice; what a test did to its target goes with it.
var pool struct {
	mu     sync.Mutex
	on     bool
	spares map[string]*spare // the next spare of each kind started before; nil after its first start
	all    []*spare          // every spare booted, for the clean-up
	wg     sync.WaitGroup    // spares still booting
}

// spare is one target booting or booted ahead; ready is closed once t or err is set.
// taken is set, under pool.mu, when it is handed out.
type spare struct {
	ready chan struct{}
	t     *Target
	err   error
	taken bool
}

// RunWithPool runs a package's tests (call it from TestMain) with a pool of pre-booted
// targets: from the second Start of a kind on, a target with the same options boots in the
// background after each, so the next Start of the same kind finds it ready instead of
// waiting for a boot. Only plain starts are pooled — no WithName, WithFile or WithLabel,
// which must be in place when the container is created — the others boot as before. The spares left when the tests
// end are removed before it returns, and a pool removes the spares of test processes
// that died before removing theirs.
//
// The boot of a spare overlaps the test that took the previous target, so it costs the
// machine one boot per kind of target started twice or more in a process beyond what the
// tests start, and it saves each start after the second a boot's wait.
func RunWithPool(m *testing.M) int {
	pool.mu.Lock()
	pool.on, pool.spares = true, map[string]*spare{}
	pool.mu.Unlock()
	// testing.Short needs the flags; m.Run would parse them the same way.
	flag.Parse()
	if !testing.Short() {
		removeOrphanSpares(context.Background())
	}
	code := m.Run()
	drainPool()
	return code
}

// poolKey is what must be equal for a spare to stand in for a start, and false for a
// start that cannot be pooled.
func (o config) poolKey() (string, bool) {
	if o.name != "" || len(o.files) > 0 || len(o.labels) > 0 {
		return "", false
	}
	env := make([]string, 0, len(o.env))
	for k, v := range o.env {
		env = append(env, k+"="+v)
	}
	sort.Strings(env)
	return strconv.Quote(o.image) + " " + o.readyAfter.String() + " " + strconv.Quote(strings.Join(env, "\x00")) + " " +
		strconv.Quote(strings.Join(o.binds, "\x00")), true
}

// takeSpare hands out the spare for o's kind of target and starts booting the next one; ok
// is false when the start is not pooled or no spare is ready to hand out (the caller boots
// one itself). A spare that failed to boot is removed, and the caller boots its own.
func takeSpare(ctx context.Context, o config) (t *Target, ok bool, err error) {
	key, poolable := o.poolKey()
	if !poolable {
		return nil, false, nil
	}
	pool.mu.Lock()
	if !pool.on {
		pool.mu.Unlock()
		return nil, false, nil
	}
	s, seen := pool.spares[key]
	if !seen {
		// The first start of a kind boots no spare: most kinds a test process starts once,
		// and their spare was a boot nobody used (about ten per make test, stop 54 counted).
		pool.spares[key] = nil
		pool.mu.Unlock()
		t, err = boot(ctx, o)
		return t, true, err
	}
	next := &spare{ready: make(chan struct{})}
	pool.spares[key] = next
	pool.all = append(pool.all, next)
	pool.wg.Add(1)
	pool.mu.Unlock()

	if s != nil {
		select {
		case <-s.ready:
		case <-ctx.Done():
			// s boots on, untaken, and goes with the pool.
			go bootSpare(next, o)
			return nil, true, fmt.Errorf("start target: wait for a pre-booted target: %w", ctx.Err())
		}
		pool.mu.Lock()
		s.taken = true
		pool.mu.Unlock()
		if s.err == nil && s.t.up(ctx) {
			go bootSpare(next, o)
			return s.t, true, nil
		}
		if s.t != nil {
			_ = s.t.Terminate(context.Background())
		}
	}
	// No spare yet (the second start of its kind) or a spare that is no use: the caller's
	// target boots now, and the next one after it.
	t, err = boot(ctx, o)
	go bootSpare(next, o)
	return t, true, err
}

// bootSpare boots s with o's options, quietly: the test that asked for it may be over
// when its container's lines come.
func bootSpare(s *spare, o config) {
	defer pool.wg.Done()
	o.logger = defaultLogger()
	o.labels = map[string]string{spareLabel: strconv.Itoa(os.Getpid())}
	s.t, s.err = boot(context.Background(), o)
	if s.err != nil && s.t != nil {
		_ = s.t.Terminate(context.Background())
		s.t = nil
	}
	close(s.ready)
}

// up reports whether a spare's systemd still answers running or degraded.
func (t *Target) up(ctx context.Context) bool {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	res, err := t.Exec(ctx, "systemctl", "is-system-running")
	return err == nil && systemUp(res.Stdout)
}

// drainPool stops handing out spares and removes them, waiting for those still booting.
func drainPool() {
	pool.mu.Lock()
	pool.on = false
	pool.mu.Unlock()
	pool.wg.Wait()
	pool.mu.Lock()
	defer pool.mu.Unlock()
	for _, s := range pool.all {
		if !s.taken && s.t != nil {
			if err := s.t.Terminate(context.Background()); err != nil {
				fmt.Fprintf(os.Stderr, "testenv: remove pre-booted target %s: %v\n", s.t.ID(), err)
			}
		}
	}
	pool.all, pool.spares = nil, map[string]*spare{}
}

// removeOrphanSpares removes the spares of test processes that no longer run. A spare
// handed out to a test carries the label too; its process is gone as well, so it is a
// leftover either way.
func removeOrphanSpares(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, "docker", "ps", "-a", "--filter", "label="+spareLabel,
		"--format", `{{.ID}} {{.Label "`+spareLabel+`"}}`).Output()
	if err != nil {
		return // no Docker here: the tests that need it say so
	}
	var gone []string
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		if len(f) != 2 {
			continue
		}
		pid, err := strconv.Atoi(f[1])
		if err != nil || pid <= 0 || syscall.Kill(pid, 0) == syscall.ESRCH {
			gone = append(gone, f[0])
		}
	}
	if len(gone) > 0 {
		_ = exec.CommandContext(ctx, "docker", append([]string{"rm", "-f", "-v"}, gone...)...).Run()
	}
}
