package rpmexact

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestSelfArgv(t *testing.T) {
	links := func(m map[string]string) func(string) (string, error) {
		return func(p string) (string, error) {
			if v, ok := m[p]; ok {
				return v, nil
			}
			return "", errors.New("no such link")
		}
	}
	tests := []struct {
		name     string
		self     string
		links    map[string]string
		wantPath string
		wantArgv []string
	}{
		{"native: both links name the program", "/proc/self/exe",
			map[string]string{"/proc/self/exe": "/opt/richt-modules", "/proc/self/task/42/exe": "/opt/richt-modules"},
			"/proc/self/exe", []string{"rpm_exact"}},
		{"native, program file removed: both links say so alike", "/proc/self/exe",
			map[string]string{"/proc/self/exe": "/tmp/x/AnsiballZ_rpm_exact (deleted)", "/proc/self/task/42/exe": "/tmp/x/AnsiballZ_rpm_exact (deleted)"},
			"/proc/self/exe", []string{"rpm_exact"}},
		{"under QEMU: through the same emulator", "/proc/self/exe",
			map[string]string{"/proc/self/exe": "/usr/local/libexec/richt/arm64/rpm_exact", "/proc/self/task/42/exe": "/usr/local/libexec/richt/qemu-aarch64-static"},
			"/usr/local/libexec/richt/qemu-aarch64-static", []string{"/usr/local/libexec/richt/qemu-aarch64-static", "-0", "rpm_exact", "/usr/local/libexec/richt/arm64/rpm_exact"}},
		{"links unreadable: as natively", "/proc/self/exe", map[string]string{},
			"/proc/self/exe", []string{"rpm_exact"}},
		{"an explicit program (tests) is taken as it is", "/usr/bin/true",
			map[string]string{"/proc/self/exe": "/a", "/proc/self/task/42/exe": "/b"},
			"/usr/bin/true", []string{"rpm_exact"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path, argv := selfArgv(links(tt.links), 42, tt.self, "rpm_exact")
			assert.Equal(t, tt.wantPath, path)
			assert.Equal(t, tt.wantArgv, argv)
		})
	}
}
