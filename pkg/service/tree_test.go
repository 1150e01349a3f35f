package service

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/richt/services/pkg/ansible"
	"github.com/richt/services/pkg/durable"
	"github.com/richt/services/pkg/lifecycle"
	"github.com/richt/services/pkg/mountns"
	"github.com/richt/services/pkg/runner"
)

// fakeTree is a tree validator's run: it keeps what it was given and answers with code
// and out.
type fakeTree struct {
	code  int
	out   string
	err   error
	calls []treeCall
}

type treeCall struct {
	argv  []string
	paths []string
}

func (f *fakeTree) Run(_ context.Context, files []mountns.File, argv ...string) (runner.Result, error) {
	c := treeCall{argv: argv}
	for _, file := range files {
		c.paths = append(c.paths, file.Path)
	}
	f.calls = append(f.calls, c)
	return runner.Result{Argv: argv, ExitCode: f.code, Stderr: f.out}, f.err
}

// treeArgs is the demo service: main with a tree validator, site without one.
func treeArgs(sensitive bool) map[string]any {
	main := siteConfig("main")
	main["validate"] = "nginx -t -q -c /etc/demo/main.conf"
	site := siteConfig("site")
	site["sensitive"] = sensitive
	return map[string]any{"name": "demo", "configs": []any{main, site},
		"processes": []any{map[string]any{"unit": "demo", "reload_on": []any{"config:main", "config:site"}}}}
}

// A tree validator runs when any config changes, with every new config in place, before
// any is written; its refusal fails the task naming it, the configs that changed and its
// words (withheld when a config is sensitive), writes nothing, records and runs no
// reaction; check mode runs it too. Without a change it does not run.
func TestTreeValidators(t *testing.T) {
	cases := []struct {
		name      string
		write     bool // the configs change
		code      int
		check     bool
		sensitive bool
		runs      bool
		fails     bool
	}{
		{name: "refused: nothing written", write: true, code: 1, runs: true, fails: true},
		{name: "refused in check mode", write: true, code: 1, check: true, runs: true, fails: true},
		{name: "refused, a sensitive config: its words withheld", write: true, code: 1, sensitive: true, runs: true, fails: true},
		{name: "passed: both written", write: true, runs: true},
		{name: "passed in check mode", write: true, check: true, runs: true},
		{name: "nothing changes: it does not run", write: false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfgs := &fakeConfigs{write: c.write}
			tree := &fakeTree{code: c.code, out: `nginx: [emerg] unknown directive "lisen" in /etc/demo/site.conf:1`}
			var procCalls []map[string]any
			yes := true
			pending := &fakePending{records: map[string]*durable.Pending{}}
			d := Deps{Configs: cfgs, Tree: tree, Processes: fakeModule(lifecycle.Spec(), &yes, &procCalls), Pending: pending}
			out := ansible.Call(context.Background(), Spec(), treeArgs(c.sensitive), c.check, false, Handler(d))

			if !c.runs {
				require.Nil(t, out["failed"], out["msg"])
				assert.Empty(t, tree.calls)
				assert.NotContains(t, out["plan"], "config main: validate-tree")
				return
			}
			require.Len(t, tree.calls, 1)
			assert.Equal(t, []string{"nginx", "-t", "-q", "-c", "/etc/demo/main.conf"}, tree.calls[0].argv)
			assert.Equal(t, []string{"/etc/demo/main.conf", "/etc/demo/site.conf"}, tree.calls[0].paths, "every new config in place")
			assert.Contains(t, out["plan"], "config main: validate-tree")
			if !c.fails {
				require.Nil(t, out["failed"], out["msg"])
				if !c.check {
					assert.Equal(t, []string{"main", "site"}, cfgs.applied)
				}
				return
			}
			require.Equal(t, true, out["failed"])
			assert.Equal(t, "config main", out["failed_step"])
			msg, _ := out["msg"].(string)
			assert.Contains(t, msg, `the tree validator "nginx -t -q -c /etc/demo/main.conf"`)
			assert.Contains(t, msg, "main (/etc/demo/main.conf), site (/etc/demo/site.conf)")
			assert.Contains(t, msg, "nothing was written")
			if c.sensitive {
				assert.Contains(t, msg, "output hidden: sensitive")
				assert.NotContains(t, msg, "lisen")
			} else {
				assert.Contains(t, msg, `unknown directive "lisen"`)
			}
			assert.Empty(t, cfgs.applied, "nothing written")
			assert.Empty(t, cfgs.hooked)
			assert.Empty(t, procCalls, "no reaction")
			assert.Empty(t, pending.records, "no record")
			assert.Equal(t, false, out["changed"])
		})
	}
}

// A service whose validator has %s keeps today's rule: the tree runner is not asked.
func TestAPlaceholderValidatorIsNotATreeValidator(t *testing.T) {
	args := treeArgs(false)
	args["configs"].([]any)[0].(map[string]any)["validate"] = "nginx -t -q -c %s"
	cfgs := &fakeConfigs{write: true}
	tree := &fakeTree{code: 1}
	yes := true
	var procCalls []map[string]any
	d := Deps{Configs: cfgs, Tree: tree, Processes: fakeModule(lifecycle.Spec(), &yes, &procCalls),
		Pending: &fakePending{records: map[string]*durable.Pending{}}}
	out := ansible.Call(context.Background(), Spec(), args, false, false, Handler(d))
	require.Nil(t, out["failed"], out["msg"])
	assert.Empty(t, tree.calls)
	assert.Equal(t, []string{"main", "site"}, cfgs.applied)
}
