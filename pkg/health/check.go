package health

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"strconv"
	"strings"
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

// checkHTTP sends one GET over a fresh connection and reads the status line: any 2xx is
// healthy; a redirect is an answer, not followed. HTTP/1.0 by hand instead of net/http:
// the client and its transport would make the module binary 3 MB larger, for a request a
// few lines long. The connection goes to the probe's own address, never through a proxy.
func (p Probe) checkHTTP(ctx context.Context) error {
	u, err := url.Parse(p.url)
	if err != nil {
		return err
	}
	conn, err := p.connect(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	req := "GET " + u.RequestURI() + " HTTP/1.0\r\nHost: " + u.Host + "\r\nUser-Agent: richt.services-health\r\nConnection: close\r\n\r\n"
	if _, err := io.WriteString(conn, req); err != nil {
		return p.cut(ctx, fmt.Errorf("connected to %s, sending the request: %w", p.dial, err))
	}
	r := bufio.NewReaderSize(io.LimitReader(conn, maxResponseHead+maxBody), 4096)
	line, err := readLine(r)
	if err != nil {
		if errors.Is(err, io.EOF) {
			return fmt.Errorf("connected to %s, no HTTP response: the server closed the connection", p.dial)
		}
		return p.cut(ctx, fmt.Errorf("connected to %s, no HTTP response: %w", p.dial, err))
	}
	proto, status, ok := strings.Cut(line, " ")
	code, _, _ := strings.Cut(status, " ")
	n, cerr := strconv.Atoi(code)
	if !ok || !strings.HasPrefix(proto, "HTTP/") || len(code) != 3 || cerr != nil {
		return fmt.Errorf("connected to %s, not an HTTP response: %s", p.dial, quote([]byte(line)))
	}
	if n >= 200 && n <= 299 {
		return nil
	}
	var location string
	for {
		h, err := readLine(r)
		if err != nil || h == "" {
			break
		}
		if k, v, ok := strings.Cut(h, ":"); ok && strings.EqualFold(strings.TrimSpace(k), "Location") {
			location = strings.TrimSpace(v)
		}
	}
	if n >= 300 && n <= 399 {
		return fmt.Errorf("HTTP %s: redirect to %s not followed; a redirect is not healthy", status, quoted(location))
	}
	body, _ := io.ReadAll(io.LimitReader(r, maxBody))
	if body = bytes.TrimSpace(body); len(body) > 0 {
		return fmt.Errorf("HTTP %s: %s", status, quote(body))
	}
	return fmt.Errorf("HTTP %s", status)
}

// Limits of what an HTTP probe reads: the status line and headers, and of a body only
// what a message quotes.
const (
	maxResponseHead = 64 << 10
	maxBody         = 512
)

// readLine reads one CRLF- or LF-terminated line without its terminator.
func readLine(r *bufio.Reader) (string, error) {
	line, err := r.ReadString('\n')
	if err != nil && !(errors.Is(err, io.EOF) && line != "") {
		return "", err
	}
	return strings.TrimRight(line, "\r\n"), nil
}

// cut reports an attempt that ctx ended as ctx's error, so Wait can tell it from a verdict.
func (p Probe) cut(ctx context.Context, err error) error {
	if cause := endCause(ctx, err); cause != nil {
		return fmt.Errorf("connected to %s, no HTTP response: %w", p.dial, cause)
	}
	return err
}

// connect dials the probe's address, with every read and write on the connection ending
// when ctx does (its deadline, or its cancellation). The caller closes the connection.
func (p Probe) connect(ctx context.Context) (net.Conn, error) {
	conn, err := new(net.Dialer).DialContext(ctx, "tcp", p.dial)
	if err != nil {
		return nil, err
	}
	if dl, ok := ctx.Deadline(); ok {
		_ = conn.SetDeadline(dl)
	}
	// After the deadline is set, so a cancellation cannot be overwritten by it.
	stop := context.AfterFunc(ctx, func() { _ = conn.SetDeadline(time.Unix(1, 0)) })
	return boundConn{Conn: conn, stop: stop}, nil
}

// boundConn is a connection whose ctx callback is dropped when it closes, so retries under
// one long deadline do not pile callbacks up on the context.
type boundConn struct {
	net.Conn
	stop func() bool
}

func (b boundConn) Close() error {
	b.stop()
	return b.Conn.Close()
}

// endCause is ctx's error when ctx ended the operation that returned err, else nil. The
// only deadlines a probe sets are ctx's own and the one set when ctx ends, so a deadline
// error means ctx is ending: wait the instant it takes to say so.
func endCause(ctx context.Context, err error) error {
	if errors.Is(err, os.ErrDeadlineExceeded) {
		<-ctx.Done()
	}
	return ctx.Err()
}

// checkBanner connects and reads what the server says first: up to MaxGreeting bytes,
// stopping at the first newline, the end of the stream or ctx's end, or as soon as what was
// read contains Expect.
func (p Probe) checkBanner(ctx context.Context) error {
	conn, err := p.connect(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()

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
	cause := endCause(ctx, rerr)
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
	return WaitRamped(ctx, p, every, every)
}

// WaitRamped is Wait with the pause between attempts starting at first and doubling up
// to every: a service that answers a moment after its start (its listener opened by a
// child a few milliseconds later) is seen then, not a whole `every` later, while one
// that takes seconds is tried no more often than every. first <= 0 or above every is
// every.
func WaitRamped(ctx context.Context, p Probe, first, every time.Duration) (attempts int, err error) {
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
		timer.Reset(pause(attempts, first, every) - time.Since(begun))
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

// pause is the time from the start of attempt n (1, 2, ...) to the start of the next:
// first, doubled after every attempt, at most every.
func pause(n int, first, every time.Duration) time.Duration {
	if first <= 0 || first > every {
		return every
	}
	d := first
	for i := 1; i < n && d < every; i++ {
		d *= 2
	}
	return min(d, every)
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
