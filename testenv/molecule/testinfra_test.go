package molecule

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// A testinfra scenario on a machine without testinfra is refused by name before anything
// is created; the sub-commands that do not verify still run.
func TestTestinfraRefusedWithoutIt(t *testing.T) {
	state := t.TempDir()
	r := &Runner{ProjectDir: "testdata/webrole", StateRoot: state, Out: &strings.Builder{},
		Pythons: []string{filepath.Join(t.TempDir(), "no-python3")}}
	for _, command := range []string{"test", "verify"} {
		err := r.Run(context.Background(), command, []string{"testinfra"})
		var ee *ExitError
		if !errors.As(err, &ee) || ee.Code != 1 || !strings.Contains(ee.Msg, "verifier testinfra needs Debian's python3-testinfra: apt-get install python3-testinfra") ||
			!strings.Contains(ee.Msg, filepath.Join("testinfra", "molecule.yml")) {
			t.Errorf("%s: %#v, want the refusal naming the package", command, err)
		}
	}
	if entries, _ := os.ReadDir(state); len(entries) != 0 {
		t.Errorf("a refused run left state behind: %v", entries)
	}
	s, err := r.load("testinfra")
	if err != nil {
		t.Fatal(err)
	}
	if err := s.needVerifier("destroy"); err != nil {
		t.Errorf("destroy refused: %v", err)
	}
}

func TestTestinfraTests(t *testing.T) {
	dir := t.TempDir()
	for _, f := range []string{"test_a.py", "sub/test_b.py", "sub/helper.py", "extra/check_c.py", "conftest.py"} {
		p := filepath.Join(dir, "tests", f)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// A linked directory is walked, as Molecule's os.walk(followlinks=True) does.
	if err := os.Symlink(filepath.Join(dir, "tests", "sub"), filepath.Join(dir, "tests", "linked")); err != nil {
		t.Fatal(err)
	}
	tests := filepath.Join(dir, "tests")
	got, err := testinfraTests(tests, []string{"extra/check_*.py", "nothing/*.py"})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"extra/check_c.py", "linked/test_b.py", "sub/test_b.py", "test_a.py"}
	for i := range want {
		want[i] = filepath.Join(tests, want[i])
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("tests = %v, want %v", got, want)
	}
	if got, err := testinfraTests(filepath.Join(dir, "absent"), nil); err != nil || len(got) != 0 {
		t.Errorf("absent directory: %v, %v; want no tests", got, err)
	}
	if _, err := testinfraTests(tests, []string{"["}); err == nil || !strings.Contains(err.Error(), "verifier.additional_files_or_dirs") {
		t.Errorf("bad glob: %v", err)
	}
	// A link back up would walk forever.
	if err := os.Symlink(tests, filepath.Join(dir, "tests", "sub", "loop")); err != nil {
		t.Fatal(err)
	}
	if _, err := testinfraTests(tests, nil); err == nil || !strings.Contains(err.Error(), "a link loop") {
		t.Errorf("link loop: %v", err)
	}
}

// pytestFailure is the end of a failing pytest -v run, as pytest 7.2 prints it.
const pytestFailure = `failing/test_failing.py::test_web_stopped[ansible://instance] FAILED          [ 50%]
failing/test_failing.py::test_web_enabled[ansible://instance] PASSED          [100%]

=================================== FAILURES ===================================
_____________________ test_web_stopped[ansible://instance] _____________________
E       AssertionError: web.service is running
=========================== short test summary info ============================
FAILED failing/test_failing.py::test_web_stopped[ansible://instance] - AssertionError: web.service is running
========================= 1 failed, 1 passed in 0.81s ==========================
`

func TestPytestSummary(t *testing.T) {
	for _, tc := range []struct{ out, want string }{
		{pytestFailure, "FAILED failing/test_failing.py::test_web_stopped[ansible://instance] - AssertionError: web.service is running\n1 failed, 1 passed in 0.81s"},
		{"ERROR tests/test_a.py - ModuleNotFoundError: No module named 'x'\n=== 1 error in 0.10s ===\n", "ERROR tests/test_a.py - ModuleNotFoundError: No module named 'x'\n1 error in 0.10s"},
		{"ERROR: usage: pytest [options]\n", ""},
		{"", ""},
	} {
		if got := pytestSummary(tc.out); got != tc.want {
			t.Errorf("pytestSummary(%q) = %q, want %q", tc.out, got, tc.want)
		}
	}
}
