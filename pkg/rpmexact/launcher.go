package rpmexact

import (
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"unicode/utf8"

	"github.com/richt/services/pkg/dnfscript"
	"github.com/richt/services/pkg/lock"
	"github.com/richt/services/pkg/runner"
)

// DNF 4 is a Python program: its interpreter's start and the import of its command line
// are a third to a half of a small transaction, and its interpreter's teardown at the end
// another 30-40 ms. The supervisor's reading of the host before DNF (the listing and the
// unit directories, snapshot.go) waited for nothing but took its own 30-50 ms before DNF's
// interpreter even started. So where the command is DNF 4's own script, the supervisor
// starts DNF's interpreter first, through a launcher that imports DNF's command line and
// then waits on a gate (a pipe), reads the host meanwhile, and opens the gate only once
// that reading is done: DNF runs nothing before the snapshot is taken. Should the reading
// fail, or the supervisor end before it opens the gate (a SIGKILL, a crash), the pipe
// closes unopened and the launcher leaves without running anything (gateClosedExit).
// Once DNF's script returns, the launcher flushes DNF's output and logs and leaves
// without the interpreter's teardown (dnflauncher.py says what that skips, and
// docs/reliability.md the evidence).

//go:embed dnflauncher.py
var launcherBody string

// launcherDir is the subdirectory of a transaction's record the launcher is written to,
// under the command's own name (dnf, yum): the kernel names the process after the file it
// executes, so DNF's process is still "dnf" to ps and pgrep.
const launcherDir = "bin"

// gateFD is the gate's descriptor in the launcher; 3 is the transaction lock, which DNF
// inherits, as without the launcher.
const gateFD = 4

// gateClosedExit is the launcher's exit code when the gate closed unopened: DNF did not
// run. DNF's own codes are 0, 1, 100 and 200, a signal's 128+N.
const gateClosedExit = 250

// gateOpen is the byte that opens the gate; an end of file (or any other byte) closes it.
const gateOpen = "1"

// dnfLaunch is a start of DNF's command through the launcher.
type dnfLaunch struct {
	// Script is the path the command resolves to through PATH, as the kernel passes a
	// script's path to its interpreter (the launcher hands it to DNF as sys.argv[0]).
	Script string
	// Shebang is the #! line of DNF's script, the launcher's own: the same interpreter
	// with the same options.
	Shebang string
}

// scriptFiles is what choosing the launcher reads; tests fake it.
type scriptFiles struct {
	LookPath     func(file string) (string, error)
	EvalSymlinks func(path string) (string, error)
	ReadFile     func(path string) ([]byte, error)
}

// hostScriptFiles reads this host, as exec.Command finds a command.
var hostScriptFiles = scriptFiles{LookPath: exec.LookPath, EvalSymlinks: filepath.EvalSymlinks, ReadFile: dnfscript.ReadFile}

// dnfScriptDir is where DNF 4's script lives on every distribution it ships in: its script
// drops that directory from Python's path before it imports DNF, as the launcher does
// before its own import; elsewhere (a checkout run in place) the script puts another
// directory there, and DNF runs without the launcher.
const dnfScriptDir = "/usr/bin"

// launchFor says how argv0 is started: through the launcher when it resolves to DNF 4's
// command-line script in dnfScriptDir with an interpreter that puts the script's directory
// on Python's path (no -I, no -P); anything else (DNF 5, a wrapper, a test's fake) runs as
// it is, after the snapshot.
func launchFor(argv0 string, fs scriptFiles) (dnfLaunch, bool) {
	path, err := fs.LookPath(argv0)
	if err != nil || !utf8.ValidString(path) {
		return dnfLaunch{}, false
	}
	real, err := fs.EvalSymlinks(path)
	if err != nil || filepath.Dir(real) != dnfScriptDir {
		return dnfLaunch{}, false
	}
	src, err := fs.ReadFile(real)
	if err != nil || !dnfscript.RunsCLI(src) {
		return dnfLaunch{}, false
	}
	interp, arg, ok := dnfscript.Shebang(src)
	if !ok || strings.ContainsAny(arg, "IP") {
		return dnfLaunch{}, false
	}
	shebang := "#!" + interp
	if arg != "" {
		shebang += " " + arg
	}
	return dnfLaunch{Script: path, Shebang: shebang}, true
}

// launcherSource is the launcher for l: DNF's #! line, the constants, the body.
func launcherSource(l dnfLaunch) []byte {
	script, _ := json.Marshal(l.Script) // a JSON string of valid UTF-8 is a Python string literal
	return fmt.Appendf(nil, "%s\nSCRIPT = %s\nGATE = %d\nCLOSED = %d\n\n%s", l.Shebang, script, gateFD, gateClosedExit, launcherBody)
}

