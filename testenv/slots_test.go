package testenv

import (
	"path/filepath"
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestTargetSlots(t *testing.T) {
	for _, c := range []struct {
		env  string
		want int
		err  string
	}{
		{env: "", want: max(1, runtime.NumCPU()) + 1},
		{env: "0", want: 0},
		{env: "1", want: 1},
		{env: "3", want: 3},
		{env: "-1", err: `TESTENV_MAX_TARGET_PROCESSES="-1": want a whole number, 0 for no limit`},
		{env: "two", err: `TESTENV_MAX_TARGET_PROCESSES="two": want a whole number, 0 for no limit`},
	} {
		t.Run(c.env, func(t *testing.T) {
			t.Setenv(slotsEnv, c.env)
			n, err := targetSlots()
			if c.err != "" {
				assert.EqualError(t, err, c.err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, c.want, n)
		})
	}
}

// A slot is one open file's lock: a second holder is refused until the first lets go,
// which a process does by exiting (the kernel closes its descriptors).
func TestTryLock(t *testing.T) {
	path := filepath.Join(t.TempDir(), "slot-0.lock")
	first, ok, err := tryLock(path)
	require.NoError(t, err)
	require.True(t, ok)
	_, ok, err = tryLock(path)
	require.NoError(t, err)
	assert.False(t, ok, "the slot is held")
	require.NoError(t, first.Close())
	second, ok, err := tryLock(path)
	require.NoError(t, err)
	assert.True(t, ok, "a closed holder's slot is free")
	second.Close()

	_, _, err = tryLock(filepath.Join(t.TempDir(), "missing", "slot-0.lock"))
	assert.ErrorContains(t, err, "open target slot")
}
