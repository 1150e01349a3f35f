package service

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/richt/services/pkg/ansible"
	"github.com/richt/services/pkg/durable"
	"github.com/richt/services/pkg/lifecycle"
	"github.com/richt/services/pkg/rpmexact"
	"github.com/richt/services/pkg/stamp"
	"github.com/richt/services/pkg/systemd"
)

// hostUnits is a systemd with several units, each from its own package: not found until
// the package is installed and the manager reloaded; a package change of an installed
// unit leaves NeedDaemonReload=yes until the next reload. It counts the manager reloads.
type hostUnits struct {
	mu      sync.Mutex
	units   map[string]*hostState
	reloads int
}

type hostState struct{ installed, loaded, changed, active bool }

func (h *hostUnits) Show(_ context.Context, unit string) (systemd.Props, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	u := h.units[unit]
	if u == nil || !u.loaded {
		return systemd.Props{ID: unit, LoadState: "not-found", ActiveState: "inactive", SubState: "dead"}, nil
	}
	state, sub := "inactive", "dead"
	if u.active {
		state, sub = "active", "running"
	}
	return systemd.Props{ID: unit, LoadState: "loaded", ActiveState: state, SubState: sub, UnitFileState: "enabled",
		InvocationID: "one", ActiveEnterMono: 5, NeedDaemonReload: u.changed,
		FragmentPath: "/usr/lib/systemd/system/" + unit}, nil
}

func (h *hostUnits) Job(_ context.Context, action, unit string) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.units[unit].active = action != "stop"
	return nil
}

func (h *hostUnits) DaemonReload(context.Context) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, u := range h.units {
		u.loaded, u.changed = u.installed, false
	}
	h.reloads++
	return nil
}
func (h *hostUnits) SetEnabled(context.Context, string, bool) error { return nil }
func (h *hostUnits) SetMasked(context.Context, string, bool) error  { return nil }
func (h *hostUnits) Journal(context.Context, string, int) []string  { return nil }

// SPEC §7: one manager reload for all the service's file changes. Two processes whose
// units one packages step installs or changes: the first process step reloads the
// manager, the second plans no daemon-reload of its own for the same changes, and check
// mode's plan is the real run's, whether the units are loaded (a pin move) or not found
// before the packages step (a clean install, which check mode predicts).
func TestOneManagerReloadForTwoProcessesOfOnePackagesStep(t *testing.T) {
	for _, tc := range []struct {
		name      string
		installed bool
	}{
		{"pin move: both units loaded and running", true},
		{"clean install: both units not found", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := map[string]any{"name": "web",
				"packages": []any{map[string]any{"name": "nginx", "version": "0:1.0-1.noarch"},
					map[string]any{"name": "redis", "version": "0:1.0-1.noarch"}},
				"processes": []any{map[string]any{"unit": "nginx", "settle": "0s"},
					map[string]any{"unit": "redis", "settle": "0s"}}}
			run := func(check bool) (map[string]any, *hostUnits) {
				sd := &hostUnits{units: map[string]*hostState{}}
				root := t.TempDir()
				dir := filepath.Join(root, "usr/lib/systemd/system")
				require.NoError(t, os.MkdirAll(dir, 0o755))
				install := func() {
					for _, u := range []string{"nginx.service", "redis.service"} {
						require.NoError(t, os.WriteFile(filepath.Join(dir, u), []byte("[Service]\nExecStart=/bin/true\n"), 0o644))
						s := sd.units[u]
						if s == nil {
							s = &hostState{}
							sd.units[u] = s
						}
						s.installed, s.changed = true, s.loaded
					}
				}
				if tc.installed {
					install()
					for _, s := range sd.units {
						s.loaded, s.changed, s.active = true, false, true
					}
				}
				store := &syncStore{fakePending: fakePending{records: map[string]*durable.Pending{}}}
				open := func(context.Context, string) (lifecycle.Deps, func(), error) {
					return lifecycle.Deps{Systemd: sd, Store: store, Root: root,
						Now: func() (stamp.Stamp, error) { return stamp.Stamp{BootID: "b", Mono: 10}, nil }}, func() {}, nil
				}
				pkgs := moduleOf(rpmexact.Spec(), func(_ context.Context, req *ansible.Request) (any, error) {
					if !req.CheckMode {
						install()
						store.sync.Entries = append(store.sync.Entries, durable.SyncEntry{ID: "p", Reason: "package unit files", Since: time.Unix(1, 0)})
					}
					return map[string]any{"changed": true, "package_changed": true, "unit_files_changed": true, "daemon_reload": "needed"}, nil
				})
				d := Deps{
					Packages:  predicted(fakePredict{pkg: true}, pkgs),
					Processes: Processes(open),
					Predict:   fakePredict{pkg: true},
					Pending:   &store.fakePending,
					Now:       func() (stamp.Stamp, error) { return stamp.Stamp{BootID: "b", Mono: 1}, nil },
				}
				return ansible.Call(context.Background(), Spec(), args, check, false, Handler(d)), sd
			}
			check, _ := run(true)
			require.Nil(t, check["failed"], "check mode: %v", check["msg"])
			real, sd := run(false)
			require.Nil(t, real["failed"], "real run: %v", real["msg"])
			reloads := func(plan any) (out []string) {
				for _, e := range stringsOf(plan) {
					if len(e) > len("daemon-reload") && e[len(e)-len("daemon-reload"):] == "daemon-reload" {
						out = append(out, e)
					}
				}
				return out
			}
			assert.Equal(t, []string{"process nginx.service: daemon-reload"}, reloads(check["plan"]), "check mode: one daemon-reload, by the first process; plan %v", check["plan"])
			assert.Equal(t, check["plan"], real["plan"], "check mode's plan is the real run's")
			assert.Equal(t, 1, sd.reloads, "one manager reload in the real run")
			for u, s := range sd.units {
				assert.True(t, s.active, "%s runs", u)
			}
		})
	}
}
