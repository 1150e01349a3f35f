package testenv

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/richt/services/testenv/internal/agentproto"
)

// Commands and file writes reach a target through testenv's agent, a small program
// started in every target that answers over TCP (testenv/internal/execagent), instead of
// Docker's exec and copy API: an exec through Docker costs dockerd, containerd, the
// shim and runc far more CPU than the command it runs, and a suite runs thousands. The
// agent keeps what Docker's exec does (docs/testenv.md, "How commands reach a target").
// When it cannot be built, started or reached, the target falls back to Docker's API.

// agentPath is where the agent binary is copied in a target whose Docker daemon cannot
// mount this process's directory (a remote DOCKER_HOST).
const agentPath = "/usr/local/libexec/testenv-agent"

// agentMount is where this process's agent directory is mounted read-only in every
// target, so the agent needs no copy per boot: a copy through Docker's API costs dockerd
// a re-execution of itself and the kernel a chroot and an archive, about 50 ms of CPU
// per target.
const agentMount = "/usr/local/libexec/testenv"

// agentName is the agent binary's name in agentMount and on the host.
const agentName = "testenv-agent"

// agentPkg is the agent's package, built like a module binary.
const agentPkg = "github.com/richt/services/testenv/internal/execagent"

// agentEnv chooses how commands reach targets: "docker" sends every one through Docker's
// API (to compare the two, or to rule the agent out); unset or "agent" uses the agent.
const agentEnv = "TESTENV_EXEC"

var agentBuild buildOnce

// agentDir is this process's directory for the agent binary, made before the binary is
// built so a target can mount it while the build still runs (the build overlaps the first
// boot).
var agentDir = sync.OnceValues(func() (string, error) {
	parent, err := processBuildDir()
	if err != nil {
		return "", err
	}
	dir := filepath.Join(parent, "agent")
	if err := os.Mkdir(dir, 0o755); err != nil {
		return "", fmt.Errorf("agent directory: %w", err)
	}
	// Whatever the umask: the mount shows the target the host's bits.
	if err := os.Chmod(dir, 0o755); err != nil {
		return "", fmt.Errorf("agent directory: %w", err)
	}
	return dir, nil
})

// agentBinary builds the agent once per process into agentDir.
func agentBinary() (string, error) {
	agentBuild.once.Do(func() {
		dir, err := agentDir()
		if err != nil {
			agentBuild.err = err
			return
		}
		out := filepath.Join(dir, agentName)
		if err := goBuildTo(agentPkg, runtime.GOARCH, out); err != nil {
			agentBuild.err = err
			return
		}
		// go build leaves the umask's bits; every user of the target may run it.
		agentBuild.path, agentBuild.err = out, os.Chmod(out, 0o755)
	})
	return agentBuild.path, agentBuild.err
}

// agentBind is the read-only mount of the agent directory for a new target, or "" when
// the agent is not used, the directory cannot be made, or DOCKER_HOST names a daemon that
// is not reached by a Unix socket (a daemon on another machine would make an empty
// directory of that name, owned by root, and startAgent copies the agent then anyway).
func agentBind() string {
	if use, _ := agentUsed(); !use {
		return ""
	}
	if h := os.Getenv("DOCKER_HOST"); h != "" && !strings.HasPrefix(h, "unix://") {
		return ""
	}
	dir, err := agentDir()
	if err != nil {
		return ""
	}
	return dir + ":" + agentMount + ":ro"
}

// agentUsed reports whether TESTENV_EXEC lets targets use the agent.
func agentUsed() (bool, error) {
	switch v := os.Getenv(agentEnv); v {
	case "", "agent":
		return true, nil
	case "docker":
		return false, nil
	default:
		return false, fmt.Errorf("%s=%q is neither agent nor docker", agentEnv, v)
	}
}

// agent is a running agent: where it listens and the token it wants.
type agent struct {
	addr  string
	token string
}

// startAgent starts the agent with one docker exec, whose launcher returns once the agent
// listens; the target uses it from then on. The agent runs from the mounted agent
// directory, or, where that mount shows no agent (a daemon on another machine), from a
// copy. It runs in the container's cgroup as docker-exec'd commands do, not as a unit.
func (t *Target) startAgent(ctx context.Context) error {
	if ok, err := agentUsed(); !ok {
		return err
	}
	bin, err := agentBinary()
	if err != nil {
		return err
	}
	tok := make([]byte, 24)
	if _, err := rand.Read(tok); err != nil {
		return fmt.Errorf("agent token: %w", err)
	}
	token := hex.EncodeToString(tok)
	env := []string{agentproto.TokenVar + "=" + token}
	res, err := t.dockerExec(ctx, env, path.Join(agentMount, agentName))
	if err != nil {
		return fmt.Errorf("start agent: %w", err)
	}
	// 126 and 127 are the runtime's "cannot run" and "not found": no mount, or an empty one.
	if res.ExitCode == 126 || res.ExitCode == 127 {
		if err := t.container.CopyFileToContainer(ctx, bin, agentPath, 0o755); err != nil {
			return fmt.Errorf("copy agent into target: %w", err)
		}
		if res, err = t.dockerExec(ctx, env, agentPath); err != nil {
			return fmt.Errorf("start agent: %w", err)
		}
	}
	port, perr := strconv.Atoi(strings.TrimSpace(res.Stdout))
	if res.ExitCode != 0 || perr != nil || port <= 0 || port > 65535 {
		return fmt.Errorf("start agent: exit %d: %s%s", res.ExitCode, res.Stdout, res.Stderr)
	}
	ip, err := t.container.ContainerIP(ctx)
	if err != nil || ip == "" {
		return fmt.Errorf("agent: the target's address: %v", err)
	}
	a := &agent{addr: net.JoinHostPort(ip, strconv.Itoa(port)), token: token}
	if _, err := a.do(ctx, agentproto.Header{Op: agentproto.OpPing}, nil); err != nil {
		return fmt.Errorf("agent at %s: %w", a.addr, err)
	}
	t.mu.Lock()
	t.agent = a
	t.mu.Unlock()
	return nil
}

