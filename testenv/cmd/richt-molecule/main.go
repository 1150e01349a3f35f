// Command richt-molecule runs Molecule scenarios on testenv's systemd targets: from a
// role's or collection's directory, `richt-molecule test [-s SCENARIO] [--all]
// [--parallel N]`. See testenv/molecule and docs/testenv.md.
package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"syscall"

	tclog "github.com/testcontainers/testcontainers-go/log"

	"github.com/richt/services/testenv/molecule"
)

func main() {
	// testcontainers' package-level lines (the Docker banner, each copy's archive) are not
	// the run's; TESTENV_VERBOSE shows them, as it shows each target's.
	if os.Getenv("TESTENV_VERBOSE") == "" {
		tclog.SetDefault(tclog.NewNoopLogger())
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code, argv := molecule.Main(ctx, ".", os.Args[1:], os.Stdout, os.Stderr)
	stop()
	if argv != nil {
		path, err := exec.LookPath(argv[0])
		if err == nil {
			err = syscall.Exec(path, argv, os.Environ())
		}
		fmt.Fprintf(os.Stderr, "richt-molecule: login: %v\n", err)
		os.Exit(1)
	}
	os.Exit(code)
}
