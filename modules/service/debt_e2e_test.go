package service_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/richt/services/modules"
	"github.com/richt/services/testenv"
)

// issue42Env is a target with the demo package (its unit has no ExecReload=, as redis's
// has none), the service module, systemd_lifecycle and rpm_exact, and rl, a package whose
// %post reloads the manager after its unit file was placed (EL scriptlets do; the image's
// EL transaction file triggers reload once more at the end).
type issue42Env struct {
	*env
	lifecycle, rpm string
}

func newIssue42Env(t *testing.T) *issue42Env {
	t.Helper()
	e := newEnv(t)
	rl := func(version string) testenv.Package {
		return testenv.Package{Name: "rl", Version: version,
			Scriptlets: map[string]string{"post": "systemctl daemon-reload"},
			Files: map[string]testenv.File{"/usr/lib/systemd/system/rl.service": {Content: fmt.Sprintf(
				"[Unit]\nDescription=rl %s\n\n[Service]\nExecStart=/bin/sleep infinity\n", version)}}}
	}
	require.NoError(t, e.t.AddRepo(context.Background(), "rl", testenv.Repo(t, rl("1.0"), rl("2.0"))))
	e.t.LogUnitOnFailure(t, "rl.service")
	return &issue42Env{env: e,
		lifecycle: testenv.BuildModule(t, modules.Command, testenv.Named("systemd_lifecycle"), testenv.Defaults(map[string]any{"timeout": testenv.ModuleTimeout()})),
		rpm:       testenv.BuildModule(t, modules.Command, testenv.Named("rpm_exact"))}
}

// demoOnly is the demo service with its package only and a process that names only its
// package's restart: no drop-in, so its unit cannot reload.
func demoOnly() map[string]any {
	return map[string]any{"name": "demo", "packages": []any{map[string]any{"name": "demo", "version": v1}},
		"processes": []any{map[string]any{"unit": "demo.service", "timeout": testenv.ModuleTimeout(), "restart_on": []any{"package:demo"}}}}
}

const demoRecord = "/var/lib/richt/pending/demo.service.json"

func (e *issue42Env) life(t *testing.T, args map[string]any) testenv.Result {
	t.Helper()
	return e.t.RunModule(t, e.lifecycle, with(args, "unit", "demo.service"))
}

// Issue 42 item 2: a reaction refused before acting leaves no record, and a pending record
// that cannot be carried out as recorded fails one run, clearly, and a restart clears it.
func TestNoDebtThatCanNeverBePaid(t *testing.T) {
	t.Parallel()
	e := newIssue42Env(t)
	r := e.run(t, demoOnly())
	require.False(t, r.Failed(), r.Msg())

	t.Run("a refused reload_on leaves no record; the next runs pass unchanged", func(t *testing.T) {
		r := e.life(t, map[string]any{"reload_on": []any{map[string]any{"changed": true}}})
		require.True(t, r.Failed())
		assert.Contains(t, r.Msg(), "reload_on needs demo.service to be reload-capable")
		e.t.MustExec(t, "test", "!", "-e", demoRecord)

		r = e.life(t, map[string]any{})
		require.False(t, r.Failed(), r.Msg())
		assert.Empty(t, r.Strings("actions"))
		assert.False(t, r.Changed())

		r = e.run(t, demoOnly())
		require.False(t, r.Failed(), r.Msg())
		assert.False(t, r.Changed())
	})

	for _, tc := range []struct {
		name, record, saying string
		byHand               bool
	}{
		{"an old-style record: one clear failure, then warnings, then a restart clears it",
			`{"unit":"demo.service","action":"restart","time":"2026-01-01T00:00:00Z"}`, "not a record this version can read", false},
		{"a reload of a unit that cannot reload: the same, cleared by a restart by hand",
			`{"reaction":"reload","since":"2026-01-01T00:00:00Z"}`, "the unit cannot reload: no ExecReload=", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e.t.MustExec(t, "mkdir", "-p", "/var/lib/richt/pending")
			require.NoError(t, e.t.WriteFile(context.Background(), demoRecord, []byte(tc.record), 0o644))

			r := e.life(t, map[string]any{})
			require.True(t, r.Failed())
			assert.Contains(t, r.Msg(), demoRecord)
			assert.Contains(t, r.Msg(), "cannot be carried out as recorded")
			assert.Contains(t, r.Msg(), tc.saying)
			assert.Contains(t, r.Msg(), "systemctl restart demo.service")
			assert.NotContains(t, r.Msg(), "refused the job")
			assert.Empty(t, r.Strings("actions"))

			// Later runs warn and pass, the service's too, until a restart.
			r = e.life(t, map[string]any{})
			require.False(t, r.Failed(), r.Msg())
			assert.Contains(t, strings.Join(r.Strings("warnings"), "\n"), "cannot be carried out as recorded")
			r = e.run(t, demoOnly())
			require.False(t, r.Failed(), r.Msg())
			assert.False(t, r.Changed())
			e.t.MustExec(t, "test", "-e", demoRecord)

			if tc.byHand {
				e.t.MustExec(t, "systemctl", "restart", "demo.service")
				r = e.life(t, map[string]any{})
				require.False(t, r.Failed(), r.Msg())
				assert.Empty(t, r.Strings("actions"))
			} else {
				r = e.life(t, map[string]any{"restart_on": []any{map[string]any{"changed": true}}})
				require.False(t, r.Failed(), r.Msg())
				assert.Equal(t, []string{"restart"}, r.Strings("actions"))
			}
			e.t.MustExec(t, "test", "!", "-e", demoRecord)
			r = e.life(t, map[string]any{})
			require.False(t, r.Failed(), r.Msg())
			assert.Empty(t, r.Strings("warnings"))
		})
	}
}

