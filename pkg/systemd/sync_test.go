package systemd

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/richt/services/pkg/durable"
)

type reloader struct{ err error }

func (r reloader) DaemonReload(context.Context) error { return r.err }

type clearer struct{ cleared []durable.Sync }

func (c *clearer) ClearManagerSync(_ context.Context, seen durable.Sync) error {
	c.cleared = append(c.cleared, seen)
	return nil
}

func TestReloadManagerClearsOnlyWhatItServed(t *testing.T) {
	seen := durable.Sync{Entries: []durable.SyncEntry{{ID: "a", Reason: "unit_override x changed"}}}
	tests := []struct {
		name    string
		reload  error
		wantErr string
		cleared []durable.Sync
	}{
		{name: "reloaded: the entries seen before it are cleared", cleared: []durable.Sync{seen}},
		{name: "reload failed: nothing is cleared", reload: errors.New("bus gone"), wantErr: "daemon-reload: bus gone"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := &clearer{}
			err := ReloadManager(context.Background(), reloader{tt.reload}, c, seen)
			if tt.wantErr != "" {
				assert.EqualError(t, err, tt.wantErr)
				assert.ErrorIs(t, err, ErrReload)
			} else {
				assert.NoError(t, err)
			}
			assert.Equal(t, tt.cleared, c.cleared)
		})
	}
}
