package service

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/richt/services/pkg/runner"
)

// dependentRounds bounds the search for dependents of dependents: each round asks rpm
// once more with what the last one found added to the removal.
const dependentRounds = 8

// installedArgv asks rpm which of names are installed: each installed build's name on a
// line, "package NAME is not installed" for the others (and an exit code counting them).
func installedArgv(names []string) []string {
	return append([]string{"rpm", "-q", "--qf", "%{NAME}\\n", "--"}, names...)
}

// removeTestArgv asks rpm, changing nothing, whether removing every build of names leaves
// a dependency broken: rpm lists each installed package that would lose what it requires
// ("X is needed by (installed) NEVRA") and exits 1.
func removeTestArgv(names []string) []string {
	return append([]string{"rpm", "-e", "--test", "--allmatches", "--"}, names...)
}

// Predictor is the Prediction of the target: rpm's own answers.
type Predictor struct {
	Runner runner.Runner
}

// Dependents implements Prediction: the installed packages outside names that require one
// of them, and those that require those (as NAME-VERSION-RELEASE.ARCH, sorted). DNF's
// removal takes them along; rpm's test removal on the installed database names them
// without a repository and without changing anything.
func (p Predictor) Dependents(ctx context.Context, names []string) ([]string, error) {
	run := p.Runner
	res, err := run.Run(ctx, installedArgv(names)...)
	if err != nil {
		return nil, fmt.Errorf("query rpm database for %s: %w", strings.Join(names, ", "), err)
	}
	var removing []string
	for _, line := range strings.Split(res.Stdout, "\n") {
		if slices.Contains(names, line) && !slices.Contains(removing, line) {
			removing = append(removing, line)
		}
	}
	if len(removing) == 0 {
		return nil, nil
	}
	var out []string
	for range dependentRounds {
		res, err := run.Run(ctx, removeTestArgv(removing)...)
		if err != nil {
			return nil, fmt.Errorf("test the removal of %s: %w", strings.Join(removing, ", "), err)
		}
		if res.ExitCode == 0 {
			break
		}
		found := neededBy(res.Stdout + "\n" + res.Stderr)
		var more []string
		for _, n := range found {
			if !slices.Contains(removing, n) {
				more = append(more, n)
			}
		}
		if len(more) == 0 {
			return nil, fmt.Errorf("test the removal of %s: rpm exited %d: %s", strings.Join(removing, ", "), res.ExitCode, res.Output())
		}
		removing = append(removing, more...)
		out = append(out, more...)
	}
	slices.Sort(out)
	return out, nil
}

// neededBy is every package rpm's failed dependencies name as "needed by (installed)".
func neededBy(out string) []string {
	var found []string
	for _, line := range strings.Split(out, "\n") {
		_, nevra, ok := strings.Cut(line, " is needed by (installed) ")
		nevra = strings.TrimSpace(nevra)
		if ok && nevra != "" && !slices.Contains(found, nevra) {
			found = append(found, nevra)
		}
	}
	return found
}
