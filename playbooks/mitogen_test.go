package playbooks_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/richt/services/testenv"
)

// mitogenPlay runs a playbook on tg under Mitogen (mitogen_linear over SSH) and fails the
// test unless it succeeds.
func mitogenPlay(t *testing.T, tg *testenv.Target, p string, args ...string) testenv.PlaybookResult {
	t.Helper()
	pb := play(t, p, tg)
	pb.Connection = "ssh"
	pb.Env = []string{"ANSIBLE_PIPELINING=1", "ANSIBLE_STRATEGY_PLUGINS=" + testenv.MitogenStrategyPlugins, "ANSIBLE_STRATEGY=mitogen_linear"}
	pb.Args = args
	return pb.RunOK(t)
}

// Under Mitogen (mitogen_linear over SSH) the modules take the fast path through Mitogen's
// own channel (its exec_command hands the cached binary its arguments on stdin; Mitogen
// forbids the pipelining query the fast path makes elsewhere), and the demo converges, is
// idempotent, reports nothing in check mode once converged, and keeps no_log secrets out
// of the output. TestUnderMitogenBecome is the same channel under become, on a target of
// its own, so that the two halves run side by side.
func TestUnderMitogen(t *testing.T) {
	t.Parallel()
	tg := target(t)
	coll, err := collection()
	require.NoError(t, err)
	mitogen := func(p string, args ...string) testenv.PlaybookResult {
		t.Helper()
		return mitogenPlay(t, tg, p, args...)
	}
	tg.MustExec(t, "rm", "-rf", cache)
	r := mitogen("demo.yml", "-vvv")
	assert.Positive(t, r.Changed(), "converged from clean")
	// testenv's inventory turns Mitogen's SSH compression off too (mitogen_ssh_compression).
	assert.Contains(t, r.Output, "command line for Connection(None): ssh ")
	assert.NotContains(t, r.Output, "Compression yes")
	assert.NotContains(t, r.Output, "should never be called")
	assert.Equal(t, "active", tg.Snapshot(t, "demo.service").ActiveState)
	hash := buildHash(t, coll)
	assert.Contains(t, fastLog(r.Output), "installed "+buildFile+"-"+hash[:12], "the fast path installed the build under Mitogen")
	// The role is one task of the service module, which runs the other three in process.
	assert.Contains(t, fastLog(r.Output), "ran cached service")
	again := mitogen("demo.yml", "-vvv")
	assert.Equal(t, 0, again.Changed(), "idempotent")
	for _, l := range fastLog(again.Output) {
		assert.True(t, strings.HasPrefix(l, "ran cached "), "a converged run under Mitogen only runs cached binaries: %q", l)
	}
	assert.Equal(t, 0, mitogen("demo.yml", "--check", "--diff").Changed(), "check mode on a converged host")
	// The opt-out still gives Ansible's normal path (Mitogen's own way to run a binary).
	assert.Contains(t, fastLog(mitogen("demo.yml", "-vvv", "-e", "richt_services_fast_path=false").Output),
		"not used for service: richt_services_fast_path is false")

	// no_log holds in what ansible-playbook prints. Not at -vvv: there Mitogen's own debug
	// log prints what every call carries, the arguments a module gets on stdin included,
	// secrets too (Mitogen's behaviour, documented in docs/fastpath.md), so this checks
	// --diff at the default verbosity.
	secret := mitogen(filepath.Join(root, "playbooks/testdata/secret.yml"), "--diff")
	if i := strings.Index(secret.Output, "s3cr3t"); i >= 0 {
		t.Errorf("the secret is in the output: …%s…", secret.Output[max(0, i-300):min(len(secret.Output), i+100)])
	}
	assert.Contains(t, secret.Output, "content is not a valid unit file: line 2")
}

// Under Mitogen, become through its sudo: the fast path caches the binary in the
// effective user's home (root's), not the login user's.
func TestUnderMitogenBecome(t *testing.T) {
	t.Parallel()
	tg := target(t)
	coll, err := collection()
	require.NoError(t, err)
	hash := buildHash(t, coll)
	sshSudoer(t, tg, "deploy")
	become := mitogenPlay(t, tg, "testdata/fastpath.yml", "-vvv", "-e", "ansible_user=deploy", "-e", "ansible_become=true", "-e", "ansible_become_method=sudo")
	assert.Equal(t, []string{"installed " + buildFile + "-" + hash[:12], "ran cached systemd_lifecycle", "ran cached systemd_lifecycle"}, fastLog(become.Output))
	assert.Regexp(t, `^regular file 700 root$`, strings.TrimSpace(tg.MustExec(t, "stat", "-c", "%F %a %U", cache+"/"+buildFile+"-"+hash)))
	res, err := tg.Exec(t.Context(), "test", "-e", "/home/deploy/.cache/richt.services")
	require.NoError(t, err)
	assert.NotZero(t, res.ExitCode, "nothing in the login user's home")
}
