package override

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/richt/services/pkg/contract"
	"github.com/richt/services/pkg/durable"
	"github.com/richt/services/pkg/runner/runnertest"
)

// decideCases are every way a file can stand against a request, with the plan each gets.
var decideCases = []struct {
	name   string
	want   Want
	file   File
	op     string
	steps  []Step
	reload contract.Reload
}{
	{"absent file, present wanted", Want{Present: true, Content: []byte("[Unit]\n"), Mode: 0o644, DaemonReload: true}, File{},
		OpCreate, []Step{StepRecordReload, StepWrite, StepDaemonReload}, contract.ReloadPerformed},
	{"absent file, no reload by this task", Want{Present: true, Content: []byte("[Unit]\n"), Mode: 0o644}, File{},
		OpCreate, []Step{StepRecordReload, StepWrite}, contract.ReloadNeeded},
	{"other content", Want{Present: true, Content: []byte("[Service]\n"), Mode: 0o644, DaemonReload: true}, File{Exists: true, Content: []byte("[Unit]\n"), Mode: 0o644},
		OpUpdate, []Step{StepRecordReload, StepWrite, StepDaemonReload}, contract.ReloadPerformed},
	{"same content, other mode: no reload", Want{Present: true, Content: []byte("[Unit]\n"), Mode: 0o600, DaemonReload: true}, File{Exists: true, Content: []byte("[Unit]\n"), Mode: 0o644},
		OpAttributes, []Step{StepAttributes}, contract.ReloadNone},
	{"same content, other owner", Want{Present: true, Content: []byte("[Unit]\n"), Mode: 0o644, UID: 0}, File{Exists: true, Content: []byte("[Unit]\n"), Mode: 0o644, UID: 1000},
		OpAttributes, []Step{StepAttributes}, contract.ReloadNone},
	{"converged", Want{Present: true, Content: []byte("[Unit]\n"), Mode: 0o644, DaemonReload: true}, File{Exists: true, Content: []byte("[Unit]\n"), Mode: 0o644},
		OpNone, nil, contract.ReloadNone},
	{"converged with a killed run's leftovers", Want{Present: true, Content: []byte("[Unit]\n"), Mode: 0o644}, File{Exists: true, Content: []byte("[Unit]\n"), Mode: 0o644, Stale: []string{".a.richt-1"}},
		OpNone, []Step{StepRemoveStale}, contract.ReloadNone},
	{"remove", Want{DaemonReload: true}, File{Exists: true, Content: []byte("[Unit]\n"), Mode: 0o644, Stale: []string{".a.richt-1"}},
		OpRemove, []Step{StepRemoveStale, StepRecordReload, StepRemove, StepDaemonReload}, contract.ReloadPerformed},
	{"already absent", Want{DaemonReload: true}, File{}, OpNone, nil, contract.ReloadNone},
}

func TestDecide(t *testing.T) {
	for _, tt := range decideCases {
		t.Run(tt.name, func(t *testing.T) {
			p, err := Decide(tt.want, tt.file)
			require.NoError(t, err)
			assert.Equal(t, tt.op, p.Operation)
			assert.Equal(t, tt.steps, p.Steps)
			assert.Equal(t, tt.reload, p.Change.DaemonReload)
			assert.Equal(t, tt.op == OpCreate || tt.op == OpUpdate || tt.op == OpRemove, p.Change.UnitFilesChanged)
			assert.Equal(t, tt.op != OpNone, p.Diff != nil, "a diff exactly when the file changes")
			again, _ := Decide(tt.want, tt.file)
			assert.Equal(t, p, again, "pure: the same answer twice")
		})
	}
}

// Check mode reports the plan a real run then carries out, step for step, for every row
// of the table that can be laid out on disk.
func TestCheckModePlanIsTheAppliedPlan(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("writes files owned by root")
	}
	reload := runnertest.Call{Argv: []string{"systemctl", "daemon-reload"}}
	for _, tt := range decideCases {
		t.Run(tt.name, func(t *testing.T) {
			root := t.TempDir()
			full := filepath.Join(root, UnitDir, "demo.service.d", "10.conf")
			require.NoError(t, os.MkdirAll(filepath.Dir(full), 0o755))
			if tt.file.Exists {
				require.NoError(t, os.WriteFile(full, tt.file.Content, tt.file.Mode))
				require.NoError(t, os.Chown(full, tt.file.UID, tt.file.GID))
			}
			for _, s := range tt.file.Stale {
				require.NoError(t, os.WriteFile(filepath.Join(filepath.Dir(full), ".10.conf.richt-"+s[len(s)-1:]), []byte("x"), 0o600))
			}
			args := func(check bool) map[string]any {
				a := map[string]any{"unit": "demo", "name": "10.conf", "mode": "0" + modeString(tt.want.Mode),
					"daemon_reload": tt.want.DaemonReload, "_ansible_check_mode": check}
				if tt.want.Present {
					a["content"] = string(tt.want.Content)
				} else {
					a["state"] = "absent"
				}
				return a
			}
			if tt.want.UID != 0 || tt.want.Mode == 0 {
				t.Skip("the module's owner is root here; a mode of 0 is no request")
			}
			check := execute(t, Deps{Runner: runnertest.New(t), Sync: &rec{}, Root: root}, args(true))
			require.Nil(t, check["failed"], check["msg"])
			var calls []runnertest.Call
			if tt.want.DaemonReload && (tt.op == OpCreate || tt.op == OpUpdate || tt.op == OpRemove) {
				calls = append(calls, reload)
			}
			real := execute(t, Deps{Runner: runnertest.New(t, calls...), Sync: &rec{}, Root: root}, args(false))
			require.Nil(t, real["failed"], real["msg"])
			assert.Equal(t, check["plan"], real["plan"])
			assert.Equal(t, check["operation"], real["operation"])
			if real["daemon_reload"] == "performed" {
				assert.Equal(t, "planned", check["daemon_reload"], "check mode does not say it reloaded")
			} else {
				assert.Equal(t, check["daemon_reload"], real["daemon_reload"])
			}
		})
	}
}

