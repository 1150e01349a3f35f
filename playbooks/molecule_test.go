package playbooks_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/richt/services/testenv"
	"github.com/richt/services/testenv/molecule"
)

// roleProject is the role whose Molecule scenarios these tests run.
var roleProject = filepath.Join(root, "roles", "service")

// elVersion is the EL generation of the suite under test, for the scenarios'
// ${EL_VERSION:-10}: make test runs them on the generation it tests.
func elVersion() string {
	if testenv.Suite() == "bookworm" {
		return "9"
	}
	return "10"
}

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func roleRunner(t *testing.T, out *lockedBuffer) *molecule.Runner {
	t.Helper()
	if testing.Short() {
		t.Skip("end-to-end: needs Docker and ansible-playbook")
	}
	coll, err := collection()
	require.NoError(t, err)
	return &molecule.Runner{ProjectDir: roleProject, StateRoot: t.TempDir(), Out: out,
		Env: []string{"ANSIBLE_COLLECTIONS_PATH=" + coll, "ANSIBLE_PIPELINING=1"},
		Getenv: func(k string) string {
			if k == "EL_VERSION" {
				return elVersion()
			}
			return os.Getenv(k)
		}}
}

// TestRoleMoleculeScenarios runs the role's own Molecule scenarios (roles/service/molecule:
// default, and upgrade, where demo 1.0 → 2.0 must restart demo.service exactly once) with
// richt-molecule's runner, both at once, on the suite's generation, against the
// collection as built.
func TestRoleMoleculeScenarios(t *testing.T) {
	t.Parallel()
	out := &lockedBuffer{}
	r := roleRunner(t, out)
	r.Parallel = 2
	defer func() {
		if t.Failed() {
			t.Logf("richt-molecule output:\n%s", out.String())
		}
	}()
	scenarios, err := r.Scenarios()
	require.NoError(t, err)
	require.Equal(t, []string{"default", "upgrade"}, scenarios)
	for i, err := range r.RunAll(context.Background(), "test", scenarios) {
		require.NoError(t, err, "scenario %s", scenarios[i])
	}
	suite := testenv.Suite()
	for _, want := range []string{
		"[default] INFO     default ➜ create: instance (docker.io/almalinux/" + elVersion() + "-init) ← testenv's Debian " + suite + " target",
		"[default] INFO     default ➜ converge: systemd instance: demo.service started 1",
		"[default] INFO     default ➜ idempotence: Idempotence completed successfully.",
		"[upgrade] INFO     upgrade ➜ upgrade: [instance] demo.service restarted 1, as expected",
		"[upgrade] INFO     upgrade ➜ idempotence: systemd instance: no unit started, restarted, reloaded or stopped",
	} {
		require.Contains(t, out.String(), want)
	}
}

// TestRoleScenarioTimes measures the role's default scenario run by richt-molecule's
// runner against the same work as testenv's Go Scenario (create, the fixture repository,
// converge, idempotence, verify, destroy), alternating, and logs both medians. It is a
// measurement, not a check: it runs only with RICHT_MOLECULE_COMPARE=ROUNDS, under the
// machine's exclusive lock (docs/testenv.md has the figures).
func TestRoleScenarioTimes(t *testing.T) {
	rounds := 0
	if v := os.Getenv("RICHT_MOLECULE_COMPARE"); v != "" {
		for _, r := range v {
			rounds = rounds*10 + int(r-'0')
		}
	}
	if rounds < 1 {
		t.Skip("a measurement: set RICHT_MOLECULE_COMPARE=ROUNDS")
	}
	// Both sides run ansible-playbook with the same environment: pipelining on (the
	// collection's fast path) from the process, nothing from the runner's own Env.
	t.Setenv("ANSIBLE_PIPELINING", "1")
	out := &lockedBuffer{}
	r := roleRunner(t, out)
	coll, err := collection()
	require.NoError(t, err)
	dir := filepath.Join(roleProject, "molecule", "default")
	data, err := os.ReadFile(filepath.Join(dir, "molecule.yml"))
	require.NoError(t, err)
	cfg, err := molecule.Parse(strings.NewReader(molecule.ExpandEnv(string(data), func(string) string { return "" })))
	require.NoError(t, err)
	pkgs, err := cfg.Richt.TestenvPackages()
	require.NoError(t, err)
	goScenario := func() {
		repo := testenv.BuildRepo(t, pkgs...) // the runner builds its repository in create too
		testenv.Scenario{
			Name:            "role-default",
			CollectionsPath: coll,
			RolesPath:       filepath.Dir(roleProject),
			Log:             func(string, ...any) {},
			Prepare: testenv.Step{Func: func(tb testing.TB, ts []*testenv.Target) []string {
				require.NoError(tb, ts[0].AddRepo(context.Background(), "fixtures", repo))
				return nil
			}},
			Converge: testenv.Step{Playbook: filepath.Join(dir, "converge.yml"), ExtraVars: map[string]any{"demo_level": "info"}},
			Verify:   testenv.Step{Playbook: filepath.Join(dir, "verify.yml"), ExtraVars: map[string]any{"demo_level": "info"}},
		}.Run(t)
	}
	var runner, goTimes []time.Duration
	for i := 0; i < rounds; i++ {
		began := time.Now()
		require.NoError(t, r.Run(context.Background(), "test", []string{"default"}), out.String())
		runner = append(runner, time.Since(began))
		began = time.Now()
		goScenario()
		goTimes = append(goTimes, time.Since(began))
	}
	med := func(d []time.Duration) time.Duration {
		s := append([]time.Duration(nil), d...)
		sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
		return s[len(s)/2]
	}
	t.Logf("role default scenario on %s, %d rounds: richt-molecule test %v (median %v); Go Scenario %v (median %v); runner/Go = %.3f",
		testenv.Suite(), rounds, runner, med(runner).Round(time.Millisecond), goTimes, med(goTimes).Round(time.Millisecond),
		float64(med(runner))/float64(med(goTimes)))
}
