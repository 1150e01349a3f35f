package service

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/richt/services/pkg/ansible"
	"github.com/richt/services/pkg/durable"
	"github.com/richt/services/pkg/lifecycle"
	"github.com/richt/services/pkg/override"
	"github.com/richt/services/pkg/rpmexact"
	"github.com/richt/services/pkg/runner/runnertest"
)

func TestDependents(t *testing.T) {
	query := func(stdout string, rc int, names ...string) runnertest.Call {
		return runnertest.Call{Argv: append([]string{"rpm", "-q", "--qf", `%{NAME}\n`, "--"}, names...), Stdout: stdout, ExitCode: rc}
	}
	test := func(stderr string, rc int, names ...string) runnertest.Call {
		return runnertest.Call{Argv: append([]string{"rpm", "-e", "--test", "--allmatches", "--"}, names...), Stderr: stderr, ExitCode: rc}
	}
	cases := []struct {
		name    string
		calls   []runnertest.Call
		want    []string
		wantErr string
	}{
		{"nothing installed: nothing to ask", []runnertest.Call{
			query("package liba is not installed\npackage libz is not installed\n", 2, "liba", "libz"),
		}, nil, ""},
		{"nothing requires them", []runnertest.Call{
			query("liba\npackage libz is not installed\n", 1, "liba", "libz"),
			test("", 0, "liba"),
		}, nil, ""},
		{"dependents, and what requires those", []runnertest.Call{
			query("liba\nlibz\n", 0, "liba", "libz"),
			test("error: Failed dependencies:\n\tliba is needed by (installed) appb-1.0-1.noarch\n"+
				"\tliba.so.1()(64bit) is needed by (installed) appb-1.0-1.noarch\n", 1, "liba", "libz"),
			test("error: Failed dependencies:\n\tappb = 1.0-1 is needed by (installed) appc-2:3-4.x86_64\n", 1, "liba", "libz", "appb-1.0-1.noarch"),
			test("", 0, "liba", "libz", "appb-1.0-1.noarch", "appc-2:3-4.x86_64"),
		}, []string{"appb-1.0-1.noarch", "appc-2:3-4.x86_64"}, ""},
		{"rpm fails otherwise: an error, never 'no dependents'", []runnertest.Call{
			query("liba\n", 0, "liba"),
			test("error: cannot open Packages database in /var/lib/rpm\n", 1, "liba"),
		}, nil, "test the removal of liba: rpm exited 1: error: cannot open Packages database"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			names := c.calls[0].Argv[5:]
			p := Predictor{Runner: runnertest.New(t, c.calls...)}
			got, err := p.Dependents(context.Background(), names)
			if c.wantErr != "" {
				assert.ErrorContains(t, err, c.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, c.want, got)
		})
	}
}

// A removal that would take packages outside the service's along is refused before any
// step runs, naming them; remove_dependents lets it go ahead and report them.
func TestRemovalWithDependents(t *testing.T) {
	for _, allow := range []bool{false, true} {
		t.Run(map[bool]string{false: "refused", true: "allowed"}[allow], func(t *testing.T) {
			var calls []map[string]any
			changed := true
			d := Deps{
				Packages:  fakeModule(rpmexact.Spec(), &changed, &calls),
				Files:     fakeModule(override.Spec(), &changed, &calls),
				Processes: fakeModule(lifecycle.Spec(), &changed, &calls),
				Predict:   fakePredict{dependents: []string{"appb-1.0-1.noarch"}},
				Pending:   &fakePending{records: map[string]*durable.Pending{}},
			}
			args := with(demoArgs(), "state", "absent", "remove_dependents", allow)
			out := ansible.Call(context.Background(), Spec(), args, false, false, Handler(d))
			if !allow {
				assert.Equal(t, true, out["failed"])
				assert.Equal(t, "packages", out["failed_step"])
				assert.Contains(t, out["msg"], "removing demo would also remove appb-1.0-1.noarch")
				assert.Contains(t, out["msg"], "remove_dependents")
				assert.Empty(t, calls, "no step ran")
				assert.Equal(t, false, out["changed"])
				return
			}
			require.Nil(t, out["failed"], out["msg"])
			assert.Len(t, calls, 3, "process, file, packages")
			assert.Equal(t, []any{"appb-1.0-1.noarch"}, out["removed_dependents"])
			assert.Contains(t, out["warnings"], "removing demo also removed appb-1.0-1.noarch, which required its packages (remove_dependents)")
		})
	}
}

func with(args map[string]any, kv ...any) map[string]any {
	out := map[string]any{}
	for k, v := range args {
		out[k] = v
	}
	for i := 0; i+1 < len(kv); i += 2 {
		out[kv[i].(string)] = kv[i+1]
	}
	return out
}