func modeString(m os.FileMode) string {
	const digits = "01234567"
	return string([]byte{digits[m>>6&7], digits[m>>3&7], digits[m&7]})
}

// A write that never replaced the file is no change: the reload recorded ahead of it is
// withdrawn, so no later run reloads the manager for nothing.
func TestAFailedWriteWithdrawsItsReload(t *testing.T) {
	root := t.TempDir()
	w := Want{Unit: "demo.service", Path: filepath.Join(UnitDir, "demo.service.d", "10.conf"), Present: true,
		Content: []byte("[Service]\n"), Mode: 0o644, UID: -1, GID: -1, DaemonReload: true}
	f, err := Observe(root, w.Path)
	require.NoError(t, err)
	plan, err := Decide(w, f)
	require.NoError(t, err)
	// Between the decision and the write, the drop-in directory's place is taken by a file.
	require.NoError(t, os.MkdirAll(filepath.Join(root, UnitDir), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(root, UnitDir, "demo.service.d"), []byte("x"), 0o644))
	r := &rec{}
	res := &Result{Operation: plan.Operation, Changed: plan.Changed(), Change: plan.Change}
	err = Deps{Runner: runnertest.New(t), Sync: r, Root: root}.carry(context.Background(), plan, res)
	require.Error(t, err)
	assert.False(t, res.Changed)
	assert.False(t, res.UnitFilesChanged)
	assert.Equal(t, contract.ReloadNone, res.DaemonReload)
	assert.Equal(t, 1, r.due, "recorded before the write")
	assert.Equal(t, 1, r.removed, "withdrawn after it failed")
}

func TestDecideChecksTheDirectories(t *testing.T) {
	unitDir := Dir{Path: UnitDir, Exists: true, Mode: os.ModeDir | 0o755}
	dropIn := func(mode os.FileMode, uid int) Dir {
		return Dir{Path: UnitDir + "/demo.service.d", Exists: true, Mode: mode, UID: uid, DropIn: true}
	}
	want := Want{Present: true, Content: []byte("[Service]\n"), Mode: 0o644, DaemonReload: true}
	cases := []struct {
		name  string
		dirs  []Dir
		steps []Step
		err   string
	}{
		{"root's 0755 drop-in directory: nothing extra", []Dir{unitDir, dropIn(0o755, 0)}, []Step{StepRecordReload, StepWrite, StepDaemonReload}, ""},
		{"0777 drop-in directory: secured first", []Dir{unitDir, dropIn(0o777, 0)}, []Step{StepSecureDir, StepRecordReload, StepWrite, StepDaemonReload}, ""},
		{"drop-in directory of another user: secured first", []Dir{unitDir, dropIn(0o755, 1000)}, []Step{StepSecureDir, StepRecordReload, StepWrite, StepDaemonReload}, ""},
		{"drop-in directory linked out of the unit directory: refused", []Dir{unitDir, {Path: UnitDir + "/demo.service.d", Outside: "/tmp/elsewhere", DropIn: true}}, nil,
			"/etc/systemd/system/demo.service.d is a symbolic link to /tmp/elsewhere, outside /etc/systemd/system"},
		{"unit directory writable by others: refused", []Dir{{Path: UnitDir, Exists: true, Mode: 0o777}}, nil,
			"/etc/systemd/system is writable by group or others (mode 0777)"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p, err := Decide(want, File{Dirs: c.dirs})
			if c.err != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), c.err)
				assert.Contains(t, err.Error(), "nothing was written")
				return
			}
			require.NoError(t, err)
			assert.Equal(t, c.steps, p.Steps)
			assert.True(t, p.Changed())
		})
	}
	// A converged drop-in in a directory others can write is still a change: the repair.
	p, err := Decide(want, File{Exists: true, Content: want.Content, Mode: 0o644, Dirs: []Dir{unitDir, dropIn(0o777, 0)}})
	require.NoError(t, err)
	assert.Equal(t, []Step{StepSecureDir}, p.Steps)
	assert.True(t, p.Changed())
	assert.Equal(t, OpNone, p.Operation)
}

