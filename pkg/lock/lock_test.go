package lock

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/richt/services/pkg/statedir"
)

func TestAcquireWaitsAndNamesTheHolder(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "lock")
	first, err := Acquire(context.Background(), dir, Unit("demo.service"))
	require.NoError(t, err)
	fi, err := os.Stat(dir)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o700), fi.Mode().Perm())

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Millisecond)
	defer cancel()
	_, err = Acquire(ctx, dir, Unit("demo.service"))
	require.ErrorIs(t, err, ErrHeld)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	assert.Contains(t, err.Error(), fmt.Sprintf("PID %d", os.Getpid()))

	other, err := Acquire(context.Background(), dir, Unit("other.service"))
	require.NoError(t, err, "another name is another lock")
	other.Release()

	done := make(chan error, 1)
	go func() {
		l, err := Acquire(context.Background(), dir, Unit("demo.service"))
		if err == nil {
			l.Release()
		}
		done <- err
	}()
	first.Release()
	select {
	case err := <-done:
		require.NoError(t, err, "the waiter gets it once released")
	case <-time.After(5 * time.Second):
		t.Fatal("waiter did not get the lock")
	}
	first.Release() // twice is fine
}

func TestAcquireRefusesAnInsecureDirectory(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "lock")
	require.NoError(t, os.Mkdir(dir, 0o777))
	require.NoError(t, os.Chmod(dir, 0o777))
	_, err := Acquire(context.Background(), dir, Records)
	require.True(t, errors.Is(err, statedir.ErrInsecure), "%v", err)
}

func TestHolderUnknown(t *testing.T) {
	p := filepath.Join(t.TempDir(), "x.lock")
	assert.Equal(t, "holder unknown", Holder(p))
	require.NoError(t, os.WriteFile(p, []byte("garbage"), 0o600))
	assert.Equal(t, "holder unknown", Holder(p))
}
