package molecule

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
)

// defaultPythons are the interpreters tried for the testinfra verifier: the python3 on
// PATH first (the one Molecule's pytest would run under), then the system one, which is
// where Debian's python3-testinfra installs even when a pyenv or virtualenv python3 comes
// first on PATH.
var defaultPythons = []string{"python3", "/usr/bin/python3"}

// errNoTestinfra is the refusal of a testinfra scenario on a machine without it.
var errNoTestinfra = errors.New("verifier testinfra needs Debian's python3-testinfra: apt-get install python3-testinfra")

// testinfraPython returns the first interpreter of candidates that imports both testinfra
// and pytest.
func testinfraPython(candidates []string) (string, error) {
	for _, py := range candidates {
		if exec.Command(py, "-c", "import testinfra, pytest").Run() == nil {
			return py, nil
		}
	}
	return "", fmt.Errorf("%w (none of %s imports testinfra and pytest)", errNoTestinfra, strings.Join(candidates, ", "))
}

// testinfraTests lists what pytest runs, Molecule's way: every test_*.py below dir (links
// to directories followed), and what the additional globs match under dir, sorted.
func testinfraTests(dir string, additional []string) ([]string, error) {
	var files []string
	// The directories being walked, outermost first: a link back to one of them is a loop.
	// Checked by identity, not by depth, so the answer does not hang on how many links the
	// kernel resolves in one path.
	var stack []fs.FileInfo
	var walk func(string, fs.FileInfo) error
	walk = func(d string, self fs.FileInfo) error {
		for _, up := range stack {
			if os.SameFile(up, self) {
				return fmt.Errorf("%s: a link loop (it leads back to a directory above it)", d)
			}
		}
		stack = append(stack, self)
		defer func() { stack = stack[:len(stack)-1] }()
		entries, err := os.ReadDir(d)
		if err != nil {
			return err
		}
		for _, e := range entries {
			p := filepath.Join(d, e.Name())
			st, err := os.Stat(p)
			if err != nil {
				continue // a dangling link holds no test
			}
			if st.IsDir() {
				if err := walk(p, st); err != nil {
					return err
				}
			} else if ok, _ := filepath.Match("test_*.py", e.Name()); ok {
				files = append(files, p)
			}
		}
		return nil
	}
	switch top, err := os.Stat(dir); {
	case errors.Is(err, fs.ErrNotExist):
		// No tests directory: only what the globs name.
	case err != nil:
		return nil, err
	default:
		if err := walk(dir, top); err != nil {
			return nil, err
		}
	}
	for _, g := range additional {
		m, err := filepath.Glob(filepath.Join(dir, g))
		if err != nil {
			return nil, fmt.Errorf("verifier.additional_files_or_dirs %q: %w", g, err)
		}
		files = append(files, m...)
	}
	sort.Strings(files)
	return files, nil
}

// testinfra runs the scenario's testinfra tests with pytest over the run's Ansible
// inventory, as Molecule's testinfra verifier does: testinfra reads each host's
// connection from it (community.docker.docker becomes its docker backend, so every check
// is a docker exec into the target). A failure exits with pytest's code; the message
// names the failed tests.
func (s *scenario) testinfra(ctx context.Context) error {
	dir := s.cfg.Verifier.Directory
	if !filepath.IsAbs(dir) {
		dir = filepath.Join(s.dir, dir)
	}
	tests, err := testinfraTests(dir, s.cfg.Verifier.AdditionalFilesOrDirs)
	if err != nil {
		return failf("verify: %v", err)
	}
	if len(tests) == 0 {
		s.logf("verify: Skipping, no tests found.")
		return nil
	}
	cfgPath, err := s.ansibleConfig()
	if err != nil {
		return fmt.Errorf("ansible.cfg: %w", err)
	}
	options := map[string]any{
		"connection":        "ansible",
		"ansible-inventory": filepath.Join(s.stateDir, "inventory.yml"),
		"p":                 "no:cacheprovider",
	}
	for k, v := range s.cfg.Verifier.Options {
		options[k] = v
	}
	argv := append([]string{"-m", "pytest"}, optionArgs(options)...)
	argv = append(argv, tests...)
	s.logf("verify: Executing Testinfra tests found in %s/...", dir)
	cmd := exec.CommandContext(ctx, s.python, argv...)
	cmd.Dir = s.dir
	// No __pycache__ in the role's tests directory.
	cmd.Env = append(s.env(cfgPath), "PYTHONDONTWRITEBYTECODE=1")
	if s.r.Getenv("COLUMNS") == "" {
		// Without a terminal pytest assumes 80 columns and cuts each FAILED line's
		// message, the part the run's error repeats, to fit them.
		cmd.Env = append(cmd.Env, "COLUMNS=200")
	}
	for _, k := range slices.Sorted(maps.Keys(s.cfg.Verifier.Env)) {
		cmd.Env = append(cmd.Env, k+"="+s.cfg.Verifier.Env[k])
	}
	var buf bytes.Buffer
	w := io.MultiWriter(&buf, s.out)
	cmd.Stdout, cmd.Stderr = w, w
	if err := cmd.Run(); err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			msg := fmt.Sprintf("Testinfra return code was %d, command was: %s", ee.ExitCode(), shellJoin(append([]string{s.python}, argv...)))
			if sum := pytestSummary(buf.String()); sum != "" {
				msg += "\n" + sum
			}
			return &ExitError{Code: ee.ExitCode(), Msg: msg}
		}
		return failf("verify: run %s -m pytest: %v", s.python, err)
	}
	s.logf("verify: Verifier completed successfully.")
	return nil
}

// pytestSummary picks what names a failed run out of pytest's output: the short summary's
// FAILED and ERROR lines and the closing count ("1 failed, 2 passed in 0.52s"), so the
// run's error says which checks failed without the whole report.
func pytestSummary(out string) string {
	var lines []string
	last := ""
	sc := bufio.NewScanner(strings.NewReader(out))
	sc.Buffer(make([]byte, 64<<10), len(out)+1) // no line too long to reach the end
	for sc.Scan() {
		line := strings.TrimRight(sc.Text(), " \r")
		if strings.HasPrefix(line, "FAILED ") || strings.HasPrefix(line, "ERROR ") {
			lines = append(lines, line)
			continue
		}
		if t := strings.Trim(line, "= "); strings.HasPrefix(line, "=") && strings.Contains(t, " in ") &&
			(strings.Contains(t, "failed") || strings.Contains(t, "passed") || strings.Contains(t, "error")) {
			last = t
		}
	}
	if last != "" {
		lines = append(lines, last)
	}
	return strings.Join(lines, "\n")
}
