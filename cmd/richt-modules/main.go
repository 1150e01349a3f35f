// Command richt-modules is every module of the collection in one binary: the collection
// ships one build of it per architecture (docs/fastpath.md). It runs the module named by
// its file name (rpm_exact, or Ansible's AnsiballZ_rpm_exact) or by its first argument
// (`richt-modules rpm_exact ARGS_FILE`), with the command line that module expects.
package main

import "github.com/richt/services/pkg/ansible"

func main() { ansible.MultiCall(mains) }
