package lifecycle

import (
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/richt/services/pkg/ansible"
	"github.com/richt/services/pkg/durable"
	"github.com/richt/services/pkg/invocation"
)

// The summary line says what happened to the unit and why, in the words a person reads in
// the console; check mode says "would", and a check-mode daemon-reload is planned, not
// performed.
func TestSummarySaysWhatHappenedAndWhy(t *testing.T) {
	changed := map[string]any{"changed": true}
	named := map[string]any{"config:env": changed}
	cases := []struct {
		name    string
		p       func() *fakeSystemd
		pending bool
		args    map[string]any
		summary string
		reload  string
	}{
		{name: "converged", p: func() *fakeSystemd { return &fakeSystemd{p: props("active", "enabled")} },
			args: map[string]any{"unit": "demo", "enabled": true}, summary: "demo.service: nothing (converged)"},
		{name: "reload by a named trigger", p: func() *fakeSystemd { return &fakeSystemd{p: props("active", "enabled")} },
			args: map[string]any{"unit": "demo", "reload_on": []any{named}}, summary: "demo.service: reload (config:env)"},
		{name: "check mode: would", p: func() *fakeSystemd { return &fakeSystemd{p: props("active", "enabled")} },
			args: map[string]any{"unit": "demo", "restart_on": []any{named}, "_ansible_check_mode": true}, summary: "demo.service: would restart (config:env)"},
		{name: "check mode with a sync: planned, not performed", p: func() *fakeSystemd { return &fakeSystemd{p: props("active", "enabled")} },
			args:    map[string]any{"unit": "demo", "restart_on": []any{map[string]any{"package:demo": map[string]any{"changed": true, "daemon_reload": "needed"}}}, "_ansible_check_mode": true},
			summary: "demo.service: would daemon-reload, restart (package:demo)", reload: "planned"},
		{name: "the sync performed", p: func() *fakeSystemd { return &fakeSystemd{p: props("active", "enabled")} },
			args:    map[string]any{"unit": "demo", "restart_on": []any{map[string]any{"package:demo": map[string]any{"changed": true, "daemon_reload": "needed"}}}},
			summary: "demo.service: daemon-reload, restart (package:demo)", reload: "performed"},
		{name: "a start loads the change", p: func() *fakeSystemd { return &fakeSystemd{p: props("inactive", "enabled")} },
			args: map[string]any{"unit": "demo", "restart_on": []any{named}}, summary: "demo.service: start (was stopped)"},
		{name: "a failed start", p: func() *fakeSystemd { return &fakeSystemd{p: props("inactive", "enabled"), jobFail: "start"} },
			args: map[string]any{"unit": "demo"}, summary: "demo.service: start, then failed"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			sd := c.p()
			d := testDeps(sd, &memStore{pending: map[string]*durable.Pending{}})
			// A unit that can reload: its file on disk and the manager's word.
			d.Root = t.TempDir()
			unitDir := d.Root + "/etc/systemd/system"
			require.NoError(t, os.MkdirAll(unitDir, 0o755))
			require.NoError(t, os.WriteFile(unitDir+"/demo.service", []byte("[Service]\nExecStart=/bin/true\nExecReload=/bin/true\n"), 0o644))
			sd.p.FragmentPath, sd.p.CanReload = "/etc/systemd/system/demo.service", true
			data, _ := json.Marshal(c.args)
			var res map[string]any
			require.NoError(t, json.Unmarshal(ansible.Execute(context.Background(), Spec(), []string{"-"}, strings.NewReader(string(data)), Handler(d)), &res))
			assert.Equal(t, c.summary, res["summary"], res["msg"])
			if c.reload != "" {
				assert.Equal(t, c.reload, res["daemon_reload"])
			}
		})
	}
}

// A pending record this run wrote (the service module records ahead of its steps) is not
// "from an earlier run"; one written before this run began is.
func TestPendingOfThisRunIsNotFromAnEarlierRun(t *testing.T) {
	for _, c := range []struct {
		name    string
		since   time.Time
		trigger bool
		labels  []any
		earlier bool
	}{
		{name: "earlier run", since: invocation.Start.Add(-time.Minute), labels: []any{"pending restart from an earlier run"}, earlier: true},
		{name: "this run, named by its trigger", since: invocation.Start, trigger: true, labels: []any{"package:demo"}},
		{name: "this run, no trigger", since: invocation.Start.Add(time.Millisecond), labels: []any{"restart recorded by this run"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			st := &memStore{pending: map[string]*durable.Pending{"demo.service": {Reaction: "restart", Since: c.since, At: testRecorded}}}
			args := map[string]any{"unit": "demo"}
			if c.trigger {
				args["restart_on"] = []any{map[string]any{"package:demo": map[string]any{"changed": true}}}
			}
			res := runModule(t, &fakeSystemd{p: props("active", "enabled")}, st, args)
			require.Nil(t, res["failed"], res["msg"])
			assert.Equal(t, c.labels, res["triggers"])
			assert.Equal(t, c.earlier, res["pending_from_earlier_run"] != nil, "pending_from_earlier_run: %v", res["pending_from_earlier_run"])
			assert.Contains(t, res["summary"], "demo.service: restart (")
		})
	}
}
