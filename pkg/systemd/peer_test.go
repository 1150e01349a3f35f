package systemd

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/bits"
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/godbus/dbus/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/richt/services/pkg/timeout"
)

// fakePeer is a D-Bus peer on a unix socket that answers the handshake with authReply
// and every call with answer(call), after an unrelated signal and a stale reply that the
// client must skip.
type fakePeer struct {
	path      string
	authReply string
	answer    func(call *dbus.Message) *dbus.Message
	order     binary.ByteOrder // of every message the peer writes
	got       chan string      // auth lines and calls as seen
	// before and after, when set, give messages written before the answer and after it
	// (the signals of a job).
	before, after func(call *dbus.Message) []*dbus.Message
}

// startPeer is a fakePeer that writes little-endian, as systemd does on x86_64 and aarch64.
func startPeer(t *testing.T, authReply string, answer func(*dbus.Message) *dbus.Message) *fakePeer {
	t.Helper()
	return startPeerIn(t, binary.LittleEndian, authReply, answer)
}

// startPeerIn is a fakePeer that writes its messages in order, as systemd writes in its
// host's byte order (big-endian on s390x).
func startPeerIn(t *testing.T, order binary.ByteOrder, authReply string, answer func(*dbus.Message) *dbus.Message) *fakePeer {
	t.Helper()
	f := &fakePeer{path: filepath.Join(t.TempDir(), "private"), authReply: authReply, answer: answer, order: order, got: make(chan string, 16)}
	l, err := net.Listen("unix", f.path)
	require.NoError(t, err)
	t.Cleanup(func() { l.Close() })
	go func() {
		c, err := l.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		in := bufio.NewReader(c)
		if b, err := in.ReadByte(); err != nil || b != 0 {
			return
		}
		for {
			line, err := in.ReadString('\n')
			if err != nil {
				return
			}
			f.got <- strings.TrimSpace(line)
			if strings.HasPrefix(line, "BEGIN") {
				break
			}
		}
		if _, err := c.Write([]byte(f.authReply)); err != nil || !strings.HasPrefix(f.authReply, "OK") {
			return
		}
		serial := uint32(100)
		for {
			call, err := dbus.DecodeMessage(in)
			if err != nil {
				return
			}
			f.got <- call.String()
			signal := managerSignal("Reloading", true)
			// The stale reply's serial is the call's with its bytes reversed: a client that read
			// the reply-serial header in the wrong byte order would take it for its reply (and
			// skip the real one), so the test fails on its distinct error instead of timing out.
			stale := errorReply(bits.ReverseBytes32(call.Serial()), "org.freedesktop.DBus.Error.Failed", "a stale reply, to a serial with the bytes reversed, was taken for the reply")
			msgs := []*dbus.Message{signal, stale}
			if f.before != nil {
				msgs = append(msgs, f.before(call)...)
			}
			msgs = append(msgs, f.answer(call))
			if f.after != nil {
				msgs = append(msgs, f.after(call)...)
			}
			for _, m := range msgs {
				if m == nil {
					continue
				}
				serial++
				_, _ = c.Write(encodeWithSerial(t, f.order, m, serial))
			}
		}
	}()
	return f
}

// encodeWithSerial encodes m in order with the given serial, which godbus does not let a
// message outside its Conn set.
func encodeWithSerial(t *testing.T, order binary.ByteOrder, m *dbus.Message, serial uint32) []byte {
	var buf bytes.Buffer
	require.NoError(t, m.EncodeTo(&buf, order))
	order.PutUint32(buf.Bytes()[8:12], serial)
	return buf.Bytes()
}

// errorReply is a D-Bus error reply to the call with serial replySerial, with message as
// its body as systemd sends it.
func errorReply(replySerial uint32, name, message string) *dbus.Message {
	return &dbus.Message{Type: dbus.TypeError, Headers: map[dbus.HeaderField]dbus.Variant{
		dbus.FieldReplySerial: dbus.MakeVariant(replySerial),
		dbus.FieldErrorName:   dbus.MakeVariant(name),
		dbus.FieldSignature:   dbus.MakeVariant(dbus.SignatureOf(message)),
	}, Body: []any{message}}
}

func replyTo(call *dbus.Message, body ...any) *dbus.Message {
	return &dbus.Message{Type: dbus.TypeMethodReply, Headers: map[dbus.HeaderField]dbus.Variant{
		dbus.FieldReplySerial: dbus.MakeVariant(call.Serial()),
		dbus.FieldSignature:   dbus.MakeVariant(dbus.SignatureOf(body...)),
	}, Body: body}
}

