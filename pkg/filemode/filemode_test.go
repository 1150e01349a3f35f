package filemode

import (
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestUnixAndBack(t *testing.T) {
	for _, c := range []struct {
		unix uint32
		mode os.FileMode
	}{
		{0o644, 0o644},
		{0o4644, os.ModeSetuid | 0o644},
		{0o2644, os.ModeSetgid | 0o644},
		{0o1644, os.ModeSticky | 0o644},
		{0o7777, os.ModeSetuid | os.ModeSetgid | os.ModeSticky | 0o777},
	} {
		assert.Equal(t, c.mode, FromUnix(c.unix), "%04o", c.unix)
		assert.Equal(t, c.unix, Unix(c.mode), "%v", c.mode)
	}
	// The file type bits are not a mode chmod(1) can set.
	assert.Equal(t, uint32(0o755), Unix(os.ModeDir|0o755))
}
