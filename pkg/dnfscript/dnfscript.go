// Package dnfscript reads DNF 4 as the Python script it is on a host: the file a command
// resolves to ([LocateCommand]), one of its files read within a bound ([ReadFile]), and the
// interpreter on its #! line ([Interpreter]). rpm_exact reads DNF's version through it and
// rollback finds the Python that imports DNF through it; it is its own leaf so that neither
// module package reaches into the other.
package dnfscript

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
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
