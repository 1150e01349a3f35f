package rpmexact

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/richt/services/pkg/runner"
)

// Installed is what the RPM database says about one package name.
type Installed struct {
	// NEVRAs are the installed builds, NAME-EPOCH:VERSION-RELEASE.ARCH, sorted.
	NEVRAs []string
	// UnitFiles maps each file the package owns under systemd's unit directories to a
	// fingerprint (digest, or link target), to tell whether a transaction changed them.
	UnitFiles map[string]string
}

// queryFormat prints one header line per installed build, then its files. A name that
// looks like NAME-VERSION would also match by version in rpm -q, so NAME is printed and
// compared.
const queryFormat = "@@%{NAME}\t%{EPOCHNUM}:%{VERSION}-%{RELEASE}.%{ARCH}\n[%{FILENAMES}\t%{FILEDIGESTS}\t%{FILELINKTOS}\n]"

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

// queryArgv is the one rpm query of an observation.
func queryArgv(name string) []string {
	return []string{"rpm", "--eval", dbLine, "-q", "--qf", queryFormat, "--", name}
}

// Observe runs one rpm query. It reads the installed RPM database only.
func Observe(ctx context.Context, r runner.Runner, name string) (Installed, Database, error) {
	res, err := r.Run(ctx, queryArgv(name)...)
	if err != nil {
		return Installed{}, Database{}, fmt.Errorf("query rpm database for %s: %w", name, err)
	}
	return parseAnswer(name, res)
}

// parseAnswer reads the database line and the query's answer.
func parseAnswer(name string, res runner.Result) (Installed, Database, error) {
	db, rest := cutDBLine(res.Stdout)
	res.Stdout = rest
	inst, err := parseQuery(name, res)
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

func parseQuery(name string, res runner.Result) (Installed, error) {
	inst := Installed{UnitFiles: map[string]string{}}
	if res.ExitCode != 0 {
		// rpm -q exits 1 and says so on stdout for a package that is not installed; any
		// other answer is a broken query, never "absent".
		if res.ExitCode == 1 && strings.TrimSpace(res.Stdout) == "package "+name+" is not installed" && strings.TrimSpace(res.Stderr) == "" {
			return inst, nil
		}
		return Installed{}, fmt.Errorf("query rpm database for %s: rpm exited %d: %s", name, res.ExitCode, res.Output())
	}
	current := false
	for _, line := range strings.Split(res.Stdout, "\n") {
		if line == "" {
			continue
		}
		if rest, ok := strings.CutPrefix(line, "@@"); ok {
			n, evra, ok := strings.Cut(rest, "\t")
			if !ok || evra == "" {
				return Installed{}, fmt.Errorf("query rpm database for %s: malformed answer %q", name, line)
			}
			current = n == name
			if current {
				inst.NEVRAs = append(inst.NEVRAs, n+"-"+evra)
			}
			continue
		}
		if !current {
			continue
		}
		path, fp, _ := strings.Cut(line, "\t")
		if isUnitPath(path) {
			inst.UnitFiles[path] = fp
		}
	}
	sort.Strings(inst.NEVRAs)
	return inst, nil
}

func isUnitPath(p string) bool {
	for _, d := range unitDirs {
		if strings.HasPrefix(p, d) && len(p) > len(d) {
			return true
		}
	}
	return false
}

// unitFilesDiffer reports whether a transaction added, replaced or removed unit files.
func unitFilesDiffer(a, b map[string]string) bool {
	if len(a) != len(b) {
		return true
	}
	for p, fp := range a {
		if other, ok := b[p]; !ok || other != fp {
			return true
		}
	}
	return false
}
