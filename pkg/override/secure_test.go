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

	"github.com/richt/services/pkg/runner"

	"github.com/richt/services/pkg/ansible"
	"github.com/richt/services/pkg/runner/runnertest"
)

func TestInsecureModesRefusedBeforeAnything(t *testing.T) {
	for mode, why := range map[any]string{
		"0666": "mode: 0666 lets group or others write the drop-in; a drop-in writable by a non-root user is a root escalation; use 0644 or stricter",
		"0646": "mode: 0646 lets group or others write",
		"0660": "mode: 0660 lets group or others write",
		"0002": "mode: 0002 lets group or others write",
		"0020": "mode: 0020 lets group or others write",
		"4644": "mode: 4644 sets the setuid bit, which a drop-in must never carry",
		"2644": "mode: 2644 sets the setgid bit",
		"1644": "mode: 1644 sets the sticky bit",
		"6666": "mode: 6666 lets group or others write the drop-in; a drop-in writable by a non-root user is a root escalation; it sets the setuid and setgid bit",
		438.0:  "mode: 0666 lets group or others write", // YAML's unquoted 0666
	} {
		root := t.TempDir()
		args, _ := json.Marshal(map[string]any{"unit": "demo", "name": "10.conf", "content": "[Service]\nEnvironment=K=s3cr3t\n", "mode": mode, "sensitive": true})
		out := ansible.Execute(context.Background(), Spec(), []string{"-"}, strings.NewReader(string(args)),
			Handler(Deps{Runner: runnertest.New(t), Sync: nil, Root: root}))
		var res map[string]any
		require.NoError(t, json.Unmarshal(out, &res))
		assert.Equal(t, true, res["failed"], "%v", mode)
		assert.Contains(t, res["msg"], why, "%v", mode)
		assert.NotContains(t, string(out), "s3cr3t")
		entries, _ := os.ReadDir(root)
		assert.Empty(t, entries, "%v: nothing written", mode)
	}
	for _, ok := range []string{"0644", "0640", "0600", "0444", "0400", "0755", "0000"} {
		_, err := Spec().Validate(map[string]any{"unit": "demo", "content": "[Service]\n", "mode": ok})
		assert.NoError(t, err, ok)
	}
	_, err := Spec().Validate(map[string]any{"unit": "demo", "content": "[Service]\n", "mode": "0664"})
	assert.ErrorContains(t, err, "write the unit file; a unit file writable")
}

func TestOwnerAndGroupMustExist(t *testing.T) {
	// The host's own NSS answers what its files lack (getent).
	d, ctx := Deps{Runner: runner.Exec{}}, context.Background()
	uid, err := d.lookupUID(ctx, "0")
	require.NoError(t, err)
	assert.Equal(t, 0, uid)
	uid, err = d.lookupUID(ctx, "root")
	require.NoError(t, err)
	assert.Equal(t, 0, uid)
	gid, err := d.lookupGID(ctx, "0")
	require.NoError(t, err)
	assert.Equal(t, 0, gid)

	for _, c := range []struct {
		lookup func(context.Context, string) (int, error)
		value  string
		msg    string
	}{
		{d.lookupUID, "3987654321", `owner: "3987654321" is a numeric id no user on the target has`},
		{d.lookupUID, "no-such-user-here", `owner: "no-such-user-here" is not a known name or a numeric id on the target`},
		{d.lookupUID, "-1", `owner: "-1" is not a known name`},
		{d.lookupGID, "3987654321", `group: "3987654321" is a numeric id no group on the target has`},
		{d.lookupGID, "no-such-group-here", `group: "no-such-group-here" is not a known name`},
		{d.lookupUID, "99999999999", `owner: "99999999999" is not a known name`}, // beyond uid_t
	} {
		_, err := c.lookup(ctx, c.value)
		assert.ErrorContains(t, err, c.msg, c.value)
	}
}

func TestOwnerWriteWarns(t *testing.T) {
	assert.Empty(t, ownerWriteWarning("root", 0, 0o644, "drop-in"))
	assert.Empty(t, ownerWriteWarning("app", 1000, 0o444, "drop-in"))
	w := ownerWriteWarning("app", 1000, 0o644, "unit file")
	assert.Contains(t, w, "owner app (uid 1000) can write the unit file (mode 0644)")
}

func TestApplyRemovesStaleTemporaryFiles(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("writes files owned by root")
	}
	root := t.TempDir()
	full := filepath.Join(root, UnitDir, "demo.service.d", "10.conf")
	require.NoError(t, os.MkdirAll(filepath.Dir(full), 0o755))
	content := []byte("[Service]\n")
	require.NoError(t, os.WriteFile(full, content, 0o644))
	stale := filepath.Join(filepath.Dir(full), ".10.conf.richt-4711")
	other := filepath.Join(filepath.Dir(full), ".20.conf.richt-4711")
	for _, p := range []string{stale, other} {
		require.NoError(t, os.WriteFile(p, []byte("[Serv"), 0o600))
	}
	w := Want{Unit: "demo.service", Path: filepath.Join(UnitDir, "demo.service.d", "10.conf"), Present: true, Content: content, Mode: 0o644}
	f, err := Observe(root, w.Path)
	require.NoError(t, err)
	assert.Equal(t, []string{".10.conf.richt-4711"}, f.Stale)
	// A converged run (nothing to do) clears them too: its only step.
	plan, err := Decide(w, f)
	require.NoError(t, err)
	assert.Equal(t, []Step{StepRemoveStale}, plan.Steps)
	assert.False(t, plan.Changed())
	_, err = Deps{Root: root}.Apply(context.Background(), plan)
	require.NoError(t, err)
	_, err = os.Lstat(stale)
	assert.True(t, os.IsNotExist(err), "stale temporary file removed")
	_, err = os.Lstat(other)
	assert.NoError(t, err, "another file's temporary file stays (its own run clears it)")
}

// A sensitive value that is not plainly false hides the content, also in the refusal of
// that value.
func TestSensitiveHidesUnlessPlainlyFalse(t *testing.T) {
	for _, v := range []any{true, "yes", " yes", "True", "maybe", 1.0, 2.0, []any{"x"}, map[string]any{}} {
		out := ansible.Execute(context.Background(), Spec(), []string{"-"}, strings.NewReader(mustJSON(t, map[string]any{
			"unit": "demo", "name": "10.conf", "content": "[Service]\nEnvironment=K=s3cr3t\n", "sensitive": v, "_ansible_check_mode": true})), Handler(Deps{}))
		assert.NotContains(t, string(out), "s3cr3t", "sensitive=%#v", v)
	}
	for _, v := range []any{false, "no", "false", "off", "0", "n", "F", 0.0} {
		assert.True(t, ansible.PlainlyFalse(v), "%#v", v)
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	data, err := json.Marshal(v)
	require.NoError(t, err)
	return string(data)
}
