package lifecycle

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
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
// and every call with answer(call), after an unrelated signal.
type fakePeer struct {
	path      string
	authReply string
	answer    func(call *dbus.Message) *dbus.Message
	got       chan string // auth lines and calls as seen
}

func startPeer(t *testing.T, authReply string, answer func(*dbus.Message) *dbus.Message) *fakePeer {
	t.Helper()
	f := &fakePeer{path: filepath.Join(t.TempDir(), "private"), authReply: authReply, answer: answer, got: make(chan string, 16)}
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
			signal := &dbus.Message{Type: dbus.TypeSignal, Headers: map[dbus.HeaderField]dbus.Variant{
				dbus.FieldPath: dbus.MakeVariant(dbus.ObjectPath("/org/freedesktop/systemd1")), dbus.FieldInterface: dbus.MakeVariant("org.freedesktop.systemd1.Manager"),
				dbus.FieldMember: dbus.MakeVariant("Reloading"), dbus.FieldSignature: dbus.MakeVariant(dbus.SignatureOf(true)),
			}, Body: []any{true}}
			for _, m := range []*dbus.Message{signal, f.answer(call)} {
				if m == nil {
					continue
				}
				serial++
				_, _ = c.Write(encodeWithSerial(t, m, serial))
			}
		}
	}()
	return f
}

func encodeWithSerial(t *testing.T, m *dbus.Message, serial uint32) []byte {
	var buf bytes.Buffer
	require.NoError(t, m.EncodeTo(&buf, binary.LittleEndian))
	binary.LittleEndian.PutUint32(buf.Bytes()[8:12], serial)
	return buf.Bytes()
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
