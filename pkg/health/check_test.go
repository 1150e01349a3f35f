package health

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// serve listens on an ephemeral loopback port and runs handle on each connection, which is
// closed when handle returns. It returns HOST:PORT.
func serve(t *testing.T, handle func(net.Conn)) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	var wg sync.WaitGroup
	t.Cleanup(func() { _ = ln.Close(); wg.Wait() })
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Go(func() { defer c.Close(); handle(c) })
		}
	})
	return ln.Addr().String()
}

// hold keeps a connection open, saying nothing, until the client closes it.
func hold(c net.Conn) { _, _ = io.Copy(io.Discard, c) }

// greet says s, then holds the connection.
func greet(s ...string) func(net.Conn) {
	return func(c net.Conn) {
		for i, part := range s {
			if i > 0 {
				time.Sleep(20 * time.Millisecond)
			}
			if _, err := io.WriteString(c, part); err != nil {
				return
			}
		}
		hold(c)
	}
}

// closedAddr returns a loopback address nothing listens on (the port was just released).
func closedAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	return addr
}

func mustParse(t *testing.T, v map[string]any) Probe {
	t.Helper()
	p, err := Parse(v)
	require.NoError(t, err)
	return p
}

func within(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), d)
	t.Cleanup(cancel)
	return ctx
}

func TestCheckTCP(t *testing.T) {
	t.Parallel()
	addr := serve(t, hold)
	_, port, _ := net.SplitHostPort(addr)
	for _, target := range []string{addr, "0.0.0.0:" + port, ":" + port, "*:" + port, "localhost:" + port} {
		t.Run(target, func(t *testing.T) {
			p := mustParse(t, map[string]any{"tcp": target})
			assert.NoError(t, p.Check(within(t, 2*time.Second)))
		})
	}

	t.Run("closed port", func(t *testing.T) {
		closed := closedAddr(t)
		err := mustParse(t, map[string]any{"tcp": closed}).Check(within(t, 2*time.Second))
		require.Error(t, err)
		assert.Contains(t, err.Error(), closed)
		assert.Contains(t, err.Error(), "connection refused")
	})
}

func TestWaitListenerBindsLate(t *testing.T) {
	t.Parallel()
	addr := closedAddr(t)
	var late net.Listener
	bound := make(chan error, 1)
	timer := time.AfterFunc(50*time.Millisecond, func() {
		var err error
		late, err = net.Listen("tcp", addr)
		bound <- err
	})
	t.Cleanup(func() {
		timer.Stop()
		if late != nil {
			_ = late.Close()
		}
	})
	n, err := Wait(within(t, 3*time.Second), mustParse(t, map[string]any{"tcp": addr}), 10*time.Millisecond)
	require.NoError(t, <-bound, "another process took the port")
	require.NoError(t, err)
	assert.Greater(t, n, 1, "the first attempt cannot have passed before the bind")
}

func TestCheckHTTP(t *testing.T) {
	t.Parallel()
	var okHits atomic.Int32
	var host atomic.Value
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/ok":
			okHits.Add(1)
			_, _ = io.WriteString(w, "fine")
		case "/created":
			w.WriteHeader(http.StatusCreated)
		case "/empty":
			w.WriteHeader(http.StatusNoContent)
		case "/down":
			w.WriteHeader(http.StatusServiceUnavailable)
			_, _ = io.WriteString(w, "  database not ready\n")
		case "/down-silent":
			w.WriteHeader(http.StatusServiceUnavailable)
		case "/huge-error":
			w.WriteHeader(http.StatusInternalServerError)
			_, _ = io.WriteString(w, strings.Repeat("x", 1<<20))
		case "/elsewhere":
			http.Redirect(w, r, "http://elsewhere.invalid/ok", http.StatusFound)
		case "/same-host":
			http.Redirect(w, r, "/ok", http.StatusMovedPermanently)
		case "/host":
			host.Store(r.Host)
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())

	tests := []struct {
		path string
		want string // "" = healthy; else the whole error
	}{
		{"/ok", ""},
		{"/created", ""},
		{"/empty", ""},
		{"/down", `HTTP 503 Service Unavailable: "database not ready"`},
		{"/down-silent", "HTTP 503 Service Unavailable"},
		{"/huge-error", `HTTP 500 Internal Server Error: "` + strings.Repeat("x", 200) + `"… (512 bytes)`},
		{"/missing", `HTTP 404 Not Found: "404 page not found"`},
		{"/elsewhere", `HTTP 302 Found: redirect to "http://elsewhere.invalid/ok" not followed; a redirect is not healthy`},
		{"/same-host", `HTTP 301 Moved Permanently: redirect to "/ok" not followed; a redirect is not healthy`},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			err := mustParse(t, map[string]any{"http": srv.URL + tt.path}).Check(within(t, 2*time.Second))
			if tt.want == "" {
				assert.NoError(t, err)
			} else {
				assert.EqualError(t, err, tt.want)
			}
		})
	}
	// Run after the parallel-free subtests above: no redirect was followed to /ok.
	assert.Equal(t, int32(1), okHits.Load(), "only the direct GET /ok reached /ok")

	t.Run("wildcard host probes loopback with a matching Host header", func(t *testing.T) {
		err := mustParse(t, map[string]any{"http": "http://0.0.0.0:" + port + "/host"}).Check(within(t, 2*time.Second))
		require.NoError(t, err)
		assert.Equal(t, "127.0.0.1:"+port, host.Load())
	})

	t.Run("closed port", func(t *testing.T) {
		closed := closedAddr(t)
		err := mustParse(t, map[string]any{"http": "http://" + closed + "/"}).Check(within(t, 2*time.Second))
		require.Error(t, err)
		assert.Contains(t, err.Error(), closed)
		assert.Contains(t, err.Error(), "connection refused")
	})
}

