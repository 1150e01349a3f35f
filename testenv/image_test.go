package testenv

import (
	"context"
	"errors"
	"path/filepath"
	"testing"

	"github.com/richt/services/pkg/lock"
)

// TestImageBuildWaitEndsWithTheContext: the image build lock is pkg/lock's, so a process
// waiting while another builds gives up when its context ends, naming the lock as held,
// instead of blocking on flock(2) forever. The context is cancelled before the call, so
// the image is not looked up and nothing is built.
func TestImageBuildWaitEndsWithTheContext(t *testing.T) {
	t.Setenv("TESTENV_IMAGE", "")
	dir := filepath.Join(t.TempDir(), "lock")
	old := imageLockDir
	imageLockDir = func() string { return dir }
	t.Cleanup(func() { imageLockDir = old })
	held, err := lock.Acquire(context.Background(), dir, imageBuildLock)
	if err != nil {
		t.Fatal(err)
	}
	defer held.Release()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = EnsureSuiteImage(ctx, "trixie")
	if !errors.Is(err, lock.ErrHeld) || !errors.Is(err, context.Canceled) {
		t.Fatalf("EnsureSuiteImage while another process builds: %v; want lock.ErrHeld and context.Canceled", err)
	}
}
