package service

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/richt/services/pkg/ansible"
	"github.com/richt/services/pkg/durable"
	"github.com/richt/services/pkg/lifecycle"
	"github.com/richt/services/pkg/override"
	"github.com/richt/services/pkg/rpmexact"
	"github.com/richt/services/pkg/stamp"
)

// The service's summary: one line for the packages that moved, one per process (its
// step's own line, the package trigger named with its move), and check mode's "would".
func TestSummaryLinesPerPackageAndProcess(t *testing.T) {
	moved := map[string]any{"packages": []any{map[string]any{"name": "demo",
		"before": []any{"demo-0:1.0-1.noarch"}, "after": []any{"demo-0:2.0-1.noarch"}, "operation": "install-nevra"}}}
	for _, c := range []struct {
		name    string
		check   bool
		pkg     bool
		process string
		want    []string
	}{
		{name: "a restart for a package move", pkg: true, process: "demo.service: restart (package:demo)",
			want: []string{"packages: demo 1.0-1 → 2.0-1", "demo.service: restart (package:demo 1.0-1 → 2.0-1)"}},
		{name: "check mode", check: true, pkg: true, process: "demo.service: would restart (package:demo)",
			want: []string{"packages: would change demo 1.0-1 → 2.0-1", "demo.service: would restart (package:demo 1.0-1 → 2.0-1)"}},
		{name: "converged", process: "demo.service: nothing (converged)", want: []string{"demo.service: nothing (converged)"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			var calls []map[string]any
			pkgRes := map[string]any{"packages": []any{map[string]any{"name": "demo", "before": []any{"demo-0:1.0-1.noarch"}, "after": []any{"demo-0:1.0-1.noarch"}, "operation": "none"}}}
			if c.pkg {
				pkgRes = moved
			}
			no := false
			d := Deps{
				Packages:  predicted(fakePredict{pkg: c.pkg}, fakeModule(rpmexact.Spec(), &c.pkg, &calls, pkgRes)),
				Files:     fakeModule(override.Spec(), &no, &calls),
				Processes: fakeModule(lifecycle.Spec(), &c.pkg, &calls, map[string]any{"unit": "demo.service", "summary": c.process}),
				Predict:   fakePredict{pkg: c.pkg},
				Pending:   &fakePending{records: map[string]*durable.Pending{}},
				Now:       func() (stamp.Stamp, error) { return stamp.Stamp{BootID: "b", Mono: 1}, nil },
			}
			out := ansible.Call(context.Background(), Spec(), demoArgs(), c.check, false, Handler(d))
			require.Nil(t, out["failed"], out["msg"])
			assert.Equal(t, c.want, stringsOf(out["summary"]))
		})
	}
}

func TestBuildsAsAPersonNamesThem(t *testing.T) {
	for _, c := range []struct {
		nevras []string
		want   string
	}{
		{nil, "absent"},
		{[]string{"demo-0:1.0-1.noarch"}, "1.0-1"},
		{[]string{"demo-2:1.0-1.x86_64"}, "2:1.0-1"},
		{[]string{"demo-0:1.0-1.x86_64", "demo-0:1.0-1.i686"}, "1.0-1.x86_64+1.0-1.i686"},
	} {
		assert.Equal(t, c.want, builds("demo", c.nevras), "%v", c.nevras)
	}
}

// A process that names its reactions reacts to nothing more: a changed drop-in of its own
// unit that its lists do not name is warned about, naming the part and what it would
// take; one they name is not.
func TestAnUnnamedChangeOfTheProcessesOwnUnitWarns(t *testing.T) {
	for _, c := range []struct {
		name    string
		process map[string]any
		warn    bool
	}{
		{name: "not named", process: map[string]any{"unit": "demo", "restart_on": []any{"package:demo"}}, warn: true},
		{name: "named", process: map[string]any{"unit": "demo", "restart_on": []any{"package:demo", "dropin:demo.service/20.conf"}}},
		{name: "default wiring", process: map[string]any{"unit": "demo"}},
		{name: "not to run", process: map[string]any{"unit": "demo", "state": "stopped", "restart_on": []any{"package:demo"}}},
	} {
		for _, check := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s, check mode %v", c.name, check), func(t *testing.T) {
				var calls []map[string]any
				yes, no := true, false
				d := Deps{
					Packages:  predicted(fakePredict{}, fakeModule(rpmexact.Spec(), &no, &calls)),
					Files:     fakeModule(override.Spec(), &yes, &calls),
					Processes: fakeModule(lifecycle.Spec(), &no, &calls),
					Predict:   fakePredict{},
					Pending:   &fakePending{records: map[string]*durable.Pending{}},
					Now:       func() (stamp.Stamp, error) { return stamp.Stamp{BootID: "b", Mono: 1}, nil },
				}
				args := demoArgs()
				args["processes"] = []any{c.process}
				out := ansible.Call(context.Background(), Spec(), args, check, false, Handler(d))
				require.Nil(t, out["failed"], out["msg"])
				warnings := fmt.Sprint(out["warnings"])
				if !c.warn {
					assert.NotContains(t, warnings, "do not name it")
					return
				}
				assert.Contains(t, warnings, "processes[0] (demo.service): its drop-in dropin:demo.service/20.conf changed, and its restart_on and reload_on do not name it")
				assert.Contains(t, warnings, "Name dropin:demo.service/20.conf in restart_on")
			})
		}
	}
}

// A process's timeout, given as a number of seconds or with its unit, reaches its step in
// a form the step's module takes, in a removal as in a present run.
func TestAProcessTimeoutReachesItsStep(t *testing.T) {
	for _, state := range []string{"present", "absent"} {
		for _, limit := range []any{20.0, "20s"} { // 20.0: a number as JSON decodes it
			t.Run(fmt.Sprintf("%s, %v", state, limit), func(t *testing.T) {
				var calls, procCalls []map[string]any
				no := false
				d := Deps{
					Packages:  predicted(fakePredict{}, fakeModule(rpmexact.Spec(), &no, &calls)),
					Files:     fakeModule(override.Spec(), &no, &calls),
					Processes: fakeModule(lifecycle.Spec(), &no, &procCalls),
					Predict:   fakePredict{},
					Pending:   &fakePending{records: map[string]*durable.Pending{}},
					Now:       func() (stamp.Stamp, error) { return stamp.Stamp{BootID: "b", Mono: 1}, nil },
				}
				args := demoArgs()
				args["state"] = state
				args["processes"] = []any{map[string]any{"unit": "demo", "timeout": limit}}
				out := ansible.Call(context.Background(), Spec(), args, false, false, Handler(d))
				require.Nil(t, out["failed"], out["msg"])
				require.Len(t, procCalls, 1)
				assert.Equal(t, 20*time.Second, procCalls[0]["timeout"])
			})
		}
	}
}
