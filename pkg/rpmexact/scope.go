package rpmexact

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
)

// scopeUnit names the transient scope a transaction runs in, or "" where systemd is not
// PID 1 (a container without it, a chroot): then the supervisor stays in the caller's
// cgroup, as before, and the result says so.
func (d *Detached) scopeUnit(dir string) string {
	if d.NoScope {
		return ""
	}
	if fi, err := os.Stat("/run/systemd/system"); err != nil || !fi.IsDir() {
		return ""
	}
	if _, err := exec.LookPath("systemd-run"); err != nil {
		return ""
	}
	return "richt-rpm-transaction-" + strings.SplitN(filepath.Base(dir), "-", 2)[0] + ".scope"
}

// scopeArgv wraps the supervisor's command line in systemd-run --scope. systemd-run
// executes the program it is given by its path, with that path as argv[0]: the module's
// name goes first among the arguments, where the multi-call binary looks.
func scopeArgv(scope, path string, argv []string, name string) (string, []string) {
	if path == exePath && name != "" {
		argv = []string{path, name}
	} else {
		argv = append([]string{path}, argv[1:]...)
	}
	unit := strings.TrimSuffix(scope, ".scope")
	run := []string{"systemd-run", "--scope", "--quiet", "--collect", "--unit=" + unit,
		"--description=richt.services rpm_exact package transaction", "--"}
	bin, err := exec.LookPath("systemd-run")
	if err != nil {
		bin = "systemd-run"
	}
	return bin, append(run, argv...)
}

// supervisorCmd is the command that starts the supervisor of the transaction in dir, in
// scope ("": none), holding the transaction lock.
func (d *Detached) supervisorCmd(dir, scope string, h host) (*exec.Cmd, error) {
	files := []*os.File{d.held.File()}
	if d.Self == "/proc/self/exe" {
		exe, err := h.OpenSelf()
		if err != nil {
			return nil, err
		}
		files = append(files, exe) // exeFD
	}
	path, argv := selfArgv(h, os.Getpid(), d.Self, d.Name)
	if scope != "" {
		// A transient scope of its own (systemd-run --scope registers it, then executes the
		// supervisor, which keeps its file descriptors and environment): stopping the
		// caller's unit, its session or its cgroup no longer reaches DNF.
		path, argv = scopeArgv(scope, path, argv, d.Name)
	}
	// Path set as is: exec.Command would look exePath up in this process, where exeFD is
	// some other file.
	cmd := &exec.Cmd{Path: path, Args: argv}
	cmd.Env = append(os.Environ(), SuperviseEnv+"="+dir)
	// Its own session: no signal sent to the module's process group or terminal (Ansible's
	// timeout, a closed SSH connection) reaches it. No stdio: Ansible waits for the
	// module's output to close, and must not wait for DNF.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	cmd.ExtraFiles = files
	return cmd, nil
}