func TestPeerCallsSystemdSynchronously(t *testing.T) {
	f := startPeer(t, "OK 0123456789abcdef0123456789abcdef\r\n", func(call *dbus.Message) *dbus.Message {
		if call.Headers[dbus.FieldMember].Value() == "GetAll" {
			return replyTo(call, map[string]dbus.Variant{"ActiveState": dbus.MakeVariant("active")})
		}
		return &dbus.Message{Type: dbus.TypeError, Headers: map[dbus.HeaderField]dbus.Variant{
			dbus.FieldReplySerial: dbus.MakeVariant(call.Serial()),
			dbus.FieldErrorName:   dbus.MakeVariant("org.freedesktop.DBus.Error.UnknownProperty"),
			dbus.FieldSignature:   dbus.MakeVariant(dbus.SignatureOf("")),
		}, Body: []any{"Unknown property"}}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	p, err := dialPeer(ctx, f.path)
	require.NoError(t, err)
	defer p.Close()
	assert.Regexp(t, `^AUTH EXTERNAL [0-9a-f]+$`, <-f.got)
	assert.Equal(t, "BEGIN", <-f.got)

	body, err := p.call(ctx, unitPath("demo.service"), "org.freedesktop.DBus.Properties.GetAll", "org.freedesktop.systemd1.Unit")
	require.NoError(t, err, "the signal before the reply is skipped")
	var all map[string]dbus.Variant
	require.NoError(t, dbus.Store(body, &all))
	assert.Equal(t, "active", all["ActiveState"].Value())
	call := <-f.got
	assert.Contains(t, call, "serial 1 path /org/freedesktop/systemd1/unit/demo_2eservice interface org.freedesktop.DBus.Properties member GetAll")
	assert.Contains(t, call, `"org.freedesktop.systemd1.Unit"`)

	_, err = p.call(ctx, unitPath("demo.service"), "org.freedesktop.DBus.Properties.Get", "org.freedesktop.systemd1.Service", "Nope")
	assert.ErrorContains(t, err, "Unknown property")
	assert.Contains(t, <-f.got, "serial 2 ", "serials count up")
}

func TestPeerFailures(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()

	f := startPeer(t, "REJECTED EXTERNAL\r\n", nil)
	_, err := dialPeer(ctx, f.path)
	assert.ErrorContains(t, err, `server answered "REJECTED EXTERNAL"`)

	_, err = dialPeer(ctx, filepath.Join(t.TempDir(), "none"))
	assert.Error(t, err, "no socket")

	// A server that never answers the call: the task's deadline ends the wait as a timeout.
	f = startPeer(t, "OK 0123456789abcdef0123456789abcdef\r\n", func(*dbus.Message) *dbus.Message { return nil })
	p, err := dialPeer(ctx, f.path)
	require.NoError(t, err)
	defer p.Close()
	short, cancel2 := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancel2()
	_, err = p.call(short, unitPath("demo.service"), "org.freedesktop.DBus.Properties.GetAll", "org.freedesktop.systemd1.Unit")
	require.Error(t, err)
	assert.True(t, timeout.Expired(err), "%v", err)
}

// unitStatus is one element of systemd's ListUnits and ListUnitsByNames replies,
// a(ssssssouso).
type unitStatus struct {
	Name, Description, LoadState, ActiveState, SubState, Followed string
	Path                                                          dbus.ObjectPath
	JobID                                                         uint32
	JobType                                                       string
	JobPath                                                       dbus.ObjectPath
}

// callResult is what one call gave the client's user, kept to compare byte orders.
type callResult struct {
	Value any
	Err   error
}

// recordingCaller passes calls on and keeps every reply body as decoded, so that a
// byte-order difference hidden by dbus.Store's conversions still shows.
type recordingCaller struct {
	caller
	bodies [][]any
}

func (r *recordingCaller) call(ctx context.Context, path dbus.ObjectPath, method string, args ...any) ([]any, error) {
	body, err := r.caller.call(ctx, path, method, args...)
	r.bodies = append(r.bodies, body)
	return body, err
}

// systemd on s390x writes its messages big-endian; the client must read whatever order a
// message's header declares. The same replies go out in both orders, each after a signal
// and a stale reply to be skipped, and must give the same results.
func TestPeerReadsRepliesInEitherByteOrder(t *testing.T) {
	manager := dbus.ObjectPath("/org/freedesktop/systemd1")
	demo := unitPath("demo.service")
	invocation := []byte{0x0f, 0x1e, 0x2d, 0x3c, 0x4b, 0x5a, 0x69, 0x78, 0x87, 0x96, 0xa5, 0xb4, 0xc3, 0xd2, 0xe1, 0xf0}
	getAll := map[string]dbus.Variant{
		"Id":                            dbus.MakeVariant("demo.service"),
		"LoadState":                     dbus.MakeVariant("loaded"),
		"ActiveState":                   dbus.MakeVariant("active"),
		"SubState":                      dbus.MakeVariant("running"),
		"UnitFileState":                 dbus.MakeVariant("enabled"),
		"NeedDaemonReload":              dbus.MakeVariant(true),
		"FragmentPath":                  dbus.MakeVariant("/etc/systemd/system/demo.service"),
		"DropInPaths":                   dbus.MakeVariant([]string{"/etc/systemd/system/demo.service.d/a.conf", "/run/systemd/system/demo.service.d/b.conf"}),
		"InvocationID":                  dbus.MakeVariant(invocation),
		"CanReload":                     dbus.MakeVariant(false),
		"ActiveEnterTimestampMonotonic": dbus.MakeVariant(uint64(0x0102030405060708)),
	}
	listed := []unitStatus{{
		Name: "demo.service", Description: "Demo", LoadState: "loaded", ActiveState: "activating", SubState: "start",
		Path: demo, JobID: 0x01020304, JobType: "start", JobPath: "/org/freedesktop/systemd1/job/16909060",
	}}
	unknown := dbus.Error{Name: "org.freedesktop.DBus.Error.UnknownProperty", Body: []any{"Unknown property or interface."}}

	// Each case is one call, in this order, and the reply fake systemd sends to it.
	cases := []struct {
		name    string
		member  string // the call fake systemd expects
		reply   []any  // the reply's body
		errName string // an error reply, with reply[0] its message, when set
		do      func(ctx context.Context, b *Bus) (any, error)
		want    callResult
	}{{
		name: "GetAll: a{sv} of s, b, as, ay, t", member: "GetAll",
		reply: []any{getAll},
		do:    func(ctx context.Context, b *Bus) (any, error) { return b.Show(ctx, "demo.service") },
		want: callResult{Value: Props{
			ID: "demo.service", LoadState: "loaded", ActiveState: "active", SubState: "running", UnitFileState: "enabled",
			NeedDaemonReload: true, FragmentPath: "/etc/systemd/system/demo.service",
			DropInPaths:  []string{"/etc/systemd/system/demo.service.d/a.conf", "/run/systemd/system/demo.service.d/b.conf"},
			InvocationID: "0f1e2d3c4b5a69788796a5b4c3d2e1f0", ActiveEnterMono: 0x0102030405060708,
		}},
	}, {
		name: "Get: v of u", member: "Get",
		reply: []any{dbus.MakeVariant(uint32(0x00012345))},
		do:    func(ctx context.Context, b *Bus) (any, error) { return b.MainPID(ctx, "demo.service") },
		want:  callResult{Value: 0x00012345},
	}, {
		name: "GetUnit: o", member: "GetUnit",
		reply: []any{demo},
		do: func(ctx context.Context, b *Bus) (any, error) {
			var o dbus.ObjectPath
			err := storeCall(ctx, b, manager, "org.freedesktop.systemd1.Manager.GetUnit", &o, "demo.service")
			return o, err
		},
		want: callResult{Value: demo},
	}, {
		name: "ListUnitsByNames: a(ssssssouso)", member: "ListUnitsByNames",
		reply: []any{listed},
		do: func(ctx context.Context, b *Bus) (any, error) {
			var l []unitStatus
			err := storeCall(ctx, b, manager, "org.freedesktop.systemd1.Manager.ListUnitsByNames", &l, []string{"demo.service"})
			return l, err
		},
		want: callResult{Value: listed},
	}, {
		// No systemd reply the client asks for has these at the top level of one body, where
		// each starts on its own alignment (the uint64 after a uint32 is padded); a made-up
		// method has them.
		name: "several top-level types: s u t b as v o", member: "Mixed",
		reply: []any{"demo.service", uint32(0xdeadbeef), uint64(0x0102030405060708), true, []string{"a", "bc"}, dbus.MakeVariant(uint64(42)), demo},
		do: func(ctx context.Context, b *Bus) (any, error) {
			return b.obs.call(ctx, manager, "org.example.Test.Mixed")
		},
		want: callResult{Value: []any{"demo.service", uint32(0xdeadbeef), uint64(0x0102030405060708), true, []string{"a", "bc"}, dbus.MakeVariant(uint64(42)), demo}},
	}, {
		name: "error reply", member: "Get",
		reply: unknown.Body, errName: unknown.Name,
		do: func(ctx context.Context, b *Bus) (any, error) {
			return b.obs.call(ctx, demo, "org.freedesktop.DBus.Properties.Get", "org.freedesktop.systemd1.Service", "Nope")
		},
		want: callResult{Value: []any(nil), Err: unknown},
	}}

	orders := []struct {
		name  string
		order binary.ByteOrder
		flag  byte
	}{{"little-endian", binary.LittleEndian, 'l'}, {"big-endian", binary.BigEndian, 'B'}}
	type run struct {
		Results []callResult
		Bodies  [][]any
	}
	runs := map[string]run{}
	for _, o := range orders {
		t.Run(o.name, func(t *testing.T) {
			require.Equal(t, o.flag, encodeWithSerial(t, o.order, replyTo(&dbus.Message{}, true), 1)[0], "the fake writes this byte order")
			next := 0
			f := startPeerIn(t, o.order, "OK 0123456789abcdef0123456789abcdef\r\n", func(call *dbus.Message) *dbus.Message {
				if next >= len(cases) || call.Headers[dbus.FieldMember].Value() != cases[next].member {
					return errorReply(call.Serial(), "org.freedesktop.DBus.Error.UnknownMethod", "unexpected call "+call.String())
				}
				c := cases[next]
				next++
				if c.errName != "" {
					return errorReply(call.Serial(), c.errName, c.reply[0].(string))
				}
				return replyTo(call, c.reply...)
			})
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			p, err := dialPeer(ctx, f.path)
			require.NoError(t, err)
			defer p.Close()
			rec := &recordingCaller{caller: p}
			b := &Bus{obs: rec}

			var r run
			for _, c := range cases {
				v, err := c.do(ctx, b)
				var got callResult
				got.Value = v
				if err != nil {
					var de dbus.Error
					require.True(t, errors.As(err, &de), "%s: %v", c.name, err)
					got.Err = de
				}
				assert.Equal(t, c.want, got, c.name)
				r.Results = append(r.Results, got)
			}
			r.Bodies = rec.bodies
			runs[o.name] = r
		})
	}
	require.Len(t, runs, len(orders))
	assert.Equal(t, runs["little-endian"], runs["big-endian"], "the same replies in either byte order give the same results")
}

// storeCall calls method through b's observation connection and stores the reply in out.
func storeCall(ctx context.Context, b *Bus, path dbus.ObjectPath, method string, out any, args ...any) error {
	body, err := b.obs.call(ctx, path, method, args...)
	if err != nil {
		return err
	}
	return dbus.Store(body, out)
}

// The client encodes calls little-endian and patches its serial in at bytes 8..11 itself;
// godbus must read that call back as a valid message with the client's serial.
func TestPeerWritesLittleEndianCalls(t *testing.T) {
	client, server := net.Pipe()
	defer client.Close()
	defer server.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	require.NoError(t, server.SetDeadline(time.Now().Add(5*time.Second)))
	p := &peer{conn: client, in: bufio.NewReader(client)}

	for _, want := range []uint32{1, 2} {
		done := make(chan error, 1)
		go func() {
			_, err := p.call(ctx, unitPath("demo.service"), "org.freedesktop.DBus.Properties.Get", "org.freedesktop.systemd1.Service", "MainPID")
			done <- err
		}()
		raw := readMessage(t, server)
		assert.Equal(t, byte('l'), raw[0], "little-endian flag")
		assert.Equal(t, want, binary.LittleEndian.Uint32(raw[8:12]))
		call, err := dbus.DecodeMessage(bytes.NewReader(raw))
		require.NoError(t, err, "a valid message")
		assert.Equal(t, dbus.TypeMethodCall, call.Type)
		assert.Equal(t, "Get", call.Headers[dbus.FieldMember].Value())
		assert.Equal(t, []any{"org.freedesktop.systemd1.Service", "MainPID"}, call.Body)
		_, err = server.Write(encodeWithSerial(t, binary.BigEndian, replyTo(call, dbus.MakeVariant(uint32(7))), 100+want))
		require.NoError(t, err)
		require.NoError(t, <-done)
		assert.Equal(t, p.serial, call.Serial(), "godbus reads the client's serial")
		assert.Equal(t, want, call.Serial())
	}
}

// readMessage reads exactly one D-Bus message from r, framed by its fixed header in the
// byte order the header declares, so that nothing past the message is consumed.
func readMessage(t *testing.T, r io.Reader) []byte {
	t.Helper()
	fixed := make([]byte, 16)
	_, err := io.ReadFull(r, fixed)
	require.NoError(t, err)
	var order binary.ByteOrder = binary.LittleEndian
	if fixed[0] == 'B' {
		order = binary.BigEndian
	}
	// The header fields array starts at 16 and is padded to 8 before the body.
	fields, body := order.Uint32(fixed[12:16]), order.Uint32(fixed[4:8])
	rest := make([]byte, (fields+7)&^7+body)
	_, err = io.ReadFull(r, rest)
	require.NoError(t, err)
	return append(fixed, rest...)
}

// managerSignal is a signal of systemd's Manager object with body.
func managerSignal(member string, body ...any) *dbus.Message {
	return &dbus.Message{Type: dbus.TypeSignal, Headers: map[dbus.HeaderField]dbus.Variant{
		dbus.FieldPath: dbus.MakeVariant(dbus.ObjectPath("/org/freedesktop/systemd1")), dbus.FieldInterface: dbus.MakeVariant("org.freedesktop.systemd1.Manager"),
		dbus.FieldMember: dbus.MakeVariant(member), dbus.FieldSignature: dbus.MakeVariant(dbus.SignatureOf(body...)),
	}, Body: body}
}

func jobRemoved(job uint32, unit, result string) *dbus.Message {
	return managerSignal("JobRemoved", job, dbus.ObjectPath(fmt.Sprintf("/org/freedesktop/systemd1/job/%d", job)), unit, result)
}

func TestJobOverThePeerWaitsForItsOwnJobRemoved(t *testing.T) {
	queued := func(call *dbus.Message) *dbus.Message {
		return replyTo(call, dbus.ObjectPath("/org/freedesktop/systemd1/job/7"))
	}
	none := func(*dbus.Message) []*dbus.Message { return nil }
	cases := []struct {
		name          string
		answer        func(*dbus.Message) *dbus.Message
		before, after func(*dbus.Message) []*dbus.Message
		err           string
		deadline      bool
	}{
		{name: "done, after another job's signal", answer: queued, before: none, after: func(*dbus.Message) []*dbus.Message {
			return []*dbus.Message{jobRemoved(6, "other.service", "failed"), jobRemoved(7, "demo.service", "done")}
		}},
		{name: "the signal before the reply", answer: queued, after: none, before: func(*dbus.Message) []*dbus.Message {
			return []*dbus.Message{jobRemoved(7, "demo.service", "done")}
		}},
		{name: "failed", answer: queued, before: none, after: func(*dbus.Message) []*dbus.Message {
			return []*dbus.Message{jobRemoved(7, "demo.service", "failed")}
		}, err: `reload demo.service: systemd job result "failed"`},
		{name: "refused", answer: func(call *dbus.Message) *dbus.Message {
			return errorReply(call.Serial(), "org.freedesktop.systemd1.NoSuchUnit", "Unit demo.service not found.")
		}, before: none, after: none, err: "reload demo.service: systemd refused the job: Unit demo.service not found."},
		{name: "no signal until the deadline", answer: queued, before: none, after: none, deadline: true,
			err: "reload demo.service: wait for the ReloadUnit job of demo.service"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := startPeer(t, "OK 0123456789abcdef0123456789abcdef\r\n", c.answer)
			f.before, f.after = c.before, c.after
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			p, err := dialPeer(ctx, f.path)
			require.NoError(t, err)
			defer p.Close()
			b := &Bus{obs: p}
			jctx := ctx
			if c.deadline {
				var jcancel context.CancelFunc
				jctx, jcancel = context.WithTimeout(ctx, 200*time.Millisecond)
				defer jcancel()
			}
			err = b.Job(jctx, "reload", "demo.service")
			if c.err == "" {
				require.NoError(t, err)
			} else {
				assert.ErrorContains(t, err, c.err)
			}
			if c.deadline {
				assert.ErrorIs(t, err, context.DeadlineExceeded)
			}
			<-f.got
			<-f.got
			assert.Contains(t, <-f.got, "member ReloadUnit")
		})
	}
}
