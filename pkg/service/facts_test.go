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
	"github.com/richt/services/pkg/override"
	"github.com/richt/services/pkg/rpmexact"
	"github.com/richt/services/pkg/stamp"
	"github.com/richt/services/pkg/systemd"
)

// hostUnit is a systemd with one unit: not found until its package is installed and the
// manager reloaded, then loaded (reload-capable); a start starts it. It counts the
// manager reloads it was sent.
type hostUnit struct {
	mu                        sync.Mutex
	installed, loaded, active bool
	reloads                   int
}

func (u *hostUnit) Show(_ context.Context, unit string) (systemd.Props, error) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if !u.loaded {
		return systemd.Props{ID: unit, LoadState: "not-found", ActiveState: "inactive", SubState: "dead"}, nil
	}
	state, sub := "inactive", "dead"
	if u.active {
		state, sub = "active", "running"
	}
	return systemd.Props{ID: unit, LoadState: "loaded", ActiveState: state, SubState: sub, UnitFileState: "disabled",
		InvocationID: "one", CanReload: true, ActiveEnterMono: 5, FragmentPath: "/usr/lib/systemd/system/demo.service"}, nil
}

func (u *hostUnit) Job(_ context.Context, action, _ string) error {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.active = action != "stop"
	return nil
}

func (u *hostUnit) DaemonReload(context.Context) error {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.loaded, u.reloads = u.installed, u.reloads+1
	return nil
}
func (u *hostUnit) SetEnabled(context.Context, string, bool) error { return nil }
func (u *hostUnit) SetMasked(context.Context, string, bool) error  { return nil }
func (u *hostUnit) Journal(context.Context, string, int) []string  { return nil }

// syncStore is a durable store whose manager-sync record a unit-file step of a real run
// writes (as unit_override and rpm_exact do), and a daemon-reload clears.
type syncStore struct {
	fakePending
	sync durable.Sync
}

func (s *syncStore) ManagerSync() (durable.Sync, error) { return s.sync, nil }
func (s *syncStore) ClearManagerSync(context.Context, durable.Sync) error {
	s.sync = durable.Sync{}
	return nil
}

// A process that names its reactions still gets the facts systemd_lifecycle plans from —
// a package changed (the unit it installs is predicted), a unit file or drop-in of its
// unit changed (the manager is reloaded) — without a reaction it did not name; and check
// mode's plan is the real run's.
func TestAByNameProcessKeepsThePackageAndUnitFileFacts(t *testing.T) {
	dropin := map[string]any{"unit": "demo", "name": "20.conf", "content": "[Service]\n"}
	cases := []struct {
		name      string
		installed bool // demo is installed, loaded and running before the run
		pkg       bool // the packages step installs demo
		dropin    bool // the drop-in step changes demo's drop-in
		process   map[string]any
		wantPlan  []any
	}{
		{name: "a clean host, reload_on a config: the unit the package installs is predicted",
			pkg: true, process: map[string]any{"unit": "demo", "reload_on": []any{"config:site"}, "settle": "0s"},
			wantPlan: []any{"packages: install-nevra demo-0:1.0-1.noarch",
				"record-pending demo.service reload", "config site: write",
				"process demo.service: daemon-reload", "process demo.service: stamp-pending", "process demo.service: start",
				"process demo.service: clear-pending"}},
		{name: "installed: its own drop-in changed, not named: the manager reloaded, no reaction",
			installed: true, dropin: true,
			process: map[string]any{"unit": "demo", "restart_on": []any{"package:demo"}},
			wantPlan: []any{"config site: write", "file demo.service/20.conf: write",
				"process demo.service: daemon-reload"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			args := with(with(with(demoArgs(), "configs", []any{siteConfig("site")}), "processes", []any{c.process}),
				"dropins", []any{dropin})
			run := func(check bool) (map[string]any, *hostUnit) {
				sd := &hostUnit{loaded: c.installed, active: c.installed}
				// The unit file the package installs, reload-capable.
				root := t.TempDir()
				install := func() {
					dir := filepath.Join(root, "usr/lib/systemd/system")
					require.NoError(t, os.MkdirAll(dir, 0o755))
					require.NoError(t, os.WriteFile(filepath.Join(dir, "demo.service"), []byte("[Service]\nExecStart=/bin/demo\nExecReload=/bin/kill -HUP $MAINPID\n"), 0o644))
					sd.installed = true
				}
				if c.installed {
					install()
				}
				store := &syncStore{fakePending: fakePending{records: map[string]*durable.Pending{}}}
				open := func(context.Context, string) (lifecycle.Deps, func(), error) {
					return lifecycle.Deps{Systemd: sd, Store: store, Root: root,
						Now: func() (stamp.Stamp, error) { return stamp.Stamp{BootID: "b", Mono: 10}, nil }}, func() {}, nil
				}
				pkgs := moduleOf(rpmexact.Spec(), func(_ context.Context, req *ansible.Request) (any, error) {
					if c.pkg && !req.CheckMode {
						install()
						store.sync.Entries = append(store.sync.Entries, durable.SyncEntry{ID: "p", Reason: "package unit files", Since: time.Unix(1, 0)})
					}
					return map[string]any{"changed": c.pkg, "package_changed": c.pkg, "unit_files_changed": c.pkg, "daemon_reload": "needed"}, nil
				})
				files := moduleOf(override.Spec(), func(_ context.Context, req *ansible.Request) (any, error) {
					if c.dropin && !req.CheckMode {
						store.sync.Entries = append(store.sync.Entries, durable.SyncEntry{ID: "d", Reason: "drop-in demo.service/20.conf", Since: time.Unix(1, 0)})
					}
					return map[string]any{"changed": c.dropin, "unit_files_changed": c.dropin, "daemon_reload": "needed"}, nil
				})
				d := Deps{
					Packages:  predicted(fakePredict{pkg: c.pkg}, pkgs),
					Processes: Processes(open),
					Configs:   &fakeConfigs{write: true},
					Predict:   fakePredict{pkg: c.pkg},
					Pending:   &store.fakePending,
					Now:       func() (stamp.Stamp, error) { return stamp.Stamp{BootID: "b", Mono: 1}, nil },
				}
				d.Files = Module{Spec: files.Spec, Plan: func(ctx context.Context, req *ansible.Request) Step {
					st := files.Plan(ctx, req).(*fakeStep)
					if c.dropin {
						st.names, st.changes, st.units = []string{"write"}, true, true
					}
					return st
				}}
				out := ansible.Call(context.Background(), Spec(), args, check, false, Handler(d))
				return out, sd
			}
			check, _ := run(true)
			require.Nil(t, check["failed"], "check mode: %v", check["msg"])
			real, sd := run(false)
			require.Nil(t, real["failed"], "real run: %v", real["msg"])
			assert.Equal(t, c.wantPlan, check["plan"])
			assert.Equal(t, check["plan"], real["plan"], "check mode's plan is the real run's")
			assert.True(t, sd.active, "demo runs")
			assert.Equal(t, 1, sd.reloads, "one manager reload")
		})
	}
}
