package rpmexact

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/richt/services/pkg/ansible"
	"github.com/richt/services/pkg/runner"
	"github.com/richt/services/pkg/runner/runnertest"
)

func rpmQ(name string) []string { return queryArgv(name) }

// qa is the snapshot query of the whole database, answered with lines NAME\tEVRA.
func qa(lines ...string) runnertest.Call {
	out := ""
	for _, l := range lines {
		out += l + "\n"
	}
	return runnertest.Call{Argv: allPackagesArgv, Stdout: out}
}

// files is the query for the files of what a transaction installed.
func files(nevras ...string) runnertest.Call {
	return runnertest.Call{Argv: append([]string{"rpm", "-q", "--qf", "[%{FILEFLAGS}\t%{FILEMTIMES}\t%{FILENAMES}\n]", "--"}, nevras...)}
}

// txn scripts one transaction: snapshot, DNF, snapshot, and the files of what it added.
func txn(before, after []string, added []string, dnf runnertest.Call) []runnertest.Call {
	calls := []runnertest.Call{qa(before...), dnf, qa(after...)}
	if len(added) > 0 {
		calls = append(calls, files(added...))
	}
	return calls
}

// assumeno is DNF 4.23's summary of the upgrade of demo (captured from a real run).
var assumeno = runnertest.Call{Argv: []string{"dnf", "--assumeno", "install-nevra", "--", "demo-0:2.0-1.noarch"}, ExitCode: 1, Stdout: `Dependencies resolved.
================================================================================
 Package           Architecture      Version            Repository         Size
================================================================================
Upgrading:
 demo              noarch            2.0-1              fixtures          5.9 k
 demo-extra        noarch            2.0-1              fixtures          5.9 k

Transaction Summary
================================================================================
Upgrade  2 Packages

Total size: 12 k
Operation aborted.
`}

var (
	d1 = []string{"demo\t0:1.0-1.noarch", "other\t0:1.0-1.noarch"}
	d2 = []string{"demo\t0:2.0-1.noarch", "other\t0:1.0-1.noarch"}
	d0 = []string{"other\t0:1.0-1.noarch"}
)

const (
	dbOut  = "@@rpmdb\t/var/lib/rpm\tsqlite\n"
	v1Out  = dbOut + "@@demo\t0:1.0-1.noarch\n"
	v2Out  = dbOut + "@@demo\t0:2.0-1.noarch\n"
	absent = dbOut + "package demo is not installed\n"
)

type recorder struct{ reasons []string }

func (r *recorder) MarkManagerSyncDue(_ context.Context, reason string) (string, error) {
	r.reasons = append(r.reasons, reason)
	return fmt.Sprint(len(r.reasons)), nil
}

func (r *recorder) RemoveManagerSyncEntry(context.Context, string) error { return nil }

func execute(t *testing.T, s *runnertest.Script, rec *recorder, args map[string]any) map[string]any {
	t.Helper()
	return executeIn(t, s, rec, nil, args)
}

func executeIn(t *testing.T, s *runnertest.Script, rec *recorder, unitDirs []string, args map[string]any) map[string]any {
	t.Helper()
	if unitDirs == nil {
		unitDirs = []string{t.TempDir()}
	}
	data, _ := json.Marshal(args)
	h := Handler(Deps{Runner: s, Txn: Inline{Runner: s, Sync: rec, UnitDirs: unitDirs}})
	out := ansible.Execute(context.Background(), Spec(), []string{"-"}, bytesReader(data), h)
	var res map[string]any
	require.NoError(t, json.Unmarshal(out, &res), string(out))
	return res
}

