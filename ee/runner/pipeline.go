package runner

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"time"
)

// stageEnd is how a stage ended.
type stageEnd struct {
	// rc is the docker client's exit code: the stage's own, or docker's 125 (the daemon
	// could not create or start the container) or 126/127 (the command in it could not be
	// run); -1 when the stage did not start or a signal ended it (err says which).
	rc  int
	err error
	// stderr is the last lines the stage wrote to stderr.
	stderr string
}

// pipeline runs stages as one pipeline, each stage's stdout the next one's stdin, and
// returns how each ended, one stageEnd per stage. dockerPipeline is the real one.
type pipeline func(ctx context.Context, stages []stage) []stageEnd

// outcome decides what the stages' ends mean. transmit and process exit 0 whatever the
// playbook did; the worker exits with ansible-playbook's code (2: a host failed, 4: one was
// unreachable), a job's normal outcome once process has written its status. Anything else
// is the pipeline breaking: a stage that did not start or was killed, docker's own 125-127,
// transmit or process failing, no status written. read reads the artifacts.
func outcome(ident string, stages []stage, ended []stageEnd, read func() (Result, error)) (Result, error) {
	codes := make([]string, len(stages))
	for i, s := range stages {
		codes[i] = fmt.Sprintf("%s %d", s.name, ended[i].rc)
	}
	broke := func(i int, how string, err error) error {
		head := fmt.Sprintf("job %s: %s stage %s (exit codes: %s)", ident, stages[i].name, how, strings.Join(codes, ", "))
		var said strings.Builder
		for k, e := range ended {
			if e.stderr != "" {
				fmt.Fprintf(&said, "\n%s said:\n%s", stages[k].name, e.stderr)
			}
		}
		if err != nil {
			return fmt.Errorf("%s: %w%s", head, err, said.String())
		}
		return errors.New(head + said.String())
	}
	for i, e := range ended {
		switch {
		case e.err != nil || e.rc < 0:
			return Result{}, broke(i, "did not run to its end", e.err)
		case e.rc >= 125 && e.rc <= 127:
			return Result{}, broke(i, fmt.Sprintf("exited %d (docker could not run it)", e.rc), nil)
		case e.rc != 0 && stages[i].name != "worker":
			return Result{}, broke(i, fmt.Sprintf("exited %d", e.rc), nil)
		}
	}
	res, err := read()
	if err != nil {
		for i, s := range stages {
			if s.name == "worker" && ended[i].rc != 0 {
				return Result{}, broke(i, fmt.Sprintf("exited %d and the job left no status", ended[i].rc), err)
			}
		}
		return Result{}, broke(len(stages)-1, "left no result", err)
	}
	return res, nil
}

// dockerPipeline runs the stages' docker clients, piped together. A stage killed by ctx
// leaves its container running (docker run does not pass SIGKILL on): then every stage's
// container is removed by name.
func dockerPipeline(ctx context.Context, stages []stage) []stageEnd {
	ended := make([]stageEnd, len(stages))
	cmds := make([]*exec.Cmd, len(stages))
	stderr := make([]bytes.Buffer, len(stages))
	for i, s := range stages {
		cmds[i] = exec.CommandContext(ctx, "docker", s.args...)
		cmds[i].Stderr = &stderr[i]
		// The last stage's stdout (process prints the playbook's output) is not kept:
		// Result.Stdout has it from the events.
	}
	// Pipes between the stages: the parent closes its ends once the children hold them,
	// so each stage sees end of input when the one before it exits.
	var parentEnds []*os.File
	defer func() {
		for _, f := range parentEnds {
			f.Close()
		}
	}()
	for i := 0; i < len(cmds)-1; i++ {
		r, w, err := os.Pipe()
		if err != nil {
			for k := range ended {
				ended[k] = stageEnd{rc: -1, err: fmt.Errorf("pipe: %w", err)}
			}
			return ended
		}
		cmds[i].Stdout, cmds[i+1].Stdin = w, r
		parentEnds = append(parentEnds, r, w)
	}
	started := 0
	for i, c := range cmds {
		if err := c.Start(); err != nil {
			ended[i] = stageEnd{rc: -1, err: fmt.Errorf("start: %w", err)}
			for k := i + 1; k < len(cmds); k++ {
				ended[k] = stageEnd{rc: -1, err: errors.New("not started: an earlier stage did not start")}
			}
			break
		}
		started++
	}
	for _, f := range parentEnds {
		f.Close()
	}
	parentEnds = nil
	killed := started < len(cmds)
	for i := 0; i < started; i++ {
		err := cmds[i].Wait()
		ended[i] = stageEnd{rc: -1, stderr: lastLines(stderr[i].String(), 20)}
		// A stage that exited on its own has its code, even when ctx ended before Wait
		// reaped it (Wait then reports ctx's error).
		if ps := cmds[i].ProcessState; ps != nil && ps.Exited() {
			ended[i].rc = ps.ExitCode()
			continue
		}
		if ctx.Err() != nil && !errors.Is(err, ctx.Err()) {
			err = fmt.Errorf("%w (%w)", err, ctx.Err())
		}
		ended[i].err, killed = err, true
	}
	if killed {
		cctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		for _, s := range stages {
			_ = exec.CommandContext(cctx, "docker", "rm", "-f", s.container).Run()
		}
	}
	return ended
}

// lastLines is the last n lines of s (a stage's stderr, for an error).
func lastLines(s string, n int) string {
	l := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(l) > n {
		l = l[len(l)-n:]
	}
	return strings.Join(l, "\n")
}
