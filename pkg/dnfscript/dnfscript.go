// Package dnfscript reads DNF 4 as the Python script it is on a host: the file a command
// resolves to ([LocateCommand]), one of its files read within a bound ([ReadFile]), and the
// interpreter on its #! line ([Interpreter]), whether it is DNF 4's command line ([RunsCLI])
// and its #! line as the kernel reads it ([Shebang]). rpm_exact reads DNF's version and
// starts DNF's interpreter ahead of a transaction through it, and rollback finds the Python
// that imports DNF through it; it is its own leaf so that neither module package reaches
// into the other.
package dnfscript

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"unicode"
)

// LocateCommand is the file a command resolves to through PATH and symlinks.
func LocateCommand(command string) (string, error) {
	path, err := exec.LookPath(command)
	if err != nil {
		return "", fmt.Errorf("find %s: %w", command, err)
	}
	real, err := filepath.EvalSymlinks(path)
	if err != nil {
		return "", fmt.Errorf("resolve %s: %w", path, err)
	}
	return real, nil
}

// MaxFile bounds what ReadFile reads: DNF 4's script is about 1 KB and its const.py a few
// KB, while DNF 5's dnf is a compiled program of megabytes that need not be read to know it
// is not a script.
const MaxFile = 64 << 10

// ErrTooLarge is ReadFile's answer for a file above MaxFile.
var ErrTooLarge = errors.New("larger than a DNF 4 script or constants file")

// ReadFile reads one of the manager's files (its script, its constants), refusing one
// larger than any DNF 4 file it looks at, without reading more of it than that bound.
func ReadFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxFile+1))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	if len(data) > MaxFile {
		return nil, fmt.Errorf("%s: %w", path, ErrTooLarge)
	}
	return data, nil
}

// Interpreter is the absolute interpreter path on a script's #! line. Options after
// it are allowed (and not passed on: the caller runs the interpreter isolated); `env`
// indirection is not, since PATH lookup is not what the script's own run would do.
func Interpreter(src []byte) (string, bool) {
	first, _, _ := strings.Cut(string(src), "\n")
	rest, ok := strings.CutPrefix(first, "#!")
	if !ok {
		return "", false
	}
	fields := strings.Fields(rest)
	if len(fields) == 0 || !strings.HasPrefix(fields[0], "/") || strings.HasSuffix(fields[0], "/env") {
		return "", false
	}
	for _, opt := range fields[1:] {
		if !strings.HasPrefix(opt, "-") {
			return "", false
		}
	}
	return fields[0], true
}

// Shebang is a script's #! line without the line end: the interpreter and the one
// argument the kernel passes it (everything after the interpreter, as one string, "" for
// none), for a line [Interpreter] accepts. A line with a control character other than a
// tab (a carriage return, a vertical tab) is refused: the kernel separates only at spaces
// and tabs, and would read it otherwise than Interpreter does.
func Shebang(src []byte) (interp, arg string, ok bool) {
	interp, ok = Interpreter(src)
	if !ok {
		return "", "", false
	}
	first, _, _ := strings.Cut(string(src), "\n")
	if strings.ContainsFunc(first, func(r rune) bool { return r != '\t' && (r < ' ' || r == 0x7f || unicode.IsSpace(r) && r != ' ') }) {
		return "", "", false
	}
	rest := strings.TrimLeft(strings.TrimPrefix(first, "#!"), " \t")
	rest = strings.TrimPrefix(rest, interp)
	return interp, strings.Trim(rest, " \t"), true
}

// cliLines are the statements DNF 4's command-line script ends with (dnf, dnf-3, and
// DNF 4's yum, which is a link to it): it imports DNF's command line and runs it on its
// arguments, leaving with its exit code.
var cliLines = []string{"from dnf.cli import main", "main.user_main(sys.argv[1:], exit_code=True)"}

// RunsCLI says whether src is DNF 4's command-line script: a #! line [Interpreter]
// accepts, and DNF's command line imported and run as DNF 4's own script does it.
func RunsCLI(src []byte) bool {
	if _, ok := Interpreter(src); !ok {
		return false
	}
	lines := map[string]bool{}
	for _, l := range strings.Split(string(src), "\n") {
		lines[strings.TrimSpace(l)] = true
	}
	for _, l := range cliLines {
		if !lines[l] {
			return false
		}
	}
	return true
}