// strictSync is a SyncRecorder that fails the test on a call its plan does not name: a
// record only for record-reload-due, a settling only after daemon-reload.
type strictSync struct {
	t    *testing.T
	plan Plan
	rec
}

func (s *strictSync) MarkManagerSyncDue(ctx context.Context, reason string) (string, error) {
	if !s.plan.Has(StepRecordReload) {
		s.t.Errorf("a manager reload recorded (%s), but the plan %v has no %s", reason, s.plan.Steps, StepRecordReload)
	}
	return s.rec.MarkManagerSyncDue(ctx, reason)
}

func (s *strictSync) ClearManagerSync(ctx context.Context, seen durable.Sync) error {
	if !s.plan.Has(StepDaemonReload) {
		s.t.Errorf("sync records settled, but the plan %v has no %s", s.plan.Steps, StepDaemonReload)
	}
	return s.rec.ClearManagerSync(ctx, seen)
}

// For every row of the table, Apply carries out the plan's steps and nothing else: the
// runner expects daemon-reload only when the plan names it, the sync recorder fails on a
// record the plan does not name, and the file ends as the plan says.
func TestApplyCarriesOutThePlanOnly(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("writes files owned by root")
	}
	for _, tt := range decideCases {
		t.Run(tt.name, func(t *testing.T) {
			root := t.TempDir()
			w := tt.want
			w.Unit, w.Path = "demo.service", filepath.Join(UnitDir, "demo.service.d", "10.conf")
			full := filepath.Join(root, w.Path)
			require.NoError(t, os.MkdirAll(filepath.Dir(full), 0o755))
			if tt.file.Exists {
				require.NoError(t, os.WriteFile(full, tt.file.Content, tt.file.Mode))
				require.NoError(t, os.Chmod(full, tt.file.Mode))
				require.NoError(t, os.Chown(full, tt.file.UID, tt.file.GID))
			}
			for _, s := range tt.file.Stale {
				require.NoError(t, os.WriteFile(filepath.Join(filepath.Dir(full), ".10.conf.richt-"+s[len(s)-1:]), []byte("x"), 0o600))
			}
			f, err := Observe(root, w.Path)
			require.NoError(t, err)
			plan, err := Decide(w, f)
			require.NoError(t, err)
			require.Equal(t, tt.steps, plan.Steps, "the row's plan")
			var calls []runnertest.Call
			if plan.Has(StepDaemonReload) {
				calls = append(calls, runnertest.Call{Argv: []string{"systemctl", "daemon-reload"}})
			}
			sync := &strictSync{t: t, plan: plan}
			res, err := Deps{Runner: runnertest.New(t, calls...), Sync: sync, Root: root}.Apply(context.Background(), plan)
			require.NoError(t, err)
			assert.Equal(t, plan.Steps, res.Plan, "the plan carried out is the one given")
			assert.Equal(t, plan.Changed(), res.Changed)
			assert.Equal(t, btoi(plan.Has(StepRecordReload)), sync.due)

			after, err := Observe(root, w.Path)
			require.NoError(t, err)
			assert.Empty(t, after.Stale, "no leftovers")
			assert.Equal(t, w.Present, after.Exists)
			if w.Present {
				assert.Equal(t, w.Content, after.Content)
				assert.Equal(t, w.Mode, after.Mode)
			}
			again, err := Decide(w, after)
			require.NoError(t, err)
			assert.Empty(t, again.Steps, "converged after the plan's steps")
		})
	}
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// A plan held while another run wrote the file (the service module plans every step
// before it applies any) is decided again under the unit's lock from the file as it is:
// the other run's file is updated, not taken for the missing one the plan saw, and the
// result reports the plan carried out. The lock is held while Apply reads and writes.
func TestApplyDecidesAgainWhenTheFileMovedSinceThePlan(t *testing.T) {
	root := t.TempDir()
	args := map[string]any{"unit": "demo", "name": "10.conf", "content": "[Service]\nNice=5\n", "daemon_reload": false}
	_, parsed, err := Spec().ValidateParse(args)
	require.NoError(t, err)
	task := parsed.(Task)
	locked := 0
	d := Deps{Runner: runnertest.New(t), Sync: &rec{}, Root: root, Lock: func(context.Context, string) (func(), error) {
		locked++
		return func() { locked-- }, nil
	}}
	// owner and group are root: no lookup is asked of the runner.
	plan, err := d.Plan(context.Background(), task)
	require.NoError(t, err)
	require.Equal(t, OpCreate, plan.Operation)
	full := filepath.Join(root, task.Path)
	require.NoError(t, os.MkdirAll(filepath.Dir(full), 0o755))
	require.NoError(t, os.WriteFile(full, []byte("[Service]\nNice=1\n"), 0o644))

	res, err := d.Apply(context.Background(), plan)
	require.NoError(t, err)
	assert.Equal(t, OpUpdate, res.Operation, "decided again from the file another run wrote")
	assert.Equal(t, []Step{StepRecordReload, StepWrite}, res.Plan)
	got, err := os.ReadFile(full)
	require.NoError(t, err)
	assert.Equal(t, "[Service]\nNice=5\n", string(got))
	assert.Zero(t, locked, "the lock is given back")
}
