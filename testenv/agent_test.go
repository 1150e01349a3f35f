package testenv_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/richt/services/testenv"
	"github.com/richt/services/testenv/internal/agentproto"
)

// Every command runs through the agent and through Docker's exec API, and the two must
// give the same exit code, stdout and stderr, byte for byte: the tests of this repository
// were written against Docker's exec.
func TestAgentExecMatchesDocker(t *testing.T) {
	t.Parallel()
	e2e(t)
	tg := testenv.Start(t)
	require.True(t, tg.HasAgent(), "the target has an agent")
	cases := []struct {
		name string
		env  []string
		argv []string
	}{
		{"exit code", nil, []string{"/bin/sh", "-c", "exit 3"}},
		{"killed by SIGKILL", nil, []string{"/bin/sh", "-c", "kill -9 $$"}},
		{"killed by SIGTERM", nil, []string{"/bin/sh", "-c", "kill -TERM $$"}},
		{"stdout and stderr apart", nil, []string{"/bin/sh", "-c", "echo out; echo err >&2; echo out2"}},
		{"bytes that are not UTF-8", nil, []string{"/bin/sh", "-c", `printf '\377\000x\r\n'; printf '\376' >&2`}},
		{"large output", nil, []string{"/bin/sh", "-c", "seq 1 200000"}},
		{"no shell", nil, []string{"echo", "$HOME", "a  b", "*"}},
		{"inherited environment", nil, []string{"env"}},
		{"extra environment merged as Docker does", []string{"A=1", "PATH=/bin:/usr/bin", "A=2", "HOSTNAME", "E="}, []string{"env"}},
		{"HOME removed comes back", []string{"HOME"}, []string{"env"}},
		{"HOME empty is filled", []string{"HOME="}, []string{"env"}},
		{"PATH of the extra environment finds the command", []string{"PATH=/nowhere"}, []string{"env"}},
		{"working directory", nil, []string{"pwd"}},
		{"stdin is empty", nil, []string{"/bin/sh", "-c", "cat; echo rc=$?; readlink /proc/self/fd/0"}},
		{"stdout is a pipe", nil, []string{"/bin/sh", "-c", "[ -p /dev/stdout ] && [ ! -t 1 ] && echo pipe"}},
		{"own session", nil, []string{"/bin/sh", "-c", `read -r pid comm state ppid pgrp sid rest < /proc/$$/stat; [ "$pgrp" = $$ ] && [ "$sid" = $$ ] && echo leader`}},
		{"user and groups", nil, []string{"id"}},
		{"umask", nil, []string{"/bin/sh", "-c", "umask"}},
		{"capabilities, signals, seccomp", nil, []string{"/bin/sh", "-c", "grep -E '^(Cap|Sig(Blk|Ign)|NoNewPrivs|Seccomp)' /proc/self/status"}},
		{"cgroup", nil, []string{"cat", "/proc/self/cgroup"}},
		{"limits", nil, []string{"cat", "/proc/self/limits"}},
		{"not found in PATH", nil, []string{"no-such-command"}},
		{"no such file", nil, []string{"/no/such/file"}},
		{"a directory", nil, []string{"/etc"}},
		{"not executable", nil, []string{"/etc/hostname"}},
		{"relative path", nil, []string{"bin/true"}},
		{"a child outliving the command keeps no hold", nil, []string{"/bin/sh", "-c", "(sleep 6; echo late) & echo early"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			began := time.Now()
			viaAgent, err := tg.ExecEnv(ctx, c.env, c.argv...)
			require.NoError(t, err)
			agentTook := time.Since(began)
			began = time.Now()
			viaDocker, err := tg.DockerExec(ctx, c.env, c.argv...)
			require.NoError(t, err)
			t.Logf("agent %s, docker %s", agentTook.Round(time.Millisecond), time.Since(began).Round(time.Millisecond))
			assert.Equal(t, viaDocker, viaAgent)
		})
	}
}

