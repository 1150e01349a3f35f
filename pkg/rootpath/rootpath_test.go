package rootpath

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestJoin(t *testing.T) {
	for _, tc := range []struct{ root, p, want string }{
		{"", "/etc/systemd/system/demo.service", "/etc/systemd/system/demo.service"},
		{"/", "/etc/systemd/system/demo.service", "/etc/systemd/system/demo.service"},
		// The real root leaves p as it is, uncleaned: the callers name the file they were given.
		{"/", "/etc/systemd/system/../demo.service", "/etc/systemd/system/../demo.service"},
		{"/tmp/t", "/etc/systemd/system/demo.service", "/tmp/t/etc/systemd/system/demo.service"},
		{"/tmp/t/", "/etc/x/../y", "/tmp/t/etc/y"},
		{"rel", "/etc/x", "rel/etc/x"},
	} {
		assert.Equal(t, tc.want, Join(tc.root, tc.p), "Join(%q, %q)", tc.root, tc.p)
	}
}
