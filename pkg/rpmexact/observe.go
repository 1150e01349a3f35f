package rpmexact

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/richt/services/pkg/runner"
)

// Installed is what the RPM database says about one package name.
type Installed struct {
	// NEVRAs are the installed builds, NAME-EPOCH:VERSION-RELEASE.ARCH, sorted.
	NEVRAs []string
	// InstallOnly: a build is kernel-like (DNF's default installonlypkgs: the names
	// kernel and kernel-PAE, or a provide installonlypkg(...) or multiversion(kernel)),
	// so several builds side by side are what DNF keeps on purpose.
	InstallOnly bool `json:"installonly,omitempty"`
}

// queryFormat prints one line per installed build. A name that looks like NAME-VERSION
// would also match by version in rpm -q, so NAME is printed and compared. What a
// transaction changes in unit files is read from the unit directories (snapshot.go), so
// no file list is needed here: the query reads headers only.
//
// The provides follow the build: only the installonly ones among them matter
// (installOnly), and only for names with several builds.
const queryFormat = "@@%{NAME}\t%{EPOCHNUM}:%{VERSION}-%{RELEASE}.%{ARCH}\t[%{PROVIDENAME}\v]\n"

// dbLine asks rpm, in the same process as the query, where its database is and which
// backend reads it; the query memo needs both. rpm prints --eval results while it parses
// its options, so the line comes first.
const dbLine = "@@rpmdb\t%{_dbpath}\t%{_db_backend}"

// Database is where rpm read the installed packages from.
type Database struct {
	Path    string `json:"path"`    // %{_dbpath}
	Backend string `json:"backend"` // %{_db_backend}: sqlite, ndb, bdb, bdb_ro
}

// unitDirs are where systemd reads system units from; a package change under them means
// the manager must be reloaded.
var unitDirs = []string{
	"/etc/systemd/system/",
	"/run/systemd/system/",
	"/usr/local/lib/systemd/system/",
	"/usr/lib/systemd/system/",
	"/lib/systemd/system/",
}

// queryArgv is the one rpm query of an observation, for every name of a run.
func queryArgv(names ...string) []string {
	return append([]string{"rpm", "--eval", dbLine, "-q", "--qf", queryFormat, "--"}, names...)
}

// ObserveAll runs one rpm query for every name: what each is installed as.
func ObserveAll(ctx context.Context, r runner.Runner, names []string) (map[string]Installed, Database, error) {
	res, err := r.Run(ctx, queryArgv(names...)...)
	if err != nil {
		return nil, Database{}, fmt.Errorf("query rpm database for %s: %w", strings.Join(names, ", "), err)
	}
	return parseAnswer(names, res)
}

// parseAnswer reads the database line and the query's answer.
func parseAnswer(names []string, res runner.Result) (map[string]Installed, Database, error) {
	db, rest := cutDBLine(res.Stdout)
	res.Stdout = rest
	inst, err := parseQuery(names, res)
	return inst, db, err
}

// cutDBLine splits off the database line; without one the database stays unknown (and
// the answer is never remembered).
func cutDBLine(out string) (Database, string) {
	first, rest, _ := strings.Cut(out, "\n")
	fields, ok := strings.CutPrefix(first, "@@rpmdb\t")
	if !ok {
		return Database{}, out
	}
	path, backend, _ := strings.Cut(fields, "\t")
	return Database{Path: path, Backend: backend}, rest
}

// parseQuery reads rpm -q's answer for names. rpm exits with the number of names that are
// not installed and says so for each on stdout; any other failure is a broken query,
// never "absent".
func parseQuery(names []string, res runner.Result) (map[string]Installed, error) {
	what := strings.Join(names, ", ")
	all := make(map[string]Installed, len(names))
	for _, n := range names {
		all[n] = Installed{}
	}
	missing := 0
	for _, line := range strings.Split(res.Stdout, "\n") {
		if line == "" {
			continue
		}
		if rest, ok := strings.CutPrefix(line, "@@"); ok {
			n, evra, ok := strings.Cut(rest, "\t")
			evra, provides, _ := strings.Cut(evra, "\t")
			if !ok || evra == "" {
				return nil, fmt.Errorf("query rpm database for %s: malformed answer %q", what, line)
			}
			// rpm -q NAME-VERSION also matches package NAME at VERSION: only exact names count.
			if inst, asked := all[n]; asked {
				inst.NEVRAs = append(inst.NEVRAs, n+"-"+evra)
				inst.InstallOnly = inst.InstallOnly || installOnly(n, strings.Split(provides, "\v"))
				all[n] = inst
			}
			continue
		}
		if n, ok := notInstalled(line); ok {
			if _, asked := all[n]; asked {
				missing++
			}
		}
	}
	if res.ExitCode != min(missing, 255) || strings.TrimSpace(res.Stderr) != "" {
		return nil, fmt.Errorf("query rpm database for %s: rpm exited %d: %s", what, res.ExitCode, res.Output())
	}
	for _, inst := range all {
		sort.Strings(inst.NEVRAs)
	}
	return all, nil
}