// A child that keeps the command's stdout open holds the call until the child ends or
// about 2 s have passed after the command, through either path; its later output is lost.
func TestAgentWaitsForOutputLikeDocker(t *testing.T) {
	t.Parallel()
	e2e(t)
	tg := testenv.Start(t)
	argv := []string{"/bin/sh", "-c", "sleep 5 & echo started"}
	for _, via := range []string{"agent", "docker"} {
		began := time.Now()
		var res testenv.ExecResult
		var err error
		if via == "agent" {
			res, err = tg.Exec(context.Background(), argv...)
		} else {
			res, err = tg.DockerExec(context.Background(), nil, argv...)
		}
		require.NoError(t, err)
		assert.Equal(t, testenv.ExecResult{Stdout: "started\n"}, res)
		t.Logf("%s: %s", via, time.Since(began).Round(time.Millisecond))
	}
}

// A file written through the agent is the file Docker's copy and install(1) make: mode
// (set-id bits too), owner, content, parents created, on a tmpfs such as /run, with a
// current modification time.
func TestAgentWritesFilesLikeDocker(t *testing.T) {
	t.Parallel()
	e2e(t)
	tg := testenv.Start(t)
	ctx := context.Background()
	content := []byte("#!/bin/sh\necho hi\n\x00\xff")
	stat := func(p string) string {
		return tg.Shell(t, "stat -c '%a %U %G %s' "+p+" && stat -c '%a' $(dirname "+p+") && find "+p+" -newermt 2000-01-01 | wc -l && md5sum < "+p)
	}
	for _, mode := range []int64{0o640, 0o4755, 0o600, 0o1777} {
		require.True(t, tg.HasAgent())
		require.NoError(t, tg.WriteFile(ctx, "/run/agent/new/f", content, mode))
		agentSide := stat("/run/agent/new/f")
		tg.DropAgent()
		require.NoError(t, tg.WriteFile(ctx, "/run/docker/new/f", content, mode))
		require.NoError(t, tg.StartAgent(ctx))
		assert.Equal(t, stat("/run/docker/new/f"), agentSide, "mode %04o", mode)
		tg.Shell(t, "rm -rf /run/agent /run/docker")
	}
	// An existing file is replaced, and no temporary file is left beside it.
	require.NoError(t, tg.WriteFile(ctx, "/opt/agenttest/tool", []byte("old\n"), 0o755))
	require.NoError(t, tg.WriteFile(ctx, "/opt/agenttest/tool", []byte("new\n"), 0o644))
	assert.Equal(t, "new\n644\n", tg.Shell(t, "cat /opt/agenttest/tool; stat -c %a /opt/agenttest/tool"))
	assert.Equal(t, "tool\n", tg.Shell(t, "ls -A /opt/agenttest"))
	err := tg.WriteFile(ctx, "/etc/hostname/below", []byte("x"), 0o644)
	require.Error(t, err, "a path below a file")
	assert.Contains(t, err.Error(), "/etc/hostname/below")
}

// After a reboot (every process ends, the agent too) the target starts a new agent; a
// killed agent leaves the target on Docker's API, with the same results.
func TestAgentComesBackAfterReboot(t *testing.T) {
	t.Parallel()
	e2e(t)
	tg := testenv.Start(t)
	ctx := context.Background()
	require.True(t, tg.HasAgent())
	require.NoError(t, tg.Reboot(ctx, true, 0))
	assert.True(t, tg.HasAgent(), "a new agent after the reboot")
	require.NoError(t, tg.WriteFile(ctx, "/run/after", []byte("x\n"), 0o644))
	assert.Equal(t, "x\n", tg.MustExec(t, "cat", "/run/after"))

	// A killed agent refuses the next connection: that call and the later ones go
	// through Docker.
	res, err := tg.DockerExec(ctx, nil, "/bin/sh", "-c", "kill -9 $(pgrep -x testenv-agent); while pgrep -x testenv-agent >/dev/null; do sleep 0.05; done")
	require.NoError(t, err)
	require.Equal(t, 0, res.ExitCode, res.Stderr)
	assert.Equal(t, "up\n", tg.MustExec(t, "echo", "up"))
	assert.False(t, tg.HasAgent(), "the target went back to Docker's API")
	require.NoError(t, tg.WriteFile(ctx, "/run/fallback", []byte("y\n"), 0o600))
	assert.Equal(t, "600 y\n", tg.Shell(t, "printf '%s ' $(stat -c %a /run/fallback); cat /run/fallback"))
}

