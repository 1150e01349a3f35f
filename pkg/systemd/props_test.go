package systemd

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const goodShow = "Id=demo.service\nLoadState=loaded\nActiveState=active\nSubState=running\nUnitFileState=enabled\nNeedDaemonReload=no\nFragmentPath=/usr/lib/systemd/system/demo.service\nDropInPaths=/etc/systemd/system/demo.service.d/a.conf /etc/systemd/system/demo.service.d/b.conf\nMainPID=42\nInvocationID=abc\nCanReload=yes\nActiveEnterTimestampMonotonic=123456789\n"

func TestParseShow(t *testing.T) {
	p, err := ParseShow(goodShow)
	require.NoError(t, err)
	assert.Equal(t, Props{ID: "demo.service", LoadState: "loaded", ActiveState: "active", SubState: "running", UnitFileState: "enabled",
		FragmentPath: "/usr/lib/systemd/system/demo.service", DropInPaths: []string{"/etc/systemd/system/demo.service.d/a.conf", "/etc/systemd/system/demo.service.d/b.conf"},
		MainPID: 42, InvocationID: "abc", CanReload: true, ActiveEnterMono: 123456789}, p)

	notFound := "Id=nope.service\nLoadState=not-found\nActiveState=inactive\nSubState=dead\nUnitFileState=\nNeedDaemonReload=no\nFragmentPath=\nDropInPaths=\nMainPID=0\nInvocationID=\nCanReload=no\nActiveEnterTimestampMonotonic=0\n"
	p, err = ParseShow(notFound)
	require.NoError(t, err)
	assert.Nil(t, p.Enabled())
	assert.Empty(t, p.DropInPaths)

	bad := []struct{ name, out, msg string }{
		{"missing property", strings.Replace(goodShow, "MainPID=42\n", "", 1), "did not report property MainPID"},
		{"duplicated", goodShow + "MainPID=43\n", "property MainPID twice"},
		{"unrequested", goodShow + "Extra=1\n", `unrequested property "Extra"`},
		{"truncated", strings.TrimSuffix(goodShow, "\n"), "truncated"},
		{"malformed line", goodShow + "garbage\n", "malformed line"},
		{"bad bool", strings.Replace(goodShow, "NeedDaemonReload=no", "NeedDaemonReload=maybe", 1), "NeedDaemonReload=\"maybe\""},
		{"unknown load state", strings.Replace(goodShow, "LoadState=loaded", "LoadState=weird", 1), "unknown LoadState"},
		{"unknown active state", strings.Replace(goodShow, "ActiveState=active", "ActiveState=", 1), "unknown ActiveState"},
		{"bad pid", strings.Replace(goodShow, "MainPID=42", "MainPID=x", 1), "MainPID"},
		{"bad active-enter timestamp", strings.Replace(goodShow, "ActiveEnterTimestampMonotonic=123456789", "ActiveEnterTimestampMonotonic=-1", 1), "ActiveEnterTimestampMonotonic"},
		{"relative drop-in", strings.Replace(goodShow, "DropInPaths=/etc", "DropInPaths=etc", 1), "relative drop-in"},
		{"empty", "", "truncated"},
	}
	for _, c := range bad {
		t.Run(c.name, func(t *testing.T) {
			_, err := ParseShow(c.out)
			require.Error(t, err)
			assert.Contains(t, err.Error(), c.msg)
		})
	}
}

func TestEnabledStates(t *testing.T) {
	for st, want := range map[string]any{"enabled": true, "enabled-runtime": true, "disabled": false, "linked": false, "static": nil, "indirect": nil, "generated": nil, "transient": nil, "alias": nil, "masked": nil, "": nil} {
		got := Props{UnitFileState: st}.Enabled()
		if want == nil {
			assert.Nil(t, got, st)
		} else {
			require.NotNil(t, got, st)
			assert.Equal(t, want, *got, st)
		}
	}
}

func FuzzParseShow(f *testing.F) {
	f.Add(goodShow)
	f.Add("Id=x\n")
	f.Add("")
	f.Fuzz(func(t *testing.T, out string) {
		p, err := ParseShow(out)
		if err != nil {
			return
		}
		if p.ID == "" || !loadStates[p.LoadState] || !activeStates[p.ActiveState] || p.MainPID < 0 {
			t.Fatalf("accepted invalid answer %q as %+v", out, p)
		}
	})
}
