package libmaps

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/richt/services/pkg/runner"
)

// Caps of a report: a glibc update leaves every process of a unit mapping a dozen stale
// files; the result names enough to act on and counts the rest.
const (
	MaxProcesses = 10
	MaxFiles     = 10
)

// Report is what a scan found for one unit, capped: the processes (by PID) and, per
// process, the files (sorted), each with its package.
type Report struct {
	Processes []Process `json:"processes"`
	// MoreProcesses is how many more processes map stale files than Processes lists.
	MoreProcesses int `json:"more_processes,omitempty"`
}

// Empty reports whether no process maps a stale file.
func (r Report) Empty() bool { return len(r.Processes) == 0 }

// Capped is procs cut to MaxProcesses processes of MaxFiles files each.
func Capped(procs []Process) Report {
	var r Report
	for i, p := range procs {
		if i == MaxProcesses {
			r.MoreProcesses = len(procs) - i
			break
		}
		if len(p.Files) > MaxFiles {
			p.MoreFiles += len(p.Files) - MaxFiles
			p.Files = p.Files[:MaxFiles]
		}
		r.Processes = append(r.Processes, p)
	}
	return r
}

// Paths are the report's files, each once, sorted.
func (r Report) Paths() []string {
	var out []string
	for _, p := range r.Processes {
		for _, f := range p.Files {
			out = append(out, f.Path)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// WithPackages is r with each file's package from owners (path → package).
func (r Report) WithPackages(owners map[string]string) Report {
	out := Report{MoreProcesses: r.MoreProcesses}
	for _, p := range r.Processes {
		p.Files = slices.Clone(p.Files)
		for i := range p.Files {
			p.Files[i].Package = owners[p.Files[i].Path]
		}
		out.Processes = append(out.Processes, p)
	}
	return out
}

// Summary is a one-line account for a warning: "PID (COMMAND): FILE (PACKAGE), …".
func (r Report) Summary() string {
	var parts []string
	for _, p := range r.Processes {
		var files []string
		for _, f := range p.Files {
			s := f.Path
			if f.Package != "" {
				s += " (" + f.Package + ")"
			}
			files = append(files, s)
		}
		if p.MoreFiles > 0 {
			files = append(files, fmt.Sprintf("%d more", p.MoreFiles))
		}
		parts = append(parts, fmt.Sprintf("%d (%s): %s", p.PID, p.Command, strings.Join(files, ", ")))
	}
	if r.MoreProcesses > 0 {
		parts = append(parts, fmt.Sprintf("%d more process(es)", r.MoreProcesses))
	}
	return strings.Join(parts, "; ")
}

// Owners asks rpm which package owns each path now (`rpm -qf`, one call per path: rpm
// prints no path beside the names, and a file owned by several packages prints several);
// a path no package owns is left out. A failed rpm is an error: the caller reports the
// files without packages rather than fail the run for it.
func Owners(ctx context.Context, r runner.Runner, paths []string) (map[string]string, error) {
	out := map[string]string{}
	for _, p := range paths {
		res, err := r.Run(ctx, "rpm", "-qf", "--qf", "%{NAME}\n", "--", p)
		if err != nil {
			return out, fmt.Errorf("rpm -qf %s: %w", p, err)
		}
		if res.ExitCode != 0 {
			continue // "file … is not owned by any package"
		}
		names := strings.Fields(res.Stdout)
		slices.Sort(names)
		if names = slices.Compact(names); len(names) > 0 {
			out[p] = strings.Join(names, ",")
		}
	}
	return out, nil
}
