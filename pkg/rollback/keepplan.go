package rollback

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/richt/services/pkg/statedir"
)

// KeepPlan is what keeping a set of builds will do, made from reads only (PlanKeep): the
// builds kept already (nothing to do), those to fetch, each from the repository named and
// with that repository's gpgcheck, and those neither kept nor in any enabled repository
// (a rollback could not install them: the caller refuses the change). Keep carries out
// exactly the fetches it names.
type KeepPlan struct {
	// Kept are the builds kept already, in the order asked.
	Kept []string
	// Fetch are the builds to fetch, in the order asked.
	Fetch []Fetch
	// Missing are the builds neither kept nor available, in the order asked.
	Missing []string
}

// Fetch is one build a KeepPlan fetches: from Repo, whose gpgcheck was GPGCheck when the
// plan was made (the build's signature is then checked when it is fetched, and the kept
// build marked so).
type Fetch struct {
	Build    string
	Repo     string
	GPGCheck bool
}

// PlanKeep plans keeping nevras in Dir, reading only: it checks Dir as Ensure does (a
// directory group or others could write refuses), reads which builds are kept there
// already, and asks the enabled repositories for the others (keep.py in check mode,
// through a temporary DNF cache of its own: nothing is written, not even to DNF's cache).
// Bad input is an error and runs nothing; no command runs when every build is kept.
func (k Keeper) PlanKeep(ctx context.Context, nevras []string) (KeepPlan, error) {
	builds, err := parseBuilds(nevras)
	if err != nil || len(builds) == 0 {
		return KeepPlan{}, err
	}
	if err := checkKeepDir(k.dir()); err != nil {
		return KeepPlan{}, fmt.Errorf("keep builds: %w", err)
	}
	var p KeepPlan
	ask, err := k.notKept(builds)
	if err != nil {
		return KeepPlan{}, err
	}
	asked := map[string]bool{}
	for _, b := range ask {
		asked[b.nevra] = true
	}
	var ans answer
	if len(ask) > 0 {
		if ans, err = k.lookup(ctx, ask, true); err != nil {
			return KeepPlan{}, fmt.Errorf("find %s in the repositories: %w", joinBuilds(ask), err)
		}
	}
	for _, b := range builds {
		if !asked[b.nevra] {
			p.Kept = append(p.Kept, b.nevra)
		} else if f, ok := ans.Found[b.nevra]; ok {
			p.Fetch = append(p.Fetch, Fetch{Build: b.nevra, Repo: f.Repo, GPGCheck: f.GPGCheck})
		} else {
			p.Missing = append(p.Missing, b.nevra)
		}
	}
	return p, nil
}

// Keep carries out a plan's fetches: each build from the repository the plan named
// (keep.py in fetch mode, one process for all; no other repository is asked), its
// signature checked there when that repository has gpgcheck on, then kept in Dir (marked
// when checked). A plan with nothing to fetch runs nothing and writes nothing.
//
// What happened is compared with the plan before anything is kept (compareFetched): a
// build the named repository no longer offers, or a repository whose gpgcheck is not what
// the plan read, is an error and keeps nothing. A plan with a missing build is refused:
// its caller refuses the change instead.
func (k Keeper) Keep(ctx context.Context, p KeepPlan) error {
	if len(p.Missing) > 0 {
		return fmt.Errorf("keep builds: the plan has builds no repository offers (%s)", strings.Join(p.Missing, ", "))
	}
	if len(p.Fetch) == 0 {
		return nil
	}
	builds := make([]build, 0, len(p.Fetch))
	for _, f := range p.Fetch {
		b, err := splitNEVRA(f.Build)
		if err != nil {
			return fmt.Errorf("keep builds: %w", err)
		}
		if f.Repo == "" {
			return fmt.Errorf("keep builds: the plan fetches %s from no repository", f.Build)
		}
		b.repo = f.Repo
		builds = append(builds, b)
	}
	if err := k.ensureDir(); err != nil {
		return err
	}
	ans, err := k.lookup(ctx, builds, false)
	if err != nil {
		return fmt.Errorf("fetch %s: %w", joinBuilds(builds), err)
	}
	if err := compareFetched(p.Fetch, ans); err != nil {
		k.removeTemps(ans)
		return fmt.Errorf("keep builds: %w; nothing was kept", err)
	}
	return k.adopt(builds, ans.Found)
}

