package ee

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestDataDirWrite(t *testing.T) {
	dir := t.TempDir()
	d := DataDir{
		Project:   map[string][]byte{"demo.yml": []byte("- hosts: all\n"), "vars/demo_service.yml": []byte("x: 1\n")},
		Inventory: map[string]any{"all": map[string]any{"hosts": map[string]any{"t0": map[string]any{"ansible_host": "172.17.0.2"}}}},
		SSHKey:    []byte("KEY\n"),
		EnvVars:   map[string]string{"ANSIBLE_PIPELINING": "1"},
		ExtraVars: map[string]any{"demo_level": "debug"},
		Cmdline:   "--check --diff",
	}
	require.NoError(t, d.Write(dir))
	read := func(rel string) string {
		data, err := os.ReadFile(filepath.Join(dir, rel))
		require.NoError(t, err)
		return string(data)
	}
	assert.Equal(t, "- hosts: all\n", read("project/demo.yml"))
	assert.Equal(t, "x: 1\n", read("project/vars/demo_service.yml"))
	assert.JSONEq(t, `{"all": {"hosts": {"t0": {"ansible_host": "172.17.0.2"}}}}`, read("inventory/hosts.json"))
	assert.JSONEq(t, `{"ANSIBLE_PIPELINING": "1"}`, read("env/envvars"))
	assert.JSONEq(t, `{"demo_level": "debug"}`, read("env/extravars"))
	assert.Equal(t, "--check --diff", read("env/cmdline"))
	fi, err := os.Stat(filepath.Join(dir, "env/ssh_key"))
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), fi.Mode().Perm(), "the key is the job's secret")

	for name, bad := range map[string]DataDir{
		"no project":         {},
		"escape the project": {Project: map[string][]byte{"../x.yml": nil}},
		"absolute path":      {Project: map[string][]byte{"/etc/x.yml": nil}},
	} {
		assert.Error(t, bad.Write(t.TempDir()), name)
	}
}

func TestReadArtifacts(t *testing.T) {
	dir := t.TempDir()
	write := func(rel, content string) {
		p := filepath.Join(dir, rel)
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(content), 0o600))
	}
	write("status", "successful\n")
	write("rc", "0\n")
	// Written in counter order 10, 2, 3: the file names do not sort by counter.
	write("job_events/10-c.json", `{"event": "playbook_on_stats", "counter": 10, "uuid": "c", "stdout": "PLAY RECAP",
		"event_data": {"ok": {"t0": 2, "t1": 2}, "changed": {"t0": 1}, "failures": {}, "dark": {}, "skipped": {"t1": 1}}}`)
	write("job_events/2-a.json", `{"event": "runner_on_start", "counter": 2, "uuid": "a",
		"event_data": {"host": "t0", "task": "Service demo", "task_action": "richt.services.service"}}`)
	write("job_events/3-b.json", `{"event": "runner_on_ok", "counter": 3, "uuid": "b", "stdout": "changed: [t0]",
		"event_data": {"host": "t0", "task": "Service demo", "task_action": "richt.services.service", "res": {"changed": true, "processes": []}}}`)
	res, err := ReadArtifacts(dir)
	require.NoError(t, err)
	assert.Equal(t, "successful", res.Status)
	assert.Equal(t, 0, res.RC)
	require.Len(t, res.Events, 3)
	assert.Equal(t, []int{2, 3, 10}, []int{res.Events[0].Counter, res.Events[1].Counter, res.Events[2].Counter})
	stats, err := res.Stats()
	require.NoError(t, err)
	assert.Equal(t, map[string]HostStats{"t0": {Ok: 2, Changed: 1}, "t1": {Ok: 2, Skipped: 1}}, stats)
	results := res.TaskResults("richt.services.service")
	require.Len(t, results, 1, "the start event is not a result")
	assert.Equal(t, "t0", results[0].Host())
	assert.Equal(t, "Service demo", results[0].Task())
	assert.Equal(t, true, results[0].Res()["changed"])
	assert.Equal(t, "changed: [t0]\nPLAY RECAP\n", res.Stdout())

	_, err = ReadArtifacts(t.TempDir())
	assert.ErrorContains(t, err, "artifacts")
	_, err = (Result{}).Stats()
	assert.ErrorContains(t, err, "no playbook_on_stats event")
}
