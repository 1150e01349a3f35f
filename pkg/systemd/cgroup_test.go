package systemd

import "testing"

func TestParseGroup(t *testing.T) {
	for _, c := range []struct {
		out  string
		want Group
		ok   bool
	}{
		{"ControlGroup=/system.slice/web.service\nRefuseManualStop=no\n", Group{ControlGroup: "/system.slice/web.service"}, true},
		{"RefuseManualStop=yes\nControlGroup=\n", Group{RefuseManualStop: true}, true},
		{"ControlGroup=/a\n", Group{}, false},
		{"ControlGroup=a\nRefuseManualStop=no\n", Group{}, false},
		{"ControlGroup=/a\nRefuseManualStop=maybe\n", Group{}, false},
		{"ControlGroup=/a\nRefuseManualStop=no\nMainPID=1\n", Group{}, false},
		{"ControlGroup=/a\nControlGroup=/b\nRefuseManualStop=no\n", Group{}, false},
	} {
		got, err := parseGroup("web.service", c.out)
		if (err == nil) != c.ok || got != c.want {
			t.Errorf("%q: got %+v, %v", c.out, got, err)
		}
	}
}
