package rpmexact

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/richt/services/pkg/runner/runnertest"
)

// A pin move whose installed build ships a unit file: check mode plans the manager reload
// the real transaction leaves due, as the real run reports it (unit_files_changed,
// daemon_reload: needed), and says so in its plan.
func TestCheckModePredictsTheUnitFileChange(t *testing.T) {
	calls := []runnertest.Call{
		{Argv: rpmQ("demo"), Stdout: v1Out},
		owns([]string{"demo"}, "/usr/bin/demo", "/usr/lib/systemd/system/demo.service"),
		{Argv: []string{"dnf", "--version"}, Stdout: "4.23.0\n"},
		assumeno,
	}
	res := execute(t, runnertest.New(t, calls...), &recorder{}, map[string]any{"name": "demo", "version": "0:2.0-1.noarch", "_ansible_check_mode": true})
	require.Nil(t, res["failed"], res["msg"])
	assert.Equal(t, true, res["package_changed"])
	assert.Equal(t, true, res["unit_files_changed"])
	assert.Equal(t, "needed", res["daemon_reload"])
	assert.Equal(t, []any{"install-nevra demo-0:2.0-1.noarch", "record-reload-due"}, res["plan"])
}
