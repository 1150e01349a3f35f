package override

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/richt/services/pkg/ansible"
	"github.com/richt/services/pkg/durable"
	"github.com/richt/services/pkg/runner/runnertest"
)

type rec struct{ due, cleared, removed int }

func (r *rec) MarkManagerSyncDue(context.Context, string) (string, error) {
	r.due++
	return "1", nil
}
func (r *rec) ManagerSync() (durable.Sync, error) {
	return durable.Sync{Entries: []durable.SyncEntry{{ID: "0"}}}, nil
}
func (r *rec) ClearManagerSync(context.Context, durable.Sync) error { r.cleared++; return nil }
func (r *rec) RemoveManagerSyncEntry(context.Context, string) error { r.removed++; return nil }

func execute(t *testing.T, d Deps, args map[string]any) map[string]any {
	t.Helper()
	args["owner"], args["group"] = "0", "0"
	data, _ := json.Marshal(args)
	out := ansible.Execute(context.Background(), Spec(), []string{"-"}, strings.NewReader(string(data)), Handler(d))
	var res map[string]any
	require.NoError(t, json.Unmarshal(out, &res))
	return res
}

func TestPlanAndManagerSync(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("writes files owned by root")
	}
	root := t.TempDir()
	reload := runnertest.Call{Argv: []string{"systemctl", "daemon-reload"}}
	drop := filepath.Join(root, "/etc/systemd/system/demo.service.d/10.conf")
	steps := []struct {
		name   string
		args   map[string]any
		calls  []runnertest.Call
		op     string
		reload string
		due    int
	}{
		// A content change records the reload it owes before the file moves, and the
		// reload (when the task makes it) settles the record.
		{"create", map[string]any{"content": "[Service]\nExecReload=/bin/true\n"}, []runnertest.Call{reload}, "create", "performed", 1},
		{"same content: nothing", map[string]any{"content": "[Service]\nExecReload=/bin/true\n"}, nil, "none", "none", 0},
		{"check mode: nothing runs, the reload is planned", map[string]any{"content": "[Service]\n", "_ansible_check_mode": true}, nil, "update", "planned", 0},
		{"daemon_reload false: recorded", map[string]any{"content": "[Service]\n", "daemon_reload": false}, nil, "update", "needed", 1},
		{"mode only", map[string]any{"content": "[Service]\n", "mode": "0600"}, nil, "attributes", "none", 0},
		{"remove", map[string]any{"state": "absent"}, []runnertest.Call{reload}, "remove", "performed", 1},
	}
	for _, s := range steps {
		t.Run(s.name, func(t *testing.T) {
			r := &rec{}
			s.args["unit"], s.args["name"] = "demo", "10.conf"
			res := execute(t, Deps{Runner: runnertest.New(t, s.calls...), Sync: r, Root: root}, s.args)
			require.Nil(t, res["failed"], res["msg"])
			assert.Equal(t, s.op, res["operation"])
			assert.Equal(t, s.reload, res["daemon_reload"])
			assert.Equal(t, s.due, r.due)
			_, placed := res["files_placed"]
			assert.Equal(t, s.due > 0, placed, "files_placed when the file moved (a manager reload was recorded for it)")
		})
	}
	_, err := os.Stat(filepath.Dir(drop))
	assert.True(t, os.IsNotExist(err), "emptied drop-in directory removed")
}

func TestSensitiveDiffHasNoBytes(t *testing.T) {
	d := diff(Want{Path: "/p", Present: true, Content: []byte("new-secret"), Mode: 0o600, Sensitive: true},
		File{Exists: true, Content: []byte("old-secret")})
	assert.NotContains(t, d.Before+d.After, "secret")
	assert.Contains(t, d.After, "content changed")
}

func TestDropInNames(t *testing.T) {
	for _, ok := range []string{"10-env.conf", "override.conf", "a@b.conf"} {
		assert.NoError(t, validDropInName(ok), ok)
	}
	for _, bad := range []string{"x", ".conf", ".hidden.conf", "-x.conf", "a/b.conf", "a b.conf", "x.conf.bak"} {
		assert.Error(t, validDropInName(bad), bad)
	}
}