func TestDecisions(t *testing.T) {
	dnfV := runnertest.Call{Argv: []string{"dnf", "--version"}, Stdout: "4.23.0\n  Installed: dnf-0:4.23.0-1.noarch\n"}
	cases := []struct {
		name      string
		args      map[string]any
		calls     []runnertest.Call
		changed   bool
		operation string
		failed    string
		synced    bool
	}{
		{
			name:  "exact version installed: one rpm query, nothing else",
			args:  map[string]any{"name": "demo", "version": "0:1.0-1.noarch"},
			calls: []runnertest.Call{{Argv: rpmQ("demo"), Stdout: v1Out}}, operation: "none",
		},
		{
			name: "upgrade",
			args: map[string]any{"name": "demo", "version": "0:2.0-1.noarch"},
			calls: append([]runnertest.Call{{Argv: rpmQ("demo"), Stdout: v1Out}, ownsDemo, dnfV},
				txn(d1, d2, []string{"demo-0:2.0-1.noarch"},
					runnertest.Call{Argv: []string{"dnf", "-y", "install-nevra", "--", "demo-0:2.0-1.noarch"}, Stdout: "Complete!\n"})...),
			changed: true, operation: "install-nevra",
		},
		{
			name:  "unversioned and installed: no-op even though newer exists",
			args:  map[string]any{"name": "demo"},
			calls: []runnertest.Call{{Argv: rpmQ("demo"), Stdout: v1Out}}, operation: "none",
		},
		{
			name: "unversioned and absent: install-n with yum",
			args: map[string]any{"name": "demo", "manager": "yum"},
			calls: append([]runnertest.Call{
				{Argv: rpmQ("demo"), ExitCode: 1, Stdout: absent},
				{Argv: []string{"yum", "--version"}, Stdout: "4.14.0\n"}},
				txn(d0, d2, []string{"demo-0:2.0-1.noarch"}, runnertest.Call{Argv: []string{"yum", "-y", "install-n", "--", "demo"}})...),
			changed: true, operation: "install-n",
		},
		{
			name: "absent and installed: remove",
			args: map[string]any{"name": "demo", "state": "absent"},
			calls: append([]runnertest.Call{{Argv: rpmQ("demo"), Stdout: v1Out}, ownsDemo, dnfV},
				txn(d1, d0, nil, runnertest.Call{Argv: []string{"dnf", "-y", "remove", "--", "demo"}})...),
			changed: true, operation: "remove",
		},
		{
			name:  "absent and absent: no-op",
			args:  map[string]any{"name": "demo", "state": "absent"},
			calls: []runnertest.Call{{Argv: rpmQ("demo"), ExitCode: 1, Stdout: absent}}, operation: "none",
		},
		{
			name:    "check mode: version checked, no transaction",
			args:    map[string]any{"name": "demo", "version": "0:2.0-1.noarch", "_ansible_check_mode": true},
			calls:   []runnertest.Call{{Argv: rpmQ("demo"), Stdout: v1Out}, ownsDemo, dnfV, assumeno},
			changed: true, operation: "install-nevra",
		},
		{
			name:      "DNF 5 refused",
			args:      map[string]any{"name": "demo", "version": "0:2.0-1.noarch"},
			calls:     []runnertest.Call{{Argv: rpmQ("demo"), Stdout: v1Out}, ownsDemo, {Argv: []string{"dnf", "--version"}, Stdout: "dnf5 version 5.2.8.1\n"}},
			operation: "install-nevra", failed: "DNF 5 (dnf5 version 5.2.8.1)",
		},
		{
			name: "DNF exits 0 but the database disagrees",
			args: map[string]any{"name": "demo", "version": "0:2.0-1.noarch"},
			calls: append([]runnertest.Call{{Argv: rpmQ("demo"), Stdout: v1Out}, ownsDemo, dnfV},
				txn(d1, d1, nil, runnertest.Call{Argv: []string{"dnf", "-y", "install-nevra", "--", "demo-0:2.0-1.noarch"}})...),
			operation: "install-nevra", failed: "exited 0 but the RPM database does not show the requested state",
		},
		{
			name: "DNF fails: its message is kept",
			args: map[string]any{"name": "demo", "version": "0:9.0-1.noarch"},
			calls: append([]runnertest.Call{{Argv: rpmQ("demo"), Stdout: v1Out}, ownsDemo, dnfV},
				txn(d1, d1, nil, runnertest.Call{Argv: []string{"dnf", "-y", "install-nevra", "--", "demo-0:9.0-1.noarch"}, ExitCode: 1, Stderr: "Error: Unable to find a match: demo-0:9.0-1.noarch\n"})...),
			operation: "install-nevra", failed: "Unable to find a match",
		},
		{
			name:      "broken rpm database is an error, not absent",
			args:      map[string]any{"name": "demo"},
			calls:     []runnertest.Call{{Argv: rpmQ("demo"), ExitCode: 1, Stderr: "error: cannot open Packages database\n"}},
			operation: "none", failed: "cannot open Packages database",
		},
		{
			name:  "deadline",
			args:  map[string]any{"name": "demo", "version": "0:2.0-1.noarch"},
			calls: []runnertest.Call{{Argv: rpmQ("demo"), Stdout: v1Out}, ownsDemo, dnfV, qa(d1...), {Argv: []string{"dnf", "-y", "install-nevra", "--", "demo-0:2.0-1.noarch"}, Err: context.DeadlineExceeded}},
			// The transaction may have run: changed is true, and the task fails.
			changed: true, operation: "install-nevra", failed: "timed out after 10m0s",
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			rec := &recorder{}
			res := execute(t, runnertest.New(t, c.calls...), rec, c.args)
			if c.failed != "" {
				assert.Equal(t, true, res["failed"])
				assert.Contains(t, res["msg"], c.failed)
			} else {
				assert.Nil(t, res["failed"], res["msg"])
			}
			assert.Equal(t, c.changed, res["changed"])
			assert.Equal(t, c.operation, res["operation"])
			assert.Equal(t, c.synced, len(rec.reasons) > 0, "manager sync recorded")
		})
	}
}

