package rpmexact

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/richt/services/pkg/runner"
)

// ErrUnsupportedManager is returned when the manager is not DNF 4.
var ErrUnsupportedManager = errors.New("unsupported package manager")

var dnf4Version = regexp.MustCompile(`^4\.[0-9]+(\.[0-9]+)*$`)

// CheckManager accepts DNF 4 (as dnf, or as DNF 4's yum compatibility command) only.
// `dnf --version` prints the version on its first line, then, on RPM distributions,
// package lines; only the first line is read.
func CheckManager(ctx context.Context, r runner.Runner, manager string) (string, error) {
	res, err := r.Run(ctx, manager, "--version")
	if err != nil {
		return "", fmt.Errorf("check %s version: %w", manager, err)
	}
	first, _, _ := strings.Cut(strings.TrimSpace(res.Stdout), "\n")
	first = strings.TrimSpace(first)
	if res.ExitCode != 0 {
		return "", fmt.Errorf("check %s version: exit %d: %s", manager, res.ExitCode, res.Output())
	}
	if !dnf4Version.MatchString(first) {
		found := first
		switch {
		case strings.Contains(first, "dnf5") || strings.HasPrefix(first, "5."):
			found = "DNF 5 (" + first + ")"
		case strings.HasPrefix(first, "3."):
			found = "YUM 3 (" + first + ")"
		case first == "":
			found = "no version"
		}
		return "", fmt.Errorf("%w: %s --version reports %s; rpm_exact works with DNF 4 only (manager: dnf, or yum where yum is DNF 4's compatibility command)",
			ErrUnsupportedManager, manager, found)
	}
	return first, nil
}