// The agent runs from the directory mounted read-only in every target, not from a copy;
// where that mount shows no agent (a Docker daemon on another machine), it is copied in.
func TestAgentRunsFromItsMountOrACopy(t *testing.T) {
	t.Parallel()
	e2e(t)
	tg := testenv.Start(t)
	ctx := context.Background()
	exe := "readlink /proc/$(pgrep -x testenv-agent)/exe; findmnt -n -o OPTIONS /usr/local/libexec/testenv | tr , '\\n' | grep -x ro; [ -e /usr/local/libexec/testenv-agent ] && echo copied || echo 'no copy'"
	assert.Equal(t, "/usr/local/libexec/testenv/testenv-agent\nro\nno copy\n", tg.Shell(t, exe))

	res, err := tg.DockerExec(ctx, nil, "/bin/sh", "-c", "umount -l /usr/local/libexec/testenv && kill -9 $(pgrep -x testenv-agent) && i=0 && while pgrep -x testenv-agent >/dev/null && [ $i -lt 200 ]; do i=$((i+1)); sleep 0.05; done")
	require.NoError(t, err)
	require.Equal(t, 0, res.ExitCode, res.Stderr)
	tg.DropAgent()
	require.NoError(t, tg.StartAgent(ctx))
	require.True(t, tg.HasAgent())
	assert.Equal(t, "/usr/local/libexec/testenv-agent\ncopied\n", tg.Shell(t, "readlink /proc/$(pgrep -x testenv-agent)/exe; [ -e /usr/local/libexec/testenv-agent ] && echo copied"))
}

// The agent refuses a request without its token, and says so; the target keeps working.
func TestAgentRefusesAWrongToken(t *testing.T) {
	t.Parallel()
	e2e(t)
	tg := testenv.Start(t)
	ctx := context.Background()
	_, err := tg.AgentRequest(ctx, "not-the-token", agentproto.Header{Op: agentproto.OpExec, Argv: []string{"touch", "/run/refused"}})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "wrong token")
	assert.Equal(t, "no\n", tg.Shell(t, "[ -e /run/refused ] && echo yes || echo no"))
	assert.True(t, tg.HasAgent())
}

// The agent is one process, in the cgroup Docker's exec puts a command in, outside every
// unit.
func TestAgentRunsWhereDockerExecRuns(t *testing.T) {
	t.Parallel()
	e2e(t)
	tg := testenv.Start(t)
	ctx := context.Background()
	res, err := tg.DockerExec(ctx, nil, "/bin/sh", "-c", "pgrep -x testenv-agent | wc -l; cat /proc/$(pgrep -x testenv-agent)/cgroup")
	require.NoError(t, err)
	own, err := tg.DockerExec(ctx, nil, "cat", "/proc/self/cgroup")
	require.NoError(t, err)
	assert.Equal(t, "1\n"+own.Stdout, res.Stdout)
}

// A call whose context ends returns the context's error, as through Docker, and the
// target's agent goes on serving.
func TestAgentExecEndsWithItsContext(t *testing.T) {
	t.Parallel()
	e2e(t)
	tg := testenv.Start(t)
	for _, via := range []string{"agent", "docker"} {
		ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
		var err error
		if via == "agent" {
			_, err = tg.Exec(ctx, "sleep", "3")
		} else {
			_, err = tg.DockerExec(ctx, nil, "sleep", "3")
		}
		cancel()
		assert.ErrorIs(t, err, context.DeadlineExceeded, via)
	}
	assert.Equal(t, "up\n", tg.MustExec(t, "echo", "up"))
	assert.True(t, tg.HasAgent())
}
