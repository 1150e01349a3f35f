package systemd

import (
	"context"
	"testing"
	"time"

	"github.com/godbus/dbus/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// ResetFailed over D-Bus is one call of the Manager's ResetFailedUnit with the unit's
// name, on the connection the run observes with; systemd's refusal is the error.
func TestBusResetFailedIsOneManagerCall(t *testing.T) {
	f := startPeer(t, "OK 0123456789abcdef0123456789abcdef\r\n", func(call *dbus.Message) *dbus.Message {
		if call.Body[0] == "gone.service" {
			return errorReply(call.Serial(), "org.freedesktop.systemd1.NoSuchUnit", "Unit gone.service not loaded.")
		}
		return replyTo(call)
	})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	p, err := dialPeer(ctx, f.path)
	require.NoError(t, err)
	b := &Bus{obs: p, private: f.path}
	defer b.Close()
	<-f.got // AUTH
	<-f.got // BEGIN

	require.NoError(t, b.ResetFailed(ctx, "demo.service"))
	call := <-f.got
	assert.Contains(t, call, "path /org/freedesktop/systemd1 interface org.freedesktop.systemd1.Manager member ResetFailedUnit")
	assert.Contains(t, call, `"demo.service"`)

	err = b.ResetFailed(ctx, "gone.service")
	assert.ErrorContains(t, err, "reset-failed gone.service over D-Bus")
	assert.ErrorContains(t, err, "Unit gone.service not loaded.")
}
