package health

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"os"
	"sync/atomic"
	"time"
)

// DefaultEvery is the interval [Wait] uses when given none.
const DefaultEvery = 200 * time.Millisecond

// Check makes one attempt within ctx and returns nil when the service answers, else an error
// carrying the evidence: the dial error, "HTTP 503 Service Unavailable", or the greeting read.
// Only ctx bounds the attempt; give it a deadline.
func (p Probe) Check(ctx context.Context) error {
	if p.dial == "" {
		if err := p.prepare(); err != nil {
			return err
		}
	}
	switch p.Kind {
	case KindHTTP:
		return p.checkHTTP(ctx)
	case KindBanner:
		return p.checkBanner(ctx)
	default:
		conn, err := new(net.Dialer).DialContext(ctx, "tcp", p.dial)
		if err != nil {
			return err
		}
		return conn.Close()
	}
}

// checkHTTP sends one GET over a fresh connection, without proxy and without following
// redirects; any 2xx is healthy.
func (p Probe) checkHTTP(ctx context.Context) error {
	tr := &http.Transport{
		Proxy:                  nil, // never http_proxy from the environment: the target is local
		DialContext:            new(net.Dialer).DialContext,
		DisableKeepAlives:      true,
		MaxResponseHeaderBytes: 64 << 10,
	}
	defer tr.CloseIdleConnections()
	client := &http.Client{
		Transport: tr,
		CheckRedirect: func(*http.Request, []*http.Request) error {
			return http.ErrUseLastResponse // a 3xx is the answer, and it is not healthy
		},
	}
	var connected atomic.Bool
	trace := &httptrace.ClientTrace{GotConn: func(httptrace.GotConnInfo) { connected.Store(true) }}
	req, err := http.NewRequestWithContext(httptrace.WithClientTrace(ctx, trace), http.MethodGet, p.url, nil)
	if err != nil {
		return err
	}
	req.Header.Set("User-Agent", "richt.services-health")
	resp, err := client.Do(req)
	if err != nil {
		if cerr := ctx.Err(); cerr != nil && connected.Load() {
			return fmt.Errorf("connected to %s, no HTTP response: %w", p.dial, cerr)
		}
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode >= 200 && resp.StatusCode <= 299 {
		return nil
	}
	status := resp.Status
	if status == "" {
		status = fmt.Sprintf("%d %s", resp.StatusCode, http.StatusText(resp.StatusCode))
	}
	if resp.StatusCode >= 300 && resp.StatusCode <= 399 {
		return fmt.Errorf("HTTP %s: redirect to %s not followed; a redirect is not healthy", status, quoted(resp.Header.Get("Location")))
	}
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	if body = bytes.TrimSpace(body); len(body) > 0 {
		return fmt.Errorf("HTTP %s: %s", status, quote(body))
	}
	return fmt.Errorf("HTTP %s", status)
}

// checkBanner connects and reads what the server says first: up to MaxGreeting bytes,
// stopping at the first newline, the end of the stream or ctx's end, or as soon as what was
// read contains Expect.
func (p Probe) checkBanner(ctx context.Context) error {
	conn, err := new(net.Dialer).DialContext(ctx, "tcp", p.dial)
	if err != nil {
		return err
	}
	defer conn.Close()
	if dl, ok := ctx.Deadline(); ok {
		_ = conn.SetReadDeadline(dl)
	}
	// After the deadline is set, so a cancellation cannot be overwritten by it.
	stop := context.AfterFunc(ctx, func() { _ = conn.SetReadDeadline(time.Unix(1, 0)) })
	defer stop()

	expect := []byte(p.Expect)
	buf := make([]byte, 0, MaxGreeting)
	var rerr error
	for len(buf) < cap(buf) {
		n, err := conn.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if bytes.Contains(buf, expect) {
			return nil
		}
		if err != nil {
			rerr = err
			break
		}
		if bytes.IndexByte(buf[len(buf)-n:], '\n') >= 0 {
			break
		}
	}
	if errors.Is(rerr, os.ErrDeadlineExceeded) {
		// The only read deadlines are ctx's own deadline and the one set when ctx ends, so
		// ctx is ending: wait the instant it takes to say so, and report it as the cause.
		<-ctx.Done()
	}
	cause := ctx.Err()
	switch {
	case len(buf) == 0 && cause != nil:
		return fmt.Errorf("connected to %s, nothing read: %w", p.dial, cause)
	case len(buf) == 0 && errors.Is(rerr, io.EOF):
		return fmt.Errorf("connected to %s, nothing read: the server closed the connection", p.dial)
	case len(buf) == 0:
		return fmt.Errorf("connected to %s, nothing read: %w", p.dial, rerr)
	case cause != nil:
		return fmt.Errorf("greeting %s (cut short: %w) does not contain %s", quote(buf), cause, quoted(p.Expect))
	}
	return fmt.Errorf("greeting %s does not contain %s", quote(buf), quoted(p.Expect))
}

// quote renders bytes a server sent, quoted, at most 200 bytes of them, with the count
// read when cut.
func quote(b []byte) string {
	q, cut := quoteCut(string(b))
	if cut {
		return fmt.Sprintf("%s (%d bytes)", q, len(b))
	}
	return q
}

// Wait runs p.Check every `every` (from the start of one attempt to the start of the next;
// DefaultEvery when every <= 0) until it passes or ctx ends, and returns the number of
// attempts. On failure the error wraps ctx's error (errors.Is(err, context.DeadlineExceeded)
// when the deadline ended it) and the last attempt's error, and says how many attempts were
// made. When the final attempt was cut short by ctx and an earlier one had reached a verdict
// (a refused connection, an HTTP status, a greeting), that verdict is the evidence reported.
func Wait(ctx context.Context, p Probe, every time.Duration) (attempts int, err error) {
	if every <= 0 {
		every = DefaultEvery
	}
	if p.dial == "" {
		if err := p.prepare(); err != nil {
			return 0, err
		}
	}
	start := time.Now()
	var last, cut error // last verdict of an attempt that ended by itself; error of one ctx ended
	timer := time.NewTimer(0)
	defer timer.Stop()
	for ctx.Err() == nil {
		begun := time.Now()
		attempts++
		err := p.Check(ctx)
		if err == nil {
			return attempts, nil
		}
		if ended(ctx) {
			cut = err
			break
		}
		last = err
		timer.Reset(every - time.Since(begun))
		select {
		case <-ctx.Done():
		case <-timer.C:
		}
	}
	took := time.Since(start).Round(time.Millisecond)
	if ctx.Err() == nil {
		<-ctx.Done() // the deadline has passed; the context says so an instant later
	}
	if attempts == 0 {
		return 0, fmt.Errorf("health %s: not checked: %w", p, ctx.Err())
	}
	evidence, note := last, ""
	switch {
	case last == nil:
		evidence = cut
	case cut != nil:
		note = fmt.Sprintf(" (attempt %d was cut short: %v)", attempts, cut)
	}
	return attempts, fmt.Errorf("health %s: not healthy after %s, %s (%w); last error: %w%s",
		p, took, plural(attempts, "attempt"), ctx.Err(), evidence, note)
}

// ended reports whether ctx has ended or its deadline has passed (a connection's deadline
// can fire an instant before the context says so).
func ended(ctx context.Context) bool {
	dl, ok := ctx.Deadline()
	return ctx.Err() != nil || ok && !time.Now().Before(dl)
}

func plural(n int, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return fmt.Sprintf("%d %ss", n, word)
}
