package ansible

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// The collection ships one binary per architecture that holds every module (a multi-call
// binary, like busybox): four architectures of one binary fit Galaxy's size limit where
// four of each module do not (docs/fastpath.md). Which module runs comes from the command
// line, in the ways each path that starts a module names it.

// remotePrefixes are what Ansible puts before a binary module's file name when it copies
// the module to a target: "AnsiballZ_" (ActionBase._execute_module, ansible-core 2.14 to
// 2.19) and "ansible_module_" (Mitogen's ProgramRunner).
var remotePrefixes = []string{"AnsiballZ_", "ansible_module_"}

// Dispatch finds the module a multi-call binary is asked to run and the arguments it
// gets. The module is named by the program's own file name (argv[0], with Ansible's and
// Mitogen's upload prefixes removed: Ansible's normal path, a link named after the
// module), else by the first argument (the fast path's cache, `BINARY NAME -`). known
// holds the module names. rest is the module's argv: its name, then its arguments.
func Dispatch(argv []string, known []string) (name string, rest []string, err error) {
	if len(argv) == 0 {
		return "", nil, fmt.Errorf("no program name")
	}
	is := func(s string) bool {
		for _, k := range known {
			if s == k {
				return true
			}
		}
		return false
	}
	base := filepath.Base(argv[0])
	for _, p := range remotePrefixes {
		if trimmed := strings.TrimPrefix(base, p); trimmed != base && is(trimmed) {
			base = trimmed
			break
		}
	}
	if is(base) {
		return base, append([]string{base}, argv[1:]...), nil
	}
	if len(argv) > 1 && is(argv[1]) {
		return argv[1], argv[1:], nil
	}
	sorted := append([]string(nil), known...)
	sort.Strings(sorted)
	return "", nil, fmt.Errorf("%s: name the module to run, as the program's name or the first argument (modules: %s)",
		base, strings.Join(sorted, ", "))
}

// MultiCall is the main of a multi-call binary: it runs the module Dispatch finds with
// os.Args set to that module's argv. `--version` alone prints the binary's version and
// its modules (the fast path's probe that a target can execute the build). Anything it
// cannot dispatch is answered with a failed result, so Ansible shows the message.
func MultiCall(mains map[string]func()) {
	names := make([]string, 0, len(mains))
	for n := range mains {
		names = append(names, n)
	}
	sort.Strings(names)
	if len(os.Args) == 2 && os.Args[1] == "--version" {
		fmt.Printf("%s %s (%s)\n", filepath.Base(os.Args[0]), Version, strings.Join(names, " "))
		return
	}
	name, rest, err := Dispatch(os.Args, names)
	if err != nil {
		writeFailure(os.Stdout, err)
		os.Exit(1)
	}
	os.Args = rest
	mains[name]()
}

func writeFailure(w io.Writer, err error) {
	out := encode(map[string]any{"failed": true, "changed": false, "msg": err.Error()}, nil)
	_, _ = w.Write(append(out, '\n'))
}