// writeLauncher writes l's launcher into the transaction's record dir, named as argv0.
func writeLauncher(dir, argv0 string, l dnfLaunch) (string, error) {
	bin := filepath.Join(dir, launcherDir)
	if err := os.Mkdir(bin, 0o700); err != nil {
		return "", fmt.Errorf("create DNF's launcher directory: %w", err)
	}
	path := filepath.Join(bin, filepath.Base(argv0))
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW, 0o700)
	if err != nil {
		return "", fmt.Errorf("write DNF's launcher: %w", err)
	}
	if _, err := f.Write(launcherSource(l)); err != nil {
		f.Close()
		return "", fmt.Errorf("write DNF's launcher %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return "", fmt.Errorf("write DNF's launcher %s: %w", path, err)
	}
	return path, nil
}

// dnfProc is DNF's started process, its output going to the record's files.
type dnfProc struct {
	argv           []string // the command as asked, whether or not the launcher starts it
	cmd            *exec.Cmd
	stdout, stderr *os.File
	// gate is the gate's write end for a start through the launcher, nil otherwise.
	gate *os.File
}

// startLogged starts argv with its output in dir's files and names it as the lock's
// holder. With launcher set (the launcher's path) it starts the launcher with argv's
// arguments and the gate closed; otherwise argv itself.
func startLogged(dir string, held *os.File, argv []string, launcher string) (*dnfProc, error) {
	open := func(name string) (*os.File, error) {
		return os.OpenFile(filepath.Join(dir, name), os.O_WRONLY|os.O_CREATE|os.O_TRUNC|syscall.O_NOFOLLOW, 0o600)
	}
	p := &dnfProc{argv: argv}
	var err error
	if p.stdout, err = open(stdoutFile); err != nil {
		return nil, err
	}
	if p.stderr, err = open(stderrFile); err != nil {
		p.stdout.Close()
		return nil, err
	}
	var cmd *exec.Cmd
	var gateR *os.File
	if launcher != "" {
		// Path set as is, and the launcher executed by the kernel (its #! line is DNF's).
		cmd = &exec.Cmd{Path: launcher, Args: append([]string{launcher}, argv[1:]...)}
		gateR, p.gate, err = os.Pipe()
		if err != nil {
			p.closeFiles()
			return nil, fmt.Errorf("create DNF's gate: %w", err)
		}
		cmd.ExtraFiles = []*os.File{held, gateR} // 3: the lock, as DNF inherits it otherwise; gateFD
	} else {
		cmd = exec.Command(argv[0], argv[1:]...)
	}
	cmd.Env = slices.DeleteFunc(runner.Env(), func(kv string) bool { return strings.HasPrefix(kv, SuperviseEnv+"=") })
	cmd.Stdout, cmd.Stderr = p.stdout, p.stderr
	err = cmd.Start()
	if gateR != nil {
		gateR.Close() // the launcher's copy is the only reader: it sees the end of file when the gate closes
	}
	if err != nil {
		p.closeFiles()
		return nil, err
	}
	p.cmd = cmd
	_ = lock.WriteHolder(held, cmd.Process.Pid) // only for messages of waiting runs
	return p, nil
}

func (p *dnfProc) closeFiles() {
	p.stdout.Close()
	p.stderr.Close()
	if p.gate != nil {
		p.gate.Close()
		p.gate = nil
	}
}

// openGate lets DNF run. An error says the launcher had ended before (it never read the
// gate, so DNF did not run); the process is waited for then.
func (p *dnfProc) openGate() error {
	if p.gate == nil {
		return nil
	}
	_, err := p.gate.Write([]byte(gateOpen))
	p.gate.Close()
	p.gate = nil
	if err == nil {
		return nil
	}
	res, werr := p.wait()
	if werr != nil {
		return fmt.Errorf("DNF's interpreter ended before its gate opened (%w)", werr)
	}
	return fmt.Errorf("DNF's interpreter ended before its gate opened (exit %d); DNF did not run", res.ExitCode)
}

// closeGate keeps DNF from running: the gate closes unopened and the launcher, once it
// has imported DNF's command line, leaves with gateClosedExit, which it waits for. An error
// says it ended otherwise (a signal).
func (p *dnfProc) closeGate() error {
	if p.gate != nil {
		p.gate.Close()
		p.gate = nil
	}
	res, err := p.wait()
	if err != nil {
		return err
	}
	if res.ExitCode != gateClosedExit {
		return fmt.Errorf("DNF's interpreter, its gate closed, exited %d instead of %d", res.ExitCode, gateClosedExit)
	}
	return nil
}

// wait waits for the process to end (once: openGate's and closeGate's errors have waited);
// a signal's end is 128+N, as a shell reports it.
func (p *dnfProc) wait() (runner.Result, error) {
	defer p.closeFiles()
	res := runner.Result{Argv: p.argv}
	err := p.cmd.Wait()
	var exitErr *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &exitErr):
		res.ExitCode = exitErr.ExitCode()
		if res.ExitCode < 0 { // ended by a signal
			res.ExitCode = 128 + int(exitErr.Sys().(syscall.WaitStatus).Signal())
		}
	default:
		return res, err
	}
	return res, nil
}
