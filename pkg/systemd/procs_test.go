package systemd

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/godbus/dbus/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParsePIDs(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []int
		err  string
	}{
		{in: "", want: nil},
		{in: "12\n7\n", want: []int{12, 7}},
		{in: "12\n\n7", want: []int{12, 7}},
		{in: "12\nx\n", want: []int{12}, err: `"x" is not a PID`},
		{in: "0\n", err: `"0" is not a PID`},
		{in: "-3\n", err: `"-3" is not a PID`},
	} {
		got, err := ParsePIDs(strings.NewReader(tc.in))
		assert.Equal(t, tc.want, got, "%q", tc.in)
		if tc.err == "" {
			assert.NoError(t, err)
		} else {
			assert.ErrorContains(t, err, tc.err)
		}
	}
}

// A unit's processes are those of its cgroup and every cgroup below it (a service's
// control processes, a delegated subtree), once each, sorted.
func TestCgroupProcsWalksTheSubtree(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "sub", "deeper"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "cgroup.procs"), []byte("30\n4\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "sub", "cgroup.procs"), []byte("4\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "sub", "deeper", "cgroup.procs"), []byte("9\n"), 0o644))
	got, err := cgroupProcs(dir)
	require.NoError(t, err)
	assert.Equal(t, []int{4, 9, 30}, got)
}

func FuzzParsePIDs(f *testing.F) {
	for _, s := range []string{"", "1\n2\n", "x", "0", "99999999999999999999\n", " 5 \n"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		pids, err := ParsePIDs(strings.NewReader(s))
		for _, p := range pids {
			if p <= 0 {
				t.Fatalf("PID %d from %q", p, s)
			}
		}
		_ = err
	})
}

// procsCaller answers GetUnitProcesses with body, as systemd's a(sus) reply decodes.
type procsCaller struct {
	body   []any
	method string
	args   []any
}

func (c *procsCaller) call(_ context.Context, _ dbus.ObjectPath, method string, args ...any) ([]any, error) {
	c.method, c.args = method, args
	return c.body, nil
}
func (c *procsCaller) Close() error { return nil }

// Over D-Bus the Manager's GetUnitProcesses lists the unit's cgroup subtree: its PIDs,
// once each, sorted.
func TestBusUnitProcesses(t *testing.T) {
	type proc struct {
		Cgroup string
		PID    uint32
		Cmd    string
	}
	c := &procsCaller{body: []any{[]proc{
		{"/system.slice/nginx.service", 31, "nginx: worker process"},
		{"/system.slice/nginx.service", 12, "nginx: master process /usr/sbin/nginx"},
		{"/system.slice/nginx.service/sub", 31, "nginx: worker process"},
	}}}
	pids, err := (&Bus{obs: c}).UnitProcesses(context.Background(), "nginx.service")
	require.NoError(t, err)
	assert.Equal(t, []int{12, 31}, pids)
	assert.Equal(t, "org.freedesktop.systemd1.Manager.GetUnitProcesses", c.method)
	assert.Equal(t, []any{"nginx.service"}, c.args)
}