func TestBadParametersRunNothing(t *testing.T) {
	for _, args := range []map[string]any{
		{"name": "-rf"}, {"name": "demo", "version": "latest"}, {"name": "demo", "state": "latest"}, {"nam": "demo"},
	} {
		s := runnertest.New(t) // no calls expected
		res := execute(t, s, &recorder{}, args)
		assert.Equal(t, true, res["failed"], args)
		assert.Equal(t, 0, s.Count())
	}
}

func TestParseQueryIgnoresOtherNames(t *testing.T) {
	// rpm -q demo-1.0 matches package demo version 1.0; only exact names count.
	inst, err := parseQuery([]string{"demo-1.0"}, runner.Result{Stdout: "@@demo\t0:1.0-1.noarch\n"})
	require.NoError(t, err)
	assert.Empty(t, inst["demo-1.0"].NEVRAs)
	_, err = parseQuery([]string{"demo"}, runner.Result{Stdout: "@@demo\n"})
	assert.ErrorContains(t, err, "malformed")
}

func FuzzParseQuery(f *testing.F) {
	f.Add(v1Out, 0)
	f.Add(absent, 1)
	f.Add("@@demo\t\n", 0)
	f.Add("package demo is not installed\n", 1)
	f.Add("@@rpmdb\t\n", 1)
	f.Add("@@demo\t0:1.0-1.noarch\tdemo\vinstallonlypkg(kernel)\v\n", 0)
	f.Fuzz(func(t *testing.T, out string, rc int) {
		all, db, err := parseAnswer([]string{"demo"}, runner.Result{Stdout: out, ExitCode: rc})
		inst := all["demo"]
		if strings.Contains(db.Path+db.Backend, "\n") {
			t.Fatalf("database line ran into the answer: %q", out)
		}
		if err != nil {
			return
		}
		for _, n := range inst.NEVRAs {
			if len(n) <= len("demo-") {
				t.Fatalf("empty NEVRA accepted from %q", out)
			}
		}
	})
}
