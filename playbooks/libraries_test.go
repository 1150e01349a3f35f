package playbooks_test

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/richt/services/testenv"
	"github.com/richt/services/testenv/fixtures"
)

// TestLibrariesExample runs the worked example playbooks/libraries.yml as its header says:
// the library at 1.0 and the services started; the library at 2.0 restarts fixd only
// (plain keeps its process, legacy is reported with a warning); the next run changes
// nothing; after an update made outside the play, --check predicts fixd's restart and
// changes nothing. The outputs are logged for docs/libraries.md.
func TestLibrariesExample(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("end-to-end: needs Docker and ansible-playbook")
	}
	tg := testenv.Start(t)
	var pkgs []testenv.Package
	for _, v := range []string{"1.0", "2.0"} {
		p, err := fixtures.LibFix(v)
		require.NoError(t, err)
		pkgs = append(pkgs, p)
	}
	require.NoError(t, tg.AddRepo(context.Background(), "libfix", testenv.Repo(t, pkgs...)))
	example := play(t, "libraries.yml", tg)
	at := func(version string) testenv.Playbook {
		p := example
		p.ExtraVars = map[string]any{"library_version": "0:" + version + "-1.noarch", "libraries_hosts": "targets"}
		return p
	}
	pids := func() (fixd, plain, legacy int) {
		return tg.Snapshot(t, "fixd.service").MainPID, tg.Snapshot(t, "plain.service").MainPID, tg.Snapshot(t, "legacy.service").MainPID
	}
	at("1.0").RunOK(t)
	fixd, plain, legacy := pids()

	r := at("2.0").RunOK(t)
	t.Logf("the update:\n%s", r.Output)
	f2, p2, l2 := pids()
	assert.NotEqual(t, fixd, f2, "fixd restarted")
	assert.Equal(t, plain, p2, "plain kept its process")
	assert.Equal(t, legacy, l2, "legacy is only reported")
	// Ansible wraps a warning's lines.
	assert.Contains(t, strings.Join(strings.Fields(r.Output), " "), "legacy.service maps files replaced since its processes started: not restarted, since its restart_on does not name libraries")
	assert.Len(t, r.ChangedTasks, 2, "the library and fixd: %v", r.ChangedTasks)

	r = at("2.0").RunOK(t)
	assert.Len(t, r.ChangedTasks, 0, "%v", r.ChangedTasks)

	// An update made elsewhere; a fleet-wide --check tells what still runs old code.
	tg.Shell(t, "dnf -q -y install-nevra libfix-0:1.0-1.noarch")
	check := at("1.0")
	check.Args = []string{"--check"}
	r = check.RunOK(t)
	t.Logf("--check after an update made elsewhere:\n%s", r.Output)
	assert.Equal(t, []string{"Service fixd, whose daemon loads the library and restarts when it is replaced (" + tg.Name() + ")"}, r.ChangedTasks)
	f3, p3, l3 := pids()
	assert.Equal(t, []int{f2, p2, l2}, []int{f3, p3, l3}, "check mode changed nothing")
}
