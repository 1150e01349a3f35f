package main

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/richt/services/testenv/internal/agentproto"
)

// outputWait is how long a finished command's output is still read while something it
// left behind holds its stdout or stderr open: Docker's exec returns about 2 s after the
// process exits in that case, and a test that backgrounds a daemon from a shell relies on
// the exec returning.
const outputWait = 2 * time.Second

// launch listens, starts the server with the listener and prints the port.
func launch() error {
	if os.Getenv(agentproto.TokenVar) == "" {
		return fmt.Errorf("%s is not set", agentproto.TokenVar)
	}
	ln, err := net.Listen("tcp", ":0")
	if err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	f, err := ln.(*net.TCPListener).File()
	if err != nil {
		return fmt.Errorf("listener file: %w", err)
	}
	self, err := os.Executable()
	if err != nil {
		return fmt.Errorf("find own binary: %w", err)
	}
	keepCgroup()
	cmd := exec.Command(self, "serve")
	cmd.ExtraFiles = []*os.File{f}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start server: %w", err)
	}
	fmt.Println(ln.Addr().(*net.TCPAddr).Port)
	return nil
}

// systemdWait bounds how long the launcher waits for the container's systemd to be past
// its cgroup set-up; an image whose init is not systemd never is, and its agent starts
// after the wait.
const systemdWait = 5 * time.Second

// systemdPrivate is systemd's private bus socket, made late in its start-up, in /run (a
// fresh tmpfs at every boot of a target). Launchers that found it had never been put in
// init.scope (watched from the host over repeated boots under load); earlier ones
// sometimes were.
const systemdPrivate = "/run/systemd/private"

// keepCgroup puts the agent in the cgroup a docker exec gets once the target is up: the
// agent is started as soon as the container runs, and while systemd starts, runc puts an
// exec'd process into the cgroup of the container's init (init.scope) instead of the
// container's own, where Docker's execs land afterwards. The launcher waits until systemd
// is past its start-up and, if it sits in init's init.scope, moves itself to the parent
// (in the unified hierarchy, the one systemd manages). Where that move is refused (a
// cgroup with controllers takes no processes), Docker's execs land in init.scope too, and
// the agent stays.
func keepCgroup() {
	for end := time.Now().Add(systemdWait); time.Now().Before(end); time.Sleep(5 * time.Millisecond) {
		if _, err := os.Stat(systemdPrivate); err == nil {
			break
		}
	}
	own, err := unifiedCgroup("/proc/self/cgroup")
	if err != nil || !strings.HasSuffix(own, "/init.scope") {
		return
	}
	if init, err := unifiedCgroup("/proc/1/cgroup"); err != nil || init != own {
		return
	}
	_ = os.WriteFile(filepath.Join("/sys/fs/cgroup", filepath.Dir(own), "cgroup.procs"), []byte("0"), 0)
}

// unifiedCgroup is the unified hierarchy's path ("0::PATH") in a /proc/PID/cgroup file.
func unifiedCgroup(file string) (string, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return "", err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if p, ok := strings.CutPrefix(line, "0::"); ok {
			return p, nil
		}
	}
	return "", nil
}

// serve answers requests on the listener in file 3 until the process is killed.
func serve() error {
	ln, err := net.FileListener(os.NewFile(3, "listener"))
	if err != nil {
		return fmt.Errorf("listener from file 3: %w", err)
	}
	token := os.Getenv(agentproto.TokenVar)
	if token == "" {
		return fmt.Errorf("%s is not set", agentproto.TokenVar)
	}
	base, home := agentproto.AgentEnv(os.Environ(), agentproto.TokenVar)
	dir, err := os.Getwd()
	if err != nil {
		dir = "/"
	}
	s := &server{token: token, base: base, home: home, dir: dir}
	for {
		c, err := ln.Accept()
		if err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			return fmt.Errorf("accept: %w", err)
		}
		go s.handle(c)
	}
}

// server holds what every command is run with: the container's environment, runc's home
// directory and the working directory Docker's exec gave the agent.
type server struct {
	token string
	base  []string
	home  string
	dir   string
}

func (s *server) handle(c net.Conn) {
	defer c.Close()
	h, body, err := agentproto.ReadRequest(bufio.NewReaderSize(c, 64<<10), s.token)
	if err != nil {
		_ = agentproto.WriteResponse(c, agentproto.Response{Err: err.Error()})
		return
	}
	_ = agentproto.WriteResponse(c, s.do(h, body))
}

