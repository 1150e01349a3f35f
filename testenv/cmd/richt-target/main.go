// Command richt-target starts and removes a long-lived local systemd target for demos
// and manual testing, using the same image and settings as the tests.
//
//	richt-target start NAME   boot a target (replacing one of that name) with the demo
//	                          package repository copied to /srv/richt-repos/fixtures
//	richt-target stop NAME    remove it
package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"time"

	"github.com/richt/services/testenv"
	"github.com/richt/services/testenv/fixtures"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "richt-target:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	if len(args) != 2 || (args[0] != "start" && args[0] != "stop") {
		return fmt.Errorf("usage: richt-target start|stop NAME")
	}
	name := args[1]
	// Replace a leftover of the same name; an absent one is fine.
	_ = exec.Command("docker", "rm", "-f", name).Run()
	if args[0] == "stop" {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	t, err := testenv.StartContext(ctx, testenv.WithName(name))
	if err != nil {
		if t != nil {
			_ = t.Terminate(ctx)
		}
		return err
	}
	repo, err := os.MkdirTemp("", "richt-demo-repo-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(repo)
	if err := testenv.BuildRepoDir(repo, fixtures.DemoPackage("1.0"), fixtures.DemoPackage("2.0")); err != nil {
		return err
	}
	if err := t.CopyDir(ctx, repo, "/srv/richt-repos/fixtures"); err != nil {
		return err
	}
	fmt.Printf("target %s is up (image %s); demo repository at /srv/richt-repos/fixtures\n", name, t.Image)
	return nil
}
