package testenv

import (
	"context"

	"github.com/richt/services/testenv/internal/agentproto"
)

// WaitForSpares waits until no spare of the pool is booting, for a benchmark that must
// not measure one side while the other's boot runs.
func WaitForSpares() { pool.wg.Wait() }

// DockerExec runs argv through Docker's exec API even when the target has an agent, to
// compare the two.
func (t *Target) DockerExec(ctx context.Context, env []string, argv ...string) (ExecResult, error) {
	return t.dockerExec(ctx, env, argv...)
}

// HasAgent reports whether commands go through the target's agent.
func (t *Target) HasAgent() bool { return t.currentAgent() != nil }

// DropAgent makes the target use Docker's API, as after an unreachable agent.
func (t *Target) DropAgent() {
	t.mu.Lock()
	t.agent = nil
	t.mu.Unlock()
}

// StartAgent starts a new agent in the target.
func (t *Target) StartAgent(ctx context.Context) error { return t.startAgent(ctx) }

// AgentRequest sends a raw request to the target's agent with the given token.
func (t *Target) AgentRequest(ctx context.Context, token string, h agentproto.Header) (agentproto.Response, error) {
	a := *t.currentAgent()
	a.token = token
	return a.do(ctx, h, nil)
}
