package rpmexact

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
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
			path, argv := selfArgv(fakeHost{readlink: links(tt.links)}, 42, tt.self, "rpm_exact")
			assert.Equal(t, tt.wantPath, path)
			assert.Equal(t, tt.wantArgv, argv)
		})
	}
}

// fakeHost answers readlink from a table.
type fakeHost struct {
	readlink func(string) (string, error)
}

func (h fakeHost) Readlink(p string) (string, error) { return h.readlink(p) }

// Transactions are ordered by their sequence number, not by the time in their names: a
// clock stepped back, or records named in the future, never make the newest look oldest.
func TestTransactionOrderIgnoresTheClock(t *testing.T) {
	d := &Detached{Dir: t.TempDir()}
	for _, id := range []string{
		"20990101T000000.000000000Z-7",              // a release before the sequence numbers
		"000000000002-20200101T000000.000000000Z-9", // the clock stepped back
		"000000000001-20991231T000000.000000000Z-8",
	} {
		require.NoError(t, os.Mkdir(filepath.Join(d.Dir, id), 0o700))
	}
	assert.Equal(t, []string{"20990101T000000.000000000Z-7", "000000000001-20991231T000000.000000000Z-8", "000000000002-20200101T000000.000000000Z-9"}, d.ids())
	next := d.nextID(time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC))
	assert.True(t, strings.HasPrefix(next, "000000000003-20000101T000000"), next)
	require.NoError(t, os.Mkdir(filepath.Join(d.Dir, next), 0o700))
	assert.Equal(t, next, d.ids()[3], "the newest is last whatever its time")
}

// An outcome that reads as success is taken only from a supervisor that finished: a
// non-zero exit status (a panic exits 2), or a record written on a panic's way out
// (done: false), is an incomplete outcome, never a success. A panic cannot be caused from
// outside the binary, so this is tested here, on the records each case leaves.
func TestSupervisorOutcomeNeedsAFinishedSupervisor(t *testing.T) {
	f, tr := false, true
	cases := []struct {
		name string
		done *bool
		werr error
		ok   bool
	}{
		{"finished", &tr, nil, true},
		{"an earlier release's record (no done)", nil, nil, true},
		{"record of a panic", &f, nil, false},
		{"finished record, supervisor exited 2", &tr, errors.New("exit status 2"), false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			data, err := json.Marshal(outcomeRecord{Done: c.done, ExitCode: 0})
			require.NoError(t, err)
			require.NoError(t, os.WriteFile(filepath.Join(dir, outcomeFile), data, 0o600))
			_, err = (&Detached{}).read(dir, Transaction{Argv: []string{"dnf"}}, Outcome{}, c.werr)
			if c.ok {
				assert.NoError(t, err)
				return
			}
			require.Error(t, err)
			assert.Contains(t, err.Error(), "ended before it finished settling")
		})
	}
	// The next run reports such a record as unknown.
	d := &Detached{Dir: t.TempDir()}
	dir := filepath.Join(d.Dir, "000000000001-x-1")
	require.NoError(t, os.Mkdir(dir, 0o700))
	data, _ := json.Marshal(outcomeRecord{Done: &f, ExitCode: 0})
	require.NoError(t, os.WriteFile(filepath.Join(dir, outcomeFile), data, 0o600))
	req, _ := json.Marshal(request{Transaction: Transaction{Argv: []string{"dnf"}, Names: []string{"demo"}}})
	require.NoError(t, os.WriteFile(filepath.Join(dir, requestFile), req, 0o600))
	e := d.unreported([]string{"demo"})
	require.NotNil(t, e)
	assert.Contains(t, e.Outcome, "unknown: its supervisor ended before it finished settling")
}
