package rpmexact

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
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
	native := map[string]string{"/proc/self/exe": "/opt/richt-modules", "/proc/self/task/42/exe": "/opt/richt-modules"}
	emulated := map[string]string{"/proc/self/exe": "/usr/local/libexec/richt/arm64/rpm_exact", "/proc/self/task/42/exe": "/usr/local/libexec/richt/qemu-aarch64-static"}
	formatErr := &os.PathError{Op: "fork/exec", Path: "/proc/self/fd/4", Err: syscall.ENOEXEC}
	tests := []struct {
		name     string
		self     string
		links    map[string]string
		execErr  error // what executing the program natively gives
		wantPath string
		wantArgv []string
	}{
		{"native: the inherited executable", "/proc/self/exe", native, nil,
			"/proc/self/fd/4", []string{"rpm_exact"}},
		{"native, program file removed: the inherited executable still", "/proc/self/exe",
			map[string]string{"/proc/self/exe": "/tmp/x/AnsiballZ_rpm_exact (deleted)", "/proc/self/task/42/exe": "/tmp/x/AnsiballZ_rpm_exact (deleted)"}, nil,
			"/proc/self/fd/4", []string{"rpm_exact"}},
		// binfmt_misc runs the program (a container of another architecture): the kernel
		// does so again, and the emulator it names may not exist in this mount namespace.
		{"emulated by binfmt_misc: natively", "/proc/self/exe",
			map[string]string{"/proc/self/exe": "/usr/local/bin/rpm_exact", "/proc/self/task/42/exe": "/usr/libexec/qemu-binfmt/aarch64-binfmt-P"}, nil,
			"/proc/self/fd/4", []string{"rpm_exact"}},
		{"under an emulator started by hand: through the same emulator", "/proc/self/exe", emulated, formatErr,
			"/usr/local/libexec/richt/qemu-aarch64-static", []string{"/usr/local/libexec/richt/qemu-aarch64-static", "-0", "rpm_exact", "/proc/self/fd/4"}},
		{"another failure to execute it: natively, where starting it reports that", "/proc/self/exe", emulated, errors.New("permission denied"),
			"/proc/self/fd/4", []string{"rpm_exact"}},
		{"links unreadable: natively", "/proc/self/exe", map[string]string{}, nil,
			"/proc/self/fd/4", []string{"rpm_exact"}},
		{"an explicit program (tests) is taken as it is", "/usr/bin/true",
			map[string]string{"/proc/self/exe": "/a", "/proc/self/task/42/exe": "/b"}, nil,
			"/usr/bin/true", []string{"rpm_exact"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := &fakeHost{readlink: links(tt.links), execErr: tt.execErr}
			path, argv := selfArgv(h, 42, tt.self, "rpm_exact")
			assert.Equal(t, tt.wantPath, path)
			assert.Equal(t, tt.wantArgv, argv)
			if tt.links["/proc/self/exe"] == tt.links["/proc/self/task/42/exe"] {
				assert.Empty(t, h.executed, "natively, nothing is tried first")
			}
		})
	}
}

// fakeHost answers readlink from a table, opens the test binary as its own executable and
// says what executing a program natively gives.
type fakeHost struct {
	readlink func(string) (string, error)
	execErr  error
	executed [][]string
	exe      *os.File
}

func (h *fakeHost) Readlink(p string) (string, error) { return h.readlink(p) }

func (h *fakeHost) Execute(argv []string) error {
	h.executed = append(h.executed, argv)
	return h.execErr
}

func (h *fakeHost) OpenSelf() (*os.File, error) {
	if h.exe == nil {
		self, err := os.Executable()
		if err != nil {
			return nil, err
		}
		if h.exe, err = os.Open(self); err != nil {
			return nil, err
		}
	}
	return h.exe, nil
}

// The supervisor is executed from the module's own executable, open in the module and
// inherited through systemd-run: never through /proc/PID/exe of the module, which is gone
// when the module ended first (its deadline, SIGKILL, a lost SSH session; then DNF never
// ran) and names another program once the PID is reused.
func TestSupervisorStartsFromAnInheritedExecutable(t *testing.T) {
	for _, scope := range []string{"richt-rpm-transaction-000000000001.scope", ""} {
		t.Run("scope "+scope, func(t *testing.T) {
			d := &Detached{Dir: filepath.Join(t.TempDir(), "transactions"), LockDir: t.TempDir(), Self: "/proc/self/exe", Name: "rpm_exact"}
			require.NoError(t, os.Mkdir(d.Dir, 0o700))
			release, _, err := d.Begin(context.Background(), false, nil)
			require.NoError(t, err)
			defer release()
			h := &fakeHost{readlink: os.Readlink}
			defer func() {
				if h.exe != nil {
					h.exe.Close()
				}
			}()
			cmd, err := d.supervisorCmd(filepath.Join(d.Dir, "000000000001-x-1"), scope, h)
			require.NoError(t, err)
			require.NoError(t, cmd.Err, "nothing looked up in the module's own file descriptors")
			for _, a := range append([]string{cmd.Path}, cmd.Args...) {
				assert.NotRegexp(t, `^/proc/[0-9]+/exe$`, a)
			}
			require.NotNil(t, h.exe, "the module's own executable is opened")
			fd := slices.Index(cmd.ExtraFiles, h.exe)
			require.GreaterOrEqual(t, fd, 0, "and inherited by the supervisor")
			exe := fmt.Sprintf("/proc/self/fd/%d", 3+fd)
			if scope == "" {
				assert.Equal(t, exe, cmd.Path)
				assert.Equal(t, []string{"rpm_exact"}, cmd.Args)
				return
			}
			assert.Equal(t, "--", cmd.Args[len(cmd.Args)-3])
			assert.Equal(t, []string{exe, "rpm_exact"}, cmd.Args[len(cmd.Args)-2:], "systemd-run executes it in its own process")
		})
	}
}

// Executing the inherited executable works for a program (the test binary), and a file
// the kernel cannot execute says so with ENOEXEC, which is what chooses the emulator.
func TestExecuteFromAnInheritedExecutable(t *testing.T) {
	self, err := os.Executable()
	require.NoError(t, err)
	exe, err := os.Open(self)
	require.NoError(t, err)
	defer exe.Close()
	assert.NoError(t, executeFrom(exe, []string{"rpm_exact", "-test.run=^$"}))

	foreign := filepath.Join(t.TempDir(), "foreign")
	require.NoError(t, os.WriteFile(foreign, []byte("\x7fELF not for this machine"), 0o755))
	f, err := os.Open(foreign)
	require.NoError(t, err)
	defer f.Close()
	assert.ErrorIs(t, executeFrom(f, []string{"rpm_exact"}), syscall.ENOEXEC)
}

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
