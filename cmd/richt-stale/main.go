// Command richt-stale lists the services of this host whose processes map files replaced
// or deleted since they mapped them (package libmaps), one line per service: the unit, then
// each process with its stale files and their packages. It reads what the modules read for
// one unit (restart_on: [libraries]) for every service at once; the bench times it against
// `dnf needs-restarting -s` (docs/libraries.md).
//
//	richt-stale [-packages=false]
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path"

	"github.com/richt/services/pkg/libmaps"
	"github.com/richt/services/pkg/runner"
)

func main() {
	packages := flag.Bool("packages", true, "name each file's package (rpm -qf)")
	flag.Parse()
	if err := run(*packages); err != nil {
		fmt.Fprintln(os.Stderr, "richt-stale:", err)
		os.Exit(1)
	}
}

func run(packages bool) error {
	s := libmaps.Scanner{}
	groups, err := s.Services()
	if err != nil {
		return err
	}
	for _, g := range groups {
		pids, err := s.PIDs(g)
		if err != nil {
			return err
		}
		procs, err := s.Scan(pids)
		if err != nil {
			return err
		}
		r := libmaps.Capped(procs)
		if r.Empty() {
			continue
		}
		if packages {
			owners, _ := libmaps.Owners(context.Background(), runner.Exec{}, r.Paths())
			r = r.WithPackages(owners)
		}
		fmt.Printf("%s: %s\n", path.Base(g), r.Summary())
	}
	return nil
}
