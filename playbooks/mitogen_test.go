package playbooks_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/richt/services/testenv"
)

// mitogenStrategy is where Debian's ansible-mitogen (0.3.3, ansible-core ≤ 2.14) keeps its
// strategy plugins.
const mitogenStrategy = "/usr/lib/python3/dist-packages/ansible_mitogen/plugins/strategy"

// Under Mitogen (mitogen_linear over SSH) the modules run through Mitogen's own channel:
// the fast path steps aside instead of failing (Mitogen forbids the pipelining query it
// makes), and the demo converges, is idempotent, reports nothing in check mode once
// converged, and keeps no_log secrets out of the output.
func TestUnderMitogen(t *testing.T) {
	t.Parallel()
	tg := target(t)
	mitogen := func(p string, args ...string) testenv.PlaybookResult {
		pb := play(t, p, tg)
		pb.Connection = "ssh"
		pb.Env = []string{"ANSIBLE_PIPELINING=1", "ANSIBLE_STRATEGY_PLUGINS=" + mitogenStrategy, "ANSIBLE_STRATEGY=mitogen_linear"}
		pb.Args = args
		return pb.RunOK(t)
	}
	r := mitogen("demo.yml")
	assert.Positive(t, r.Changed(), "converged from clean")
	assert.NotContains(t, r.Output, "should never be called")
	assert.Equal(t, "active", tg.Snapshot(t, "demo.service").ActiveState)
	assert.Equal(t, 0, mitogen("demo.yml").Changed(), "idempotent")
	assert.Equal(t, 0, mitogen("demo.yml", "--check", "--diff").Changed(), "check mode on a converged host")

	// The fast path steps aside, and says why (at -vvv).
	assert.Contains(t, mitogen("demo.yml", "-vvv").Output, "fast path not used for rpm_exact: Mitogen runs the module")

	// no_log holds in what ansible-playbook prints. Not at -vvv: there Mitogen's own debug
	// log prints every module call's arguments, secrets included, for any module (Mitogen's
	// behaviour, documented in docs/benchmarks.md), so this checks --diff at the default
	// verbosity.
	secret := mitogen(filepath.Join(root, "playbooks/testdata/secret.yml"), "--diff")
	if i := strings.Index(secret.Output, "s3cr3t"); i >= 0 {
		t.Errorf("the secret is in the output: …%s…", secret.Output[max(0, i-300):min(len(secret.Output), i+100)])
	}
	assert.Contains(t, secret.Output, "content is not a valid unit file: line 2")
}
