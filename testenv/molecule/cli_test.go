package molecule

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestParseArgs(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want Command
	}{
		{[]string{"test"}, Command{Name: "test", Scenarios: []string{"default"}, Parallel: 1, Destroy: "always"}},
		{[]string{"test", "-s", "a", "--scenario-name", "b", "--scenario-name=c"}, Command{Name: "test", Scenarios: []string{"a", "b", "c"}, Parallel: 1, Destroy: "always"}},
		{[]string{"test", "--all", "--parallel", "3"}, Command{Name: "test", All: true, Parallel: 3, Destroy: "always"}},
		{[]string{"test", "--all", "--parallel"}, Command{Name: "test", All: true, Parallel: 0, Destroy: "always"}},
		{[]string{"test", "--parallel=2", "--destroy=never", "--", "-vvv", "--diff"}, Command{Name: "test", Scenarios: []string{"default"}, Parallel: 2, Destroy: "never", Args: []string{"-vvv", "--diff"}}},
		{[]string{"login", "--host", "el9", "-s", "twogen"}, Command{Name: "login", Scenarios: []string{"twogen"}, Parallel: 1, Destroy: "always", Host: "el9"}},
	} {
		got, err := ParseArgs(tc.args)
		if err != nil || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("ParseArgs(%q) = %+v, %v; want %+v", tc.args, got, err, tc.want)
		}
	}
	for _, args := range [][]string{
		{}, {"bogus"}, {"test", "-s"}, {"test", "--all", "-s", "a"}, {"test", "--parallel=0"},
		{"test", "--destroy", "sometimes"}, {"test", "--frobnicate"}, {"test", "extra"},
	} {
		if _, err := ParseArgs(args); err == nil {
			t.Errorf("ParseArgs(%q) accepted", args)
		}
	}
}

// Molecule's exit codes for what is decided before any target starts.
func TestMainExitCodes(t *testing.T) {
	for _, tc := range []struct {
		args []string
		code int
		msg  string
	}{
		{[]string{"bogus"}, 2, "no such command"},
		{[]string{"test", "-s", "nope"}, 1, "Scenario 'nope' not found. Exiting."},
		{[]string{"help"}, 0, ""},
		{[]string{"list", "--all"}, 0, ""},
		{[]string{"login", "-s", "default"}, 1, "Instances not created"},
	} {
		var out, errb bytes.Buffer
		t.Setenv("XDG_CACHE_HOME", t.TempDir())
		code, argv := Main(context.Background(), "testdata/webrole", tc.args, &out, &errb)
		if code != tc.code || argv != nil || !strings.Contains(errb.String(), tc.msg) {
			t.Errorf("Main(%q) = %d %v, stderr %q; want %d and %q", tc.args, code, argv, errb.String(), tc.code, tc.msg)
		}
	}
	var out bytes.Buffer
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	if code, _ := Main(context.Background(), "testdata/webrole", []string{"list", "-s", "twogen"}, &out, &out); code != 0 ||
		!strings.Contains(out.String(), "quay.io/almalinuxorg/almalinux:9 ← testenv's Debian bookworm target") ||
		!strings.Contains(out.String(), "quay.io/almalinuxorg/almalinux:10 ← testenv's Debian trixie target") {
		t.Errorf("list names the stand-ins:\n%s", out.String())
	}
}

// A refused molecule.yml fails with 1 and the reason, before anything starts.
func TestMainRefusedScenario(t *testing.T) {
	dir := t.TempDir()
	writeScenario(t, dir, "ubuntu", "platforms: [{name: u, image: 'ubuntu:24.04'}]\n")
	writeScenario(t, dir, "podman", "driver: {name: podman}\nplatforms: [{name: u, image: 'almalinux:9'}]\n")
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	for scenario, want := range map[string]string{
		"ubuntu": `image "ubuntu:24.04": names no EL generation`,
		"podman": `driver.name "podman": only docker is supported`,
	} {
		var out, errb bytes.Buffer
		code, _ := Main(context.Background(), dir, []string{"test", "-s", scenario}, &out, &errb)
		if code != 1 || !strings.Contains(errb.String(), want) {
			t.Errorf("%s: exit %d, stderr %q; want 1 and %q", scenario, code, errb.String(), want)
		}
	}
}

func TestStateDirsDiffer(t *testing.T) {
	a, _ := StateDir("/r", "/x/role", "default")
	b, _ := StateDir("/r", "/y/role", "default")
	c, _ := StateDir("/r", "/x/role", "upgrade")
	if a == b || a == c || !strings.HasPrefix(a, "/r/role-") {
		t.Errorf("state dirs: %s %s %s", a, b, c)
	}
	dir := t.TempDir()
	unlock, err := lockState(dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := lockState(dir); err == nil || !strings.Contains(err.Error(), "in use by another richt-molecule run") {
		t.Errorf("second lock: %v", err)
	}
	unlock()
	if u, err := lockState(dir); err != nil {
		t.Errorf("lock after unlock: %v", err)
	} else {
		u()
	}
}

func writeScenario(t *testing.T, project, name, yml string) {
	t.Helper()
	dir := filepath.Join(project, "molecule", name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "molecule.yml"), []byte(yml), 0o644); err != nil {
		t.Fatal(err)
	}
}
