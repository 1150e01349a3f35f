package rpmexact

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// superviseFixture is a transactions directory with one transaction's request (whose
// command leaves a file behind when it runs) and a lock file standing for the inherited
// transaction lock.
type superviseFixture struct {
	root, dir, ran string
	held           *os.File
}

func newSuperviseFixture(t *testing.T, root, dir string) *superviseFixture {
	t.Helper()
	require.NoError(t, os.MkdirAll(dir, 0o700))
	require.NoError(t, os.Chmod(root, 0o700))
	require.NoError(t, os.Chmod(filepath.Dir(dir), 0o700))
	ran := filepath.Join(t.TempDir(), "ran")
	req, err := json.Marshal(request{Transaction: Transaction{Argv: []string{"/bin/sh", "-c", "touch " + ran}, Names: []string{"demo"}}})
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, requestFile), req, 0o600))
	held, err := os.OpenFile(filepath.Join(t.TempDir(), "transaction.lock"), os.O_RDWR|os.O_CREATE, 0o600)
	require.NoError(t, err)
	t.Cleanup(func() { held.Close() })
	return &superviseFixture{root: root, dir: dir, ran: ran, held: held}
}

// The supervisor's entry runs requests of the transactions directory only: a directory
// elsewhere is refused, however well it is protected, and nothing is written there.
func TestSupervisorRunsOnlyRequestsOfTheTransactionsDirectory(t *testing.T) {
	base := t.TempDir()
	root := filepath.Join(base, "transactions")
	require.NoError(t, os.Mkdir(root, 0o700))
	for _, dir := range []string{
		filepath.Join(base, "elsewhere", "000000000001-x-1"), // a root-owned 0700 directory of its own
		filepath.Join(root, "000000000001-x-1", "nested"),    // below a transaction, not one
	} {
		t.Run(strings.TrimPrefix(dir, base), func(t *testing.T) {
			f := newSuperviseFixture(t, root, dir)
			assert.Equal(t, 2, supervise(f.root, f.dir, f.held, supervisorDeps{}))
			assert.NoFileExists(t, f.ran, "the request never ran")
			assert.NoFileExists(t, filepath.Join(f.dir, outcomeFile), "nothing written there")
		})
	}
}

// A request runs once: one that has an outcome, or whose command was started already
// (its output files exist), is refused, and its records stay as they are.
func TestSupervisorRunsARequestOnce(t *testing.T) {
	for _, c := range []struct{ name, file, content string }{
		{"it has an outcome", outcomeFile, `{"done":true,"rc":0}`},
		{"its command was started", stdoutFile, "Installing demo\n"},
	} {
		t.Run(c.name, func(t *testing.T) {
			root := t.TempDir()
			f := newSuperviseFixture(t, root, filepath.Join(root, "000000000001-x-1"))
			require.NoError(t, os.WriteFile(filepath.Join(f.dir, c.file), []byte(c.content), 0o600))
			assert.Equal(t, 2, supervise(f.root, f.dir, f.held, supervisorDeps{}))
			assert.NoFileExists(t, f.ran, "the request did not run again")
			got, err := os.ReadFile(filepath.Join(f.dir, c.file))
			require.NoError(t, err)
			assert.Equal(t, c.content, string(got), "its record is left as it was")
			if c.file != outcomeFile {
				assert.NoFileExists(t, filepath.Join(f.dir, outcomeFile))
			}
		})
	}
}

// DNF and its scriptlets do not see the supervisor's entry: a scriptlet that starts the
// module (or anything that looks at the variable) is no supervisor.
func TestDNFDoesNotInheritTheSupervisorsEntry(t *testing.T) {
	dir := t.TempDir()
	t.Setenv(SuperviseEnv, dir)
	held, err := os.OpenFile(filepath.Join(t.TempDir(), "lock"), os.O_RDWR|os.O_CREATE, 0o600)
	require.NoError(t, err)
	defer held.Close()
	p, err := startLogged(dir, held, []string{"/bin/sh", "-c", "env"}, "")
	require.NoError(t, err)
	res, err := p.wait()
	require.NoError(t, err)
	require.Equal(t, 0, res.ExitCode)
	out, err := os.ReadFile(filepath.Join(dir, stdoutFile))
	require.NoError(t, err)
	assert.Contains(t, string(out), "LC_ALL=C.UTF-8", "the command's environment")
	assert.NotContains(t, string(out), SuperviseEnv)
}
