package testenv

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// poolKind is a kind of start no other test uses, so the test's spare is its own.
func poolKind(t *testing.T) Option {
	return WithEnv(map[string]string{"RICHT_POOL_TEST": fmt.Sprintf("%s-%d", t.Name(), time.Now().UnixNano())})
}

// poolEntry is the pool's entry for opts' kind of start from image: the next spare (nil
// after the kind's first start), and whether the kind has been started at all.
func poolEntry(t *testing.T, image string, opts ...Option) (*spare, bool) {
	t.Helper()
	o, err := newConfig(opts)
	require.NoError(t, err)
	o.image = image
	key, ok := o.poolKey()
	require.True(t, ok, "a plain start is pooled")
	pool.mu.Lock()
	defer pool.mu.Unlock()
	s, seen := pool.spares[key]
	return s, seen
}

// spareOf is the pool's next spare for opts' kind of start from image, once it is ready.
func spareOf(t *testing.T, image string, opts ...Option) *spare {
	t.Helper()
	s, _ := poolEntry(t, image, opts...)
	require.NotNil(t, s, "a start leaves a spare of its kind booting")
	<-s.ready
	return s
}

func startedAt(t *testing.T, id string) time.Time {
	t.Helper()
	out, err := exec.Command("docker", "inspect", "-f", "{{.State.StartedAt}}", id).Output()
	require.NoError(t, err)
	at, err := time.Parse(time.RFC3339Nano, strings.TrimSpace(string(out)))
	require.NoError(t, err)
	return at
}

// The second start of a kind gets the target booted after the first, before it was asked
// for: up, new, and never the first one again.
func TestPoolHandsOutATargetBootedAhead(t *testing.T) {
	kind, first, s := poolWithSpare(t)
	asked := time.Now()
	second := Start(t, kind)
	assert.Equal(t, s.t.ID(), second.ID(), "the spare is handed out")
	assert.NotEqual(t, first.ID(), second.ID())
	assert.True(t, startedAt(t, second.ID()).Before(asked), "booted before the start asked for it")
	assert.Equal(t, "running", strings.TrimSpace(second.MustExec(t, "systemctl", "is-system-running")))
	// A kind the pool does not serve boots while the test waits.
	labelled := Start(t, kind, WithLabel("org.richt.testenv.test", "pool"))
	assert.False(t, startedAt(t, labelled.ID()).Before(asked), "a labelled start boots when asked")
}

// A spare whose systemd went down before a test asked for it is removed, and the test gets
// a target booted for it.
func TestPoolReplacesASpareThatWentDown(t *testing.T) {
	kind, _, s := poolWithSpare(t)
	out, err := exec.Command("docker", "kill", s.t.ID()).CombinedOutput()
	require.NoError(t, err, string(out))
	second := Start(t, kind)
	assert.NotEqual(t, s.t.ID(), second.ID(), "the dead spare is not handed out")
	assert.Equal(t, "running", strings.TrimSpace(second.MustExec(t, "systemctl", "is-system-running")))
	assert.Error(t, exec.Command("docker", "inspect", s.t.ID()).Run(), "the dead spare is removed")
}

// Spares of a test process that is gone are removed by the next pool; a live process's
// spares stay.
func TestPoolRemovesSparesOfProcessesThatAreGone(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end: needs Docker")
	}
	t.Parallel()
	img, err := EnsureImage(context.Background())
	require.NoError(t, err)
	gone := exec.Command("true")
	require.NoError(t, gone.Run())
	create := func(pid int) string {
		out, err := exec.Command("docker", "create", "--label", spareLabel+"="+strconv.Itoa(pid), img, "/sbin/init").Output()
		require.NoError(t, err)
		id := strings.TrimSpace(string(out))
		t.Cleanup(func() { _ = exec.Command("docker", "rm", "-f", id).Run() })
		return id
	}
	orphan, live := create(gone.ProcessState.Pid()), create(os.Getpid())
	removeOrphanSpares(context.Background())
	assert.Error(t, exec.Command("docker", "inspect", orphan).Run(), "the spare of a process that is gone is removed")
	assert.NoError(t, exec.Command("docker", "inspect", live).Run(), "a live process's spare stays")
}

// poolWithSpare starts two targets of a kind of its own (an end-to-end test, in parallel)
// and returns the kind, the second target and the spare the pool booted after it.
func poolWithSpare(t *testing.T) (kind Option, first *Target, s *spare) {
	t.Helper()
	if testing.Short() {
		t.Skip("end-to-end: needs Docker")
	}
	t.Parallel()
	kind = poolKind(t)
	first = Start(t, kind)
	s, seen := poolEntry(t, first.Image, kind)
	require.True(t, seen, "the first start is remembered")
	require.Nil(t, s, "the first start of a kind boots no spare")
	first = Start(t, kind)
	s = spareOf(t, first.Image, kind)
	require.NoError(t, s.err)
	return kind, first, s
}