// compareFetched compares keep.py's fetch with the plan it carried out: every planned
// build found in the repository the plan named, with the gpgcheck the plan read (the
// answer has no other build: lookup checked that). The repository's configuration read
// between the plan and the fetch is the only way they differ; the run stops there,
// before any change, rather than keep a build other than the one its plan reported.
func compareFetched(plan []Fetch, ans answer) error {
	var diffs []string
	for _, f := range plan {
		got, ok := ans.Found[f.Build]
		switch {
		case !ok:
			diffs = append(diffs, fmt.Sprintf("the plan fetches %s from repository %s, which no longer offers it", f.Build, f.Repo))
		case got.Repo != f.Repo:
			diffs = append(diffs, fmt.Sprintf("the plan fetches %s from repository %s, but it came from %s", f.Build, f.Repo, got.Repo))
		case got.GPGCheck != f.GPGCheck:
			diffs = append(diffs, fmt.Sprintf("the plan fetches %s from repository %s with gpgcheck %s, but the repository now has it %s",
				f.Build, f.Repo, onOff(f.GPGCheck), onOff(got.GPGCheck)))
		}
	}
	if len(diffs) > 0 {
		return errors.New(strings.Join(diffs, "; "))
	}
	return nil
}

func onOff(b bool) string {
	if b {
		return "on"
	}
	return "off"
}

// removeTemps removes the temporary files an answer names for its builds (a file it does
// not name as a temporary file of the build is never touched).
func (k Keeper) removeTemps(ans answer) {
	for n, f := range ans.Found {
		if isTempOf(f.Path, k.Path(n)) {
			_ = os.Remove(f.Path)
		}
	}
}

// Ensure keeps every build in Dir that is not kept there yet, taking it from the enabled
// repositories (one python3 process for all of them, through DNF 4's API, from whichever
// repository DNF prefers). With check, it only asks which builds are available, and
// changes nothing. missing are the builds neither kept nor available (in input order,
// once each); a repository that cannot be reached is skipped, so its builds are missing
// rather than an error. Bad input changes nothing. A change's rollback plans its keep
// (PlanKeep, Keep); Ensure keeps what a change installed, after it, for the next one.
func (k Keeper) Ensure(ctx context.Context, nevras []string, check bool) (missing []string, err error) {
	builds, err := parseBuilds(nevras)
	if err != nil || len(builds) == 0 {
		return nil, err
	}
	if check {
		err = statedir.Check(k.dir())
		if err != nil {
			err = fmt.Errorf("keep builds: %w", err)
		}
	} else {
		err = k.ensureDir()
	}
	if err != nil {
		return nil, err
	}
	ask, err := k.notKept(builds)
	if err != nil || len(ask) == 0 {
		return nil, err
	}
	ans, err := k.lookup(ctx, ask, check)
	if err != nil {
		return nil, fmt.Errorf("find %s in the repositories: %w", joinBuilds(ask), err)
	}
	if !check {
		if err := k.adopt(ask, ans.Found); err != nil {
			return nil, err
		}
	}
	gone := map[string]bool{}
	for _, n := range ans.Missing {
		gone[n] = true
	}
	for _, b := range ask {
		if gone[b.nevra] {
			missing = append(missing, b.nevra)
		}
	}
	return missing, nil
}

// parseBuilds validates each build and drops repeats (input order kept).
func parseBuilds(nevras []string) ([]build, error) {
	var builds []build
	seen := map[string]bool{}
	for _, s := range nevras {
		b, err := splitNEVRA(s)
		if err != nil {
			return nil, fmt.Errorf("keep builds: %w", err)
		}
		if !seen[s] {
			seen[s] = true
			builds = append(builds, b)
		}
	}
	return builds, nil
}

// ensureDir makes Dir root-only (and its shared parent, when the Keeper is scoped).
func (k Keeper) ensureDir() error {
	// Whoever owns a directory above could swap the root-only one for their own after
	// the check, and a build found there counts as kept: every ancestor is root's, as for
	// the lock's and the validator's directories.
	var err error
	if k.Scope != "" {
		// The shared parent root-only too, before the scope's own is made in it.
		err = statedir.Ensure(k.base(), 0o700)
	}
	if err == nil {
		err = statedir.Ensure(k.dir(), 0o700)
	}
	if err == nil {
		err = statedir.CheckAncestors(k.dir())
	}
	if err != nil {
		return fmt.Errorf("keep builds: %w", err)
	}
	return nil
}

// notKept are the builds not kept in Dir (no non-empty regular file at their path).
func (k Keeper) notKept(builds []build) ([]build, error) {
	var ask []build
	for _, b := range builds {
		ok, err := kept(k.Path(b.nevra))
		if err != nil {
			return nil, err
		}
		if !ok {
			ask = append(ask, b)
		}
	}
	return ask, nil
}

func joinBuilds(builds []build) string {
	names := make([]string, len(builds))
	for i, b := range builds {
		names[i] = b.nevra
	}
	return strings.Join(names, ", ")
}

// checkKeepDir is statedir.Check of the keep directory and, when it exists, of every
// directory above it (ensureDir's rule): what PlanKeep finds there it reports as kept, and a rollback
// installs it.
func checkKeepDir(dir string) error {
	if err := statedir.Check(dir); err != nil {
		return err
	}
	if _, err := os.Lstat(dir); err != nil {
		return nil // missing: nothing is kept there yet (Check judged any other error)
	}
	return statedir.CheckAncestors(dir)
}
