package rpmexact

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/richt/services/pkg/ansible"
	"github.com/richt/services/pkg/durable"
	"github.com/richt/services/pkg/runner/runnertest"
)

func TestManagerCheckIsRememberedByIdentity(t *testing.T) {
	upgrade := map[string]any{"name": "demo", "version": "0:2.0-1.noarch"}
	dnfV := runnertest.Call{Argv: []string{"dnf", "--version"}, Stdout: "4.23.0\n"}
	install := runnertest.Call{Argv: []string{"dnf", "-y", "install-nevra", "--", "demo-0:2.0-1.noarch"}}
	transaction := func(checks ...runnertest.Call) []runnertest.Call {
		calls := []runnertest.Call{{Argv: rpmQ("demo"), Stdout: v1Out}, ownsDemo}
		calls = append(calls, checks...)
		return append(calls, txn(d1, d2, []string{"demo-0:2.0-1.noarch"}, install)...)
	}
	store := &durable.Store{Dir: t.TempDir()}
	identity := "/usr/bin/dnf-3 size=1 ino=1"
	identify := func(string) (string, error) { return identity, nil }
	run := func(t *testing.T, calls []runnertest.Call, args map[string]any) map[string]any {
		t.Helper()
		s := runnertest.New(t, calls...)
		data, _ := json.Marshal(args)
		h := Handler(Deps{Runner: s, Txn: Inline{Runner: s, Sync: &recorder{}, UnitDirs: []string{t.TempDir()}}, Memo: store, Identify: identify})
		var res map[string]any
		require.NoError(t, json.Unmarshal(ansible.Execute(context.Background(), Spec(), []string{"-"}, bytesReader(data), h), &res))
		assert.Equal(t, len(calls), s.Count(), "every scripted command ran")
		return res
	}

	checkMode := map[string]any{"name": "demo", "version": "0:2.0-1.noarch", "_ansible_check_mode": true}
	run(t, []runnertest.Call{{Argv: rpmQ("demo"), Stdout: v1Out}, ownsDemo, dnfV, assumeno}, checkMode)
	_, ok := store.ManagerChecked("dnf", identity)
	assert.False(t, ok, "check mode records nothing")

	res := run(t, transaction(dnfV), upgrade)
	assert.Equal(t, "4.23.0", res["manager_version"])
	res = run(t, transaction(), upgrade) // same executable: no --version
	assert.Equal(t, "4.23.0", res["manager_version"])

	identity = "/usr/bin/dnf5 size=2 ino=2" // replaced: checked again, and refused
	res = run(t, []runnertest.Call{{Argv: rpmQ("demo"), Stdout: v1Out}, ownsDemo, {Argv: []string{"dnf", "--version"}, Stdout: "dnf5 version 5.2.8.1\n"}}, upgrade)
	assert.Contains(t, res["msg"], "DNF 5")
	_, ok = store.ManagerChecked("dnf", identity)
	assert.False(t, ok, "a refused manager is never remembered")
}
