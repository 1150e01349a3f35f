package testenv

import (
	"bufio"
	"context"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/richt/services/testenv/internal/agentproto"
)

// fakeAgent answers every connection with answer, after reading the request.
func fakeAgent(t *testing.T, answer func(net.Conn)) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				if _, _, err := agentproto.ReadRequest(bufio.NewReader(c), "tok"); err != nil {
					_ = agentproto.WriteResponse(c, agentproto.Response{Err: err.Error()})
					return
				}
				answer(c)
			}()
		}
	}()
	return ln.Addr().String()
}

// What the host makes of the agent's answers: an unreachable agent is the one case that
// falls back to Docker; a refusal, a broken answer or a failure is the request's error;
// an ended context is the context's error.
func TestAgentClient(t *testing.T) {
	closed := func() string {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := ln.Addr().String()
		ln.Close()
		return addr
	}()
	cases := []struct {
		name   string
		addr   string
		token  string
		wait   time.Duration // the context's deadline; 0 for none
		check  func(error) bool
		exit   int
		stdout string
	}{
		{"answered", fakeAgent(t, func(c net.Conn) {
			_ = agentproto.WriteResponse(c, agentproto.Response{Exit: 3, Stdout: []byte("out")})
		}), "tok", 0, func(err error) bool { return err == nil }, 3, "out"},
		{"nobody listening", closed, "tok", 0, func(err error) bool { return errors.Is(err, errAgentUnreachable) }, 0, ""},
		{"wrong token", fakeAgent(t, func(net.Conn) {}), "bad", 0, func(err error) bool {
			return err != nil && strings.Contains(err.Error(), "wrong token") && !errors.Is(err, errAgentUnreachable)
		}, 0, ""},
		{"agent's failure", fakeAgent(t, func(c net.Conn) {
			_ = agentproto.WriteResponse(c, agentproto.Response{Err: "write /x: read-only file system"})
		}), "tok", 0, func(err error) bool { return err != nil && strings.Contains(err.Error(), "read-only") }, 0, ""},
		{"connection closed without an answer", fakeAgent(t, func(net.Conn) {}), "tok", 0, func(err error) bool {
			return err != nil && !errors.Is(err, errAgentUnreachable)
		}, 0, ""},
		{"context ends first", fakeAgent(t, func(c net.Conn) { time.Sleep(5 * time.Second) }), "tok", 100 * time.Millisecond,
			func(err error) bool { return errors.Is(err, context.DeadlineExceeded) }, 0, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			if c.wait > 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, c.wait)
				defer cancel()
			}
			a := &agent{addr: c.addr, token: c.token}
			res, err := a.do(ctx, agentproto.Header{Op: agentproto.OpExec, Argv: []string{"true"}}, nil)
			if !c.check(err) {
				t.Fatalf("error %v", err)
			}
			if err == nil && (res.Exit != c.exit || string(res.Stdout) != c.stdout) {
				t.Fatalf("got %+v", res)
			}
		})
	}
}

// A target whose agent is unreachable goes back to Docker's API for good, until a new
// agent is started; one that refuses keeps its agent and reports the error.
func TestUnreachableAgentIsDropped(t *testing.T) {
	closed := func() string {
		ln, _ := net.Listen("tcp", "127.0.0.1:0")
		defer ln.Close()
		return ln.Addr().String()
	}()
	tg := &Target{agent: &agent{addr: closed, token: "tok"}}
	if _, ok, err := tg.agentExec(context.Background(), nil, []string{"true"}); ok || err != nil {
		t.Fatalf("ok %v err %v, want a fallback", ok, err)
	}
	if tg.currentAgent() != nil {
		t.Fatal("the unreachable agent is still used")
	}
	tg.agent = &agent{addr: fakeAgent(t, func(net.Conn) {}), token: "bad"}
	if ok, err := tg.agentWrite(context.Background(), "/x", []byte("x"), 0o644); !ok || err == nil {
		t.Fatalf("ok %v err %v, want the refusal as an error", ok, err)
	}
	if tg.currentAgent() == nil {
		t.Fatal("a refusing agent was dropped")
	}
	if ok, err := tg.agentWrite(context.Background(), "/x", nil, 0o10000); !ok || err == nil || !strings.Contains(err.Error(), "mode") {
		t.Fatalf("a mode beyond 07777: ok %v err %v", ok, err)
	}
}

func TestExecPathChoice(t *testing.T) {
	for _, c := range []struct {
		value string
		use   bool
		err   string
	}{{"", true, ""}, {"agent", true, ""}, {"docker", false, ""}, {"ssh", false, `TESTENV_EXEC="ssh" is neither agent nor docker`}} {
		t.Setenv(agentEnv, c.value)
		use, err := agentUsed()
		if use != c.use || (err == nil) != (c.err == "") || (err != nil && err.Error() != c.err) {
			t.Errorf("%q: %v %v", c.value, use, err)
		}
	}
	t.Setenv(agentEnv, "ssh")
	if _, err := StartContext(context.Background()); err == nil || !strings.Contains(err.Error(), agentEnv) {
		t.Errorf("a start with TESTENV_EXEC=ssh: %v", err)
	}
}