func TestCheckBanner(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		server func(net.Conn)
		expect string
		want   string // "" = healthy; else a substring of the error
	}{
		{"match", greet("220 mail.example ESMTP Postfix\r\n"), "ESMTP", ""},
		{"match without newline", greet("SSH-2.0-OpenSSH_9.6"), "SSH-2.0", ""},
		{"match across writes", greet("220 mail.example", " ESMTP\r\n"), "ESMTP", ""},
		{"match in a later line of the same write", greet("220-mail.example\r\n220 ESMTP ready\r\n"), "ESMTP", ""},
		{"binary greeting", greet("J\x00\x00\x00\n8.0.36\x00"), "8.0.36", ""},
		{"mismatch", greet("SSH-2.0-OpenSSH_9.6\r\n"), "ESMTP", `greeting "SSH-2.0-OpenSSH_9.6\r\n" does not contain "ESMTP"`},
		{"mismatch stops at the first newline", greet("220 busy\r\n", "220 ESMTP\r\n"), "ESMTP", `greeting "220 busy\r\n" does not contain "ESMTP"`},
		{"long greeting is truncated", greet(strings.Repeat("a", 5000)), "ESMTP", `"… (4096 bytes) does not contain "ESMTP"`},
		{"closes without a word", func(net.Conn) {}, "ESMTP", "nothing read: the server closed the connection"},
		{"says a little then closes", func(c net.Conn) { _, _ = io.WriteString(c, "421 ") }, "ESMTP", `greeting "421 " does not contain "ESMTP"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			addr := serve(t, tt.server)
			p := mustParse(t, map[string]any{"banner": addr, "expect": tt.expect})
			start := time.Now()
			err := p.Check(within(t, 5*time.Second))
			assert.Less(t, time.Since(start), 2*time.Second, "a verdict must not wait for the deadline")
			if tt.want == "" {
				assert.NoError(t, err)
				return
			}
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.want)
			assert.False(t, errors.Is(err, context.DeadlineExceeded))
		})
	}

	t.Run("server that says nothing", func(t *testing.T) {
		t.Parallel()
		addr := serve(t, hold)
		p := mustParse(t, map[string]any{"banner": addr, "expect": "ESMTP"})
		err := p.Check(within(t, 80*time.Millisecond))
		require.Error(t, err)
		assert.Equal(t, "connected to "+addr+", nothing read: context deadline exceeded", err.Error())
		assert.ErrorIs(t, err, context.DeadlineExceeded)
	})

	t.Run("cancel ends the read", func(t *testing.T) {
		t.Parallel()
		addr := serve(t, hold)
		p := mustParse(t, map[string]any{"banner": addr, "expect": "ESMTP"})
		ctx, cancel := context.WithCancel(t.Context())
		time.AfterFunc(30*time.Millisecond, cancel)
		start := time.Now()
		err := p.Check(ctx) // no deadline: only the cancellation ends it
		assert.Less(t, time.Since(start), 2*time.Second)
		assert.ErrorIs(t, err, context.Canceled)
		assert.Contains(t, err.Error(), "nothing read")
	})
}

func TestWaitFailures(t *testing.T) {
	t.Parallel()

	t.Run("refused until the deadline", func(t *testing.T) {
		t.Parallel()
		closed := closedAddr(t)
		p := mustParse(t, map[string]any{"tcp": closed})
		start := time.Now()
		n, err := Wait(within(t, 150*time.Millisecond), p, 20*time.Millisecond)
		took := time.Since(start)
		require.Error(t, err)
		assert.ErrorIs(t, err, context.DeadlineExceeded)
		assert.GreaterOrEqual(t, n, 3)
		assert.LessOrEqual(t, n, 9, "one attempt per interval, not a busy loop")
		assert.GreaterOrEqual(t, took, 150*time.Millisecond)
		assert.Less(t, took, 2*time.Second)
		assert.Contains(t, err.Error(), "health tcp "+closed+": not healthy after ")
		assert.Contains(t, err.Error(), fmt.Sprintf(", %d attempts (context deadline exceeded); last error: dial tcp %s: connect: connection refused", n, closed))
		var op *net.OpError
		assert.ErrorAs(t, err, &op, "the last attempt's error is wrapped")
	})

	t.Run("HTTP 503 until the deadline", func(t *testing.T) {
		t.Parallel()
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(http.StatusServiceUnavailable)
		}))
		t.Cleanup(srv.Close)
		n, err := Wait(within(t, 150*time.Millisecond), mustParse(t, map[string]any{"http": srv.URL + "/health"}), 20*time.Millisecond)
		require.Error(t, err)
		assert.ErrorIs(t, err, context.DeadlineExceeded)
		assert.Greater(t, n, 1)
		assert.Contains(t, err.Error(), strconv.Itoa(n)+" attempts")
		assert.Contains(t, err.Error(), "last error: HTTP 503 Service Unavailable")
	})

	t.Run("HTTP server accepts but never answers", func(t *testing.T) {
		t.Parallel()
		addr := serve(t, hold)
		start := time.Now()
		n, err := Wait(within(t, 150*time.Millisecond), mustParse(t, map[string]any{"http": "http://" + addr + "/"}), 20*time.Millisecond)
		assert.Less(t, time.Since(start), 2*time.Second)
		require.Error(t, err)
		assert.ErrorIs(t, err, context.DeadlineExceeded)
		assert.Equal(t, 1, n)
		assert.Contains(t, err.Error(), "1 attempt (context deadline exceeded); last error: connected to "+addr+", no HTTP response: context deadline exceeded")
	})

	t.Run("an earlier verdict is kept when the final attempt is cut short", func(t *testing.T) {
		t.Parallel()
		var calls atomic.Int32
		release := make(chan struct{})
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if calls.Add(1) == 1 {
				w.WriteHeader(http.StatusServiceUnavailable)
				return
			}
			select { // hang until the client gives up
			case <-r.Context().Done():
			case <-release:
			}
		}))
		t.Cleanup(func() { close(release); srv.Close() })
		n, err := Wait(within(t, 150*time.Millisecond), mustParse(t, map[string]any{"http": srv.URL}), 20*time.Millisecond)
		require.Error(t, err)
		assert.Equal(t, 2, n)
		assert.ErrorIs(t, err, context.DeadlineExceeded)
		assert.Contains(t, err.Error(), "2 attempts (context deadline exceeded); last error: HTTP 503 Service Unavailable (attempt 2 was cut short: connected to ")
	})

	t.Run("context already ended", func(t *testing.T) {
		t.Parallel()
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		n, err := Wait(ctx, mustParse(t, map[string]any{"tcp": "127.0.0.1:9"}), 0)
		assert.Zero(t, n)
		assert.ErrorIs(t, err, context.Canceled)
		assert.EqualError(t, err, "health tcp 127.0.0.1:9: not checked: context canceled")
	})
}

func TestWaitPassesFirstTime(t *testing.T) {
	t.Parallel()
	addr := serve(t, greet("+OK POP3 ready\r\n"))
	n, err := Wait(within(t, 2*time.Second), mustParse(t, map[string]any{"banner": addr, "expect": "+OK"}), time.Hour)
	require.NoError(t, err)
	assert.Equal(t, 1, n)
}

func TestPauseRamps(t *testing.T) {
	ms := time.Millisecond
	for _, tc := range []struct {
		name         string
		n            int
		first, every time.Duration
		want         time.Duration
	}{
		{"no ramp", 1, 0, 100 * ms, 100 * ms},
		{"first above every", 1, 200 * ms, 100 * ms, 100 * ms},
		{"same as every", 3, 100 * ms, 100 * ms, 100 * ms},
		{"first attempt", 1, 10 * ms, 100 * ms, 10 * ms},
		{"doubled", 2, 10 * ms, 100 * ms, 20 * ms},
		{"doubled twice", 3, 10 * ms, 100 * ms, 40 * ms},
		{"capped", 5, 10 * ms, 100 * ms, 100 * ms},
		{"capped long after", 1000, 10 * ms, 100 * ms, 100 * ms},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := pause(tc.n, tc.first, tc.every); got != tc.want {
				t.Fatalf("pause(%d, %s, %s) = %s, want %s", tc.n, tc.first, tc.every, got, tc.want)
			}
		})
	}
}