// installOnly reports whether a build is one DNF keeps several of side by side, by DNF 4's
// default installonlypkgs. A list changed in dnf.conf is not read (a documented decision).
func installOnly(name string, provides []string) bool {
	if name == "kernel" || name == "kernel-PAE" {
		return true
	}
	for _, p := range provides {
		if strings.HasPrefix(p, "installonlypkg(") || p == "multiversion(kernel)" {
			return true
		}
	}
	return false
}

// notInstalled reads rpm's "package NAME is not installed" line.
func notInstalled(line string) (string, bool) {
	rest, ok := strings.CutPrefix(line, "package ")
	if !ok {
		return "", false
	}
	return strings.CutSuffix(rest, " is not installed")
}

// Where the first observation of a run came from, as reported in the result's `observed`.
const (
	ObservedQuery = "rpm-query"
	ObservedMemo  = "memo"
)

// observation is a run's first look at the RPM database, for every requested name.
type observation struct {
	have    map[string]Installed
	source  string    // ObservedQuery or ObservedMemo
	db      Database  // where rpm read it, for a query
	queried time.Time // when the query began
}

// observe is the remembered answers while the RPM database and rpm's configuration are
// the same files, else one rpm query for all names.
func (d Deps) observe(ctx context.Context, names []string) (observation, error) {
	if d.Queries != nil {
		have := make(map[string]Installed, len(names))
		for _, n := range names {
			inst, ok := d.Queries.Lookup(n)
			if !ok {
				break
			}
			have[n] = inst
		}
		if len(have) == len(names) {
			return observation{have: have, source: ObservedMemo}, nil
		}
	}
	o := observation{source: ObservedQuery, queried: time.Now()}
	var err error
	o.have, o.db, err = ObserveAll(ctx, d.Runner, names)
	return o, err
}

// remember keeps a converged run's queried answers for the next run. Runs that act do not
// call it: their transaction changes the database, which would void the records at once.
func (d Deps) remember(o observation) {
	if d.Queries == nil || o.source != ObservedQuery {
		return
	}
	// A memo is only a shortcut: when it cannot be written (not root, a database that just
	// changed, another backend) the next run asks rpm again.
	for n, inst := range o.have {
		_ = d.Queries.Record(n, inst, o.db, o.queried)
	}
}

// ownedFormat prints every file a build owns, one path a line.
const ownedFormat = "[%{FILENAMES}\n]"

// ownedArgv is the query for the files the installed builds of names own.
func ownedArgv(names ...string) []string {
	return append([]string{"rpm", "-q", "--qf", ownedFormat, "--"}, names...)
}

// OwnedFiles lists every file the installed builds of names own, from the RPM database's
// file lists (a read, no repository). Every name must be installed.
func OwnedFiles(ctx context.Context, r runner.Runner, names []string) ([]string, error) {
	res, err := r.Run(ctx, ownedArgv(names...)...)
	if err != nil {
		return nil, fmt.Errorf("list the files of %s: %w", strings.Join(names, ", "), err)
	}
	if res.ExitCode != 0 || strings.TrimSpace(res.Stderr) != "" {
		return nil, fmt.Errorf("list the files of %s: rpm exited %d: %s", strings.Join(names, ", "), res.ExitCode, res.Output())
	}
	var out []string
	for _, l := range strings.Split(res.Stdout, "\n") {
		if strings.HasPrefix(l, "/") {
			out = append(out, l)
		}
	}
	return out, nil
}