// currentAgent is the target's agent, or nil when commands go through Docker.
func (t *Target) currentAgent() *agent {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.agent
}

// dropAgent makes the target use Docker's API until an agent is started again, if a is
// still its agent.
func (t *Target) dropAgent(a *agent) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.agent == a {
		t.agent = nil
	}
}

// errAgentUnreachable is an agent that took no connection (gone with a restart of the
// container): the caller falls back to Docker's API. Any error after the connection is
// the request's own.
var errAgentUnreachable = errors.New("agent unreachable")

// agentDialTimeout bounds a connection attempt: a refused connection is answered at once, and
// a container that is gone at once too, by the host's bridge.
const agentDialTimeout = 10 * time.Second

var dialer = net.Dialer{Timeout: agentDialTimeout}

// do sends one request and returns the agent's response; a refusal (wrong token) or a
// failure the agent reports is an error. When ctx ends first, the error is ctx's.
func (a *agent) do(ctx context.Context, h agentproto.Header, body []byte) (agentproto.Response, error) {
	h.Token, h.Size = a.token, int64(len(body))
	c, err := dialer.DialContext(ctx, "tcp", a.addr)
	if err != nil {
		if ctx.Err() != nil {
			return agentproto.Response{}, ctx.Err()
		}
		return agentproto.Response{}, fmt.Errorf("%w: %v", errAgentUnreachable, err)
	}
	defer c.Close()
	stop := context.AfterFunc(ctx, func() { _ = c.SetDeadline(time.Unix(1, 0)) })
	defer stop()
	res, err := roundTrip(c, h, body)
	if ctx.Err() != nil {
		return agentproto.Response{}, ctx.Err()
	}
	if err != nil {
		return res, err
	}
	if res.Err != "" {
		return res, fmt.Errorf("agent: %s", res.Err)
	}
	return res, nil
}

func roundTrip(c net.Conn, h agentproto.Header, body []byte) (agentproto.Response, error) {
	if err := agentproto.WriteRequest(c, h, body); err != nil {
		return agentproto.Response{}, fmt.Errorf("send %s request to agent: %w", h.Op, err)
	}
	res, err := agentproto.ReadResponse(bufio.NewReaderSize(c, 64<<10))
	if err != nil {
		return res, fmt.Errorf("agent's answer to %s: %w", h.Op, err)
	}
	return res, nil
}

// agentExec runs argv through the agent; ok is false when the target has no agent or it
// is unreachable, and the caller goes through Docker instead.
func (t *Target) agentExec(ctx context.Context, env, argv []string) (res ExecResult, ok bool, err error) {
	a := t.currentAgent()
	if a == nil || len(argv) == 0 {
		return res, false, nil
	}
	r, err := a.do(ctx, agentproto.Header{Op: agentproto.OpExec, Argv: argv, Env: env}, nil)
	if errors.Is(err, errAgentUnreachable) {
		t.dropAgent(a)
		return res, false, nil
	}
	if err != nil {
		return res, true, err
	}
	return ExecResult{ExitCode: r.Exit, Stdout: string(r.Stdout), Stderr: string(r.Stderr)}, true, nil
}

// agentWrite writes content to path with mode through the agent; ok as for agentExec.
func (t *Target) agentWrite(ctx context.Context, path string, content []byte, mode int64) (ok bool, err error) {
	a := t.currentAgent()
	if a == nil {
		return false, nil
	}
	if mode < 0 || mode > 0o7777 {
		return true, fmt.Errorf("write %s in target: mode %#o is outside 0..07777", path, mode)
	}
	_, err = a.do(ctx, agentproto.Header{Op: agentproto.OpWrite, Path: path, Mode: uint32(mode)}, content)
	if errors.Is(err, errAgentUnreachable) {
		t.dropAgent(a)
		return false, nil
	}
	if err != nil {
		return true, fmt.Errorf("write %s in target: %w", path, err)
	}
	return true, nil
}

// agentFailOnce guards the one line a process writes when an agent could not be started.
var agentFailOnce sync.Once

// startAgentOrSay starts the target's agent; when that fails, the target goes through
// Docker's API, and a test process says so once on standard error (and every time to the
// target's logger) so a slower suite is explained. A command such as richt-molecule, run
// where no Go toolchain or module is at hand, says it only to its logger: its output is
// its user's.
func (t *Target) startAgentOrSay(ctx context.Context, logger Logger) {
	err := t.startAgent(ctx)
	if err == nil {
		return
	}
	msg := fmt.Sprintf("testenv: target %.12s: commands go through Docker's API: %v", t.ID(), err)
	logger.Printf("%s", msg)
	if testing.Testing() {
		agentFailOnce.Do(func() { fmt.Fprintln(os.Stderr, msg) })
	}
}
