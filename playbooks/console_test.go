package playbooks_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

// summaryLines are the lines the collection's action plugin printed for host: what each
// run did to each process, as the default callback shows them without -v.
func summaryLines(out, host string) []string {
	var lines []string
	for _, l := range strings.Split(out, "\n") {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(l), "["+host+"] "); ok {
			lines = append(lines, rest)
		}
	}
	return lines
}

// keepForDocs writes a run's console output to $RICHT_DOC_OUTPUT/name when that is set:
// docs/from-builtins.md quotes real output, and this is where it comes from.
func keepForDocs(t *testing.T, name, out string) {
	dir := os.Getenv("RICHT_DOC_OUTPUT")
	if dir == "" {
		return
	}
	if err := os.WriteFile(filepath.Join(dir, name), []byte(out), 0o644); err != nil {
		t.Errorf("keep the output for the docs: %v", err)
	}
}

// The console of a plain `ansible-playbook` (default callback, no -v) says what happened
// to the process and why: a reload, a restart, nothing; in check mode what would. No
// register, no debug task, no -v.
func TestConsoleSaysWhatHappened(t *testing.T) {
	t.Parallel()
	tg := target(t)
	demo := play(t, "demo.yml", tg)
	host := tg.Name()
	n := 0
	run := func(t *testing.T, check bool, vars map[string]any) []string {
		t.Helper()
		p := demo
		p.ExtraVars = vars
		if check {
			p.Args = []string{"--check"}
		}
		r := p.RunOK(t)
		n++
		keepForDocs(t, fmt.Sprintf("%d-%s.txt", n, strings.ReplaceAll(t.Name(), "/", "-")), r.Output)
		assert.NotContains(t, r.Output, "from an earlier run", "every record of this run is this run's")
		return summaryLines(r.Output, host)
	}
	v1 := map[string]any{"demo_version": "0:1.0-1.noarch", "demo_level": "info"}
	assert.Contains(t, run(t, false, v1), "demo.service: enable, daemon-reload, start (was stopped)", "the first run starts it")

	t.Run("no-op", func(t *testing.T) {
		assert.Equal(t, []string{"demo.service: nothing (converged)"}, run(t, true, v1), "check mode")
		assert.Equal(t, []string{"demo.service: nothing (converged)"}, run(t, false, v1))
	})
	t.Run("reload", func(t *testing.T) {
		v := map[string]any{"demo_version": "0:1.0-1.noarch", "demo_level": "debug"}
		assert.Equal(t, []string{"demo.service: would daemon-reload, reload (dropin:demo.service/20-level.conf)"}, run(t, true, v), "check mode")
		assert.Equal(t, []string{"demo.service: daemon-reload, reload (dropin:demo.service/20-level.conf)"}, run(t, false, v))
	})
	t.Run("restart", func(t *testing.T) {
		v := map[string]any{"demo_version": "0:2.0-1.noarch", "demo_level": "debug"}
		check := run(t, true, v)
		assert.Contains(t, check, "packages: would change demo 1.0-1 → 2.0-1")
		assert.Contains(t, strings.Join(check, "\n"), "demo.service: would daemon-reload, restart (package:demo 1.0-1 → 2.0-1)", "check mode")
		real := run(t, false, v)
		assert.Contains(t, real, "packages: demo 1.0-1 → 2.0-1")
		// The package's scriptlet reloaded the manager after its unit file was in place: not
		// repeated (check mode cannot know the transaction will, so it plans one).
		assert.Contains(t, strings.Join(real, "\n"), "demo.service: restart (package:demo 1.0-1 → 2.0-1)")
	})
}

// What users write: a timeout as a number of seconds passes the role and the module; a
// mode written as 644 is refused with the quoted form; a service_* variable the role does
// not know is warned about.
func TestRoleTakesTypesAsUsersWriteThem(t *testing.T) {
	t.Parallel()
	tg := target(t)
	demo := play(t, "demo.yml", tg)
	procs := []any{map[string]any{"unit": "demo.service", "enabled": true, "timeout": 20, "settle": 1}}
	p := demo
	p.ExtraVars = map[string]any{"service_processes": procs, "service_config": []any{}}
	r := p.RunOK(t)
	// Ansible wraps a warning at the terminal's width.
	assert.Contains(t, strings.Join(strings.Fields(r.Output), " "), "[WARNING]: the richt.services.service role does not know the variable(s) service_config, which it ignores")
	assert.Contains(t, strings.Join(summaryLines(r.Output, tg.Name()), "\n"), "demo.service: enable, daemon-reload, start (was stopped)", "timeout: 20 is 20 seconds")

	p.ExtraVars = map[string]any{"service_processes": procs, "service_dropins": []any{map[string]any{
		"unit": "demo.service", "name": "30-mode.conf", "mode": 644, "content": "[Service]\n"}}}
	r = p.Run(t)
	assert.NotZero(t, r.ExitCode, r.Output)
	assert.Contains(t, r.Output, "644 was read as the decimal number 644")
	assert.Contains(t, r.Output, `quote it: '0644'`)
	assert.NotContains(t, r.Output, "sticky", "not explained as the bits the decimal number sets")
	tg.MustExec(t, "test", "!", "-e", "/etc/systemd/system/demo.service.d/30-mode.conf")
}