// unitsLoaded is the manager's UnitsLoadTimestampMonotonic: when it last loaded its units.
func (e *issue42Env) unitsLoaded(t *testing.T) string {
	return strings.TrimSpace(e.t.MustExec(t, "systemctl", "show", "--property=UnitsLoadTimestampMonotonic", "--value"))
}

// Issue 42 item 4: the manager reload a package's %post did after the transaction's unit
// files were in place is the only one: the run that reacts to the package does not reload
// the manager again, and the unit runs its new definition.
func TestAScriptletsManagerReloadIsNotRepeated(t *testing.T) {
	t.Parallel()
	e := newIssue42Env(t)

	t.Run("rpm_exact, then systemd_lifecycle on its result", func(t *testing.T) {
		for _, version := range []string{"1.0", "2.0"} {
			before := e.unitsLoaded(t)
			pkg := e.t.RunModule(t, e.rpm, map[string]any{"name": "rl", "version": "0:" + version + "-1.noarch"})
			require.False(t, pkg.Failed(), pkg.Msg())
			require.NotNil(t, pkg["files_placed"], "rpm_exact says when the files were in place")
			afterTxn := e.unitsLoaded(t)
			require.NotEqual(t, before, afterTxn, "the transaction's scriptlets reloaded the manager")

			r := e.t.RunModule(t, e.lifecycle, map[string]any{"unit": "rl.service", "restart_on": []any{map[string]any(pkg)}})
			require.False(t, r.Failed(), r.Msg())
			assert.NotContains(t, r.Strings("actions"), "daemon-reload", version)
			assert.Contains(t, r.String("daemon_reload_served"), "scriptlet", version)
			assert.Equal(t, afterTxn, e.unitsLoaded(t), "%s: no manager reload after the scriptlet's", version)
			assert.Equal(t, "rl "+version+"\n", e.t.MustExec(t, "systemctl", "show", "-p", "Description", "--value", "rl.service"))
			assert.Equal(t, "no\n", e.t.MustExec(t, "systemctl", "show", "-p", "NeedDaemonReload", "--value", "rl.service"))
			e.t.MustExec(t, "test", "!", "-e", "/var/lib/richt/manager-sync-due")
		}
	})

	t.Run("the service module: its process step does not reload the manager again", func(t *testing.T) {
		for _, version := range []string{"1.0", "2.0"} {
			r := e.run(t, map[string]any{"name": "rl", "packages": []any{map[string]any{"name": "rl", "version": "0:" + version + "-1.noarch"}},
				"processes": []any{map[string]any{"unit": "rl.service", "timeout": testenv.ModuleTimeout(), "restart_on": []any{"package:rl"}}}})
			require.False(t, r.Failed(), r.Msg())
			proc := r["processes"].([]any)[0].(map[string]any)
			assert.NotContains(t, proc["actions"], "daemon-reload", "%s: %v", version, proc["actions"])
			assert.Contains(t, proc["daemon_reload_served"], "scriptlet", version)
			assert.Equal(t, "rl "+version+"\n", e.t.MustExec(t, "systemctl", "show", "-p", "Description", "--value", "rl.service"))
		}
	})
}

// asRun is check mode's plan and steps as the real run r takes them: a process whose real
// run says daemon_reload_served found the manager reload check mode planned for a package
// change already done by the transaction's scriptlets (check mode cannot see a reload that
// a transaction not yet run will do), so its daemon-reload drops out; the rest is equal.
func asRun(check, r testenv.Result) (plan []any, stepsOf []string) {
	served := map[string]bool{}
	for _, p := range r["processes"].([]any) {
		m := p.(map[string]any)
		if m["daemon_reload_served"] != nil {
			served[fmt.Sprint(m["unit"])] = true
		}
	}
	for _, e := range check["plan"].([]any) {
		unit, step, ok := strings.Cut(strings.TrimPrefix(fmt.Sprint(e), "process "), ": ")
		if ok && strings.HasPrefix(fmt.Sprint(e), "process ") && step == "daemon-reload" && served[unit] {
			continue
		}
		plan = append(plan, e)
	}
	for _, st := range steps(check) {
		for unit := range served {
			if strings.HasPrefix(st, "process "+unit+" ") {
				st = strings.Replace(st, " daemon-reload", "", 1)
				st = strings.Replace(st, "[daemon-reload ", "[", 1)
				st = strings.Replace(st, "[daemon-reload]", "[]", 1)
			}
		}
		stepsOf = append(stepsOf, st)
	}
	return plan, stepsOf
}