// do carries out a checked request.
func (s *server) do(h agentproto.Header, body []byte) agentproto.Response {
	switch h.Op {
	case agentproto.OpExec:
		return s.exec(h.Argv, h.Env)
	case agentproto.OpWrite:
		if err := writeFile(h.Path, body, h.Mode); err != nil {
			return agentproto.Response{Err: err.Error()}
		}
	}
	return agentproto.Response{}
}

// exec runs argv as Docker's exec does: no shell, the container's environment with env
// merged in, the agent's working directory, stdin from /dev/null, stdout and stderr
// apart, a session of its own. A command that cannot be started exits 126 with runc's
// message on stdout; one killed by a signal exits 128+signal.
func (s *server) exec(argv, extra []string) agentproto.Response {
	env, err := agentproto.MergeEnv(s.base, extra, s.home)
	if err != nil {
		return startFailure(err)
	}
	path, err := lookPath(argv[0], env, s.dir)
	if err != nil {
		return startFailure(&exec.Error{Name: argv[0], Err: err})
	}
	var stdout, stderr bytes.Buffer
	cmd := &exec.Cmd{
		Path:        path,
		Args:        argv,
		Env:         env,
		Dir:         s.dir,
		Stdout:      &stdout,
		Stderr:      &stderr,
		SysProcAttr: &syscall.SysProcAttr{Setsid: true},
		WaitDelay:   outputWait,
	}
	if err := cmd.Start(); err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return startFailure(&exec.Error{Name: argv[0], Err: err})
	}
	_ = cmd.Wait() // the outcome is in ProcessState; ErrWaitDelay is the 2 s cut-off
	return agentproto.Response{Exit: exitCode(cmd.ProcessState), Stdout: stdout.Bytes(), Stderr: stderr.Bytes()}
}

func startFailure(err error) agentproto.Response {
	return agentproto.Response{Exit: agentproto.StartFailureExit, Stdout: agentproto.StartFailure(err)}
}

// exitCode is the process's exit status, or 128+signal for a process a signal ended, as
// Docker reports it.
func exitCode(ps *os.ProcessState) int {
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return ps.ExitCode()
}

// lookPath finds name as runc does before it starts a command: a name with a slash is
// taken as it is (relative to dir), any other is searched in env's PATH; it must be an
// executable file.
func lookPath(name string, env []string, dir string) (string, error) {
	if strings.Contains(name, "/") {
		p := name
		if !filepath.IsAbs(p) {
			p = filepath.Join(dir, p)
		}
		if err := executable(p); err != nil {
			return "", err
		}
		return p, nil
	}
	pathVar := ""
	for _, e := range env {
		if v, ok := strings.CutPrefix(e, "PATH="); ok {
			pathVar = v
		}
	}
	for _, d := range filepath.SplitList(pathVar) {
		if d == "" {
			d = "."
		}
		p := filepath.Join(d, name)
		if !filepath.IsAbs(p) {
			p = filepath.Join(dir, p)
		}
		if executable(p) == nil {
			return p, nil
		}
	}
	return "", exec.ErrNotFound
}

func executable(p string) error {
	fi, err := os.Stat(p)
	if err != nil {
		return err
	}
	if m := fi.Mode(); !m.IsDir() && m&0o111 != 0 {
		return nil
	}
	return fs.ErrPermission
}

// writeFile puts content at path with mode, owned by the agent's user (root), creating
// missing parent directories (0755). The content goes to a temporary file in the same
// directory that is renamed over path, so a reader never sees half a file and a running
// binary at path is replaced, not rewritten.
func writeFile(path string, content []byte, mode uint32) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	// While the file is open for writing, no command may be forked: a child forked then
	// holds the descriptor until it executes its program, and a command that executes the
	// renamed file meanwhile (a module binary written and run at once by concurrent
	// requests) fails with "text file busy". Forks take ForkLock for writing.
	syscall.ForkLock.RLock()
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".testenv-")
	if err != nil {
		syscall.ForkLock.RUnlock()
		return fmt.Errorf("write %s: %w", path, err)
	}
	tmp := f.Name()
	_, err = f.Write(content)
	if err == nil {
		// chmod, unlike open's mode, is not cut by the umask, as with install -m; the raw
		// call keeps the set-id and sticky bits as given.
		err = syscall.Fchmod(int(f.Fd()), mode)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	syscall.ForkLock.RUnlock()
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}
