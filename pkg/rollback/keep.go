package rollback

import (
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/richt/services/pkg/atomicfile"
	"github.com/richt/services/pkg/dnfscript"
	"github.com/richt/services/pkg/nevra"
	"github.com/richt/services/pkg/runner"
	"github.com/richt/services/pkg/statedir"
)

// DefaultKeepDir is where a Keeper with no Dir keeps builds: root-only, because a
// rollback installs what lies there.
const DefaultKeepDir = "/var/cache/richt/rpms"

// DefaultPython runs keep.py when the dnf command is not a script whose #! line names
// an absolute interpreter.
const DefaultPython = "/usr/bin/python3"

// keepScript asks DNF 4's Python API for builds and downloads them (see its header).
//
//go:embed keep.py
var keepScript string

// keepMarker starts the stdout line that carries keep.py's answer.
const keepMarker = "RICHT-KEEP-RESULT "

// maxKeptName bounds a kept file's base name so that its temporary name
// ("." + name + ".richt-" + up to 10 digits) fits in a 255-byte file name.
const maxKeptName = 230

// Keeper keeps RPM files of exact builds on the host, so that a rollback can reinstall
// a build that the repositories no longer carry. Builds are written as the rpm query
// prints them, NAME-EPOCH:VERSION-RELEASE.ARCH with the epoch always present.
//
// Ensure and Prune on one Dir must be serialized by the caller: Prune takes any
// temporary file in Dir for a killed run's leftover.
type Keeper struct {
	Runner runner.Runner
	Dir    string // DefaultKeepDir when empty
	// Scope, when set, keeps the builds in Dir/Scope: one service's own directory, so
	// that its Prune never removes what another service keeps (rollback.Key).
	Scope string
	// Python runs keep.py; when empty, the interpreter on the dnf command's #! line
	// (the one that imports DNF 4), else DefaultPython.
	Python string
}

func (k Keeper) base() string {
	if k.Dir != "" {
		return k.Dir
	}
	return DefaultKeepDir
}

func (k Keeper) dir() string {
	if k.Scope != "" {
		return filepath.Join(k.base(), k.Scope)
	}
	return k.base()
}

// build is one parsed NEVRA and its spelling.
type build struct {
	nevra string
	name  string
	evra  nevra.EVRA
	// repo, when set, is the only repository the build may be fetched from (a plan's).
	repo string
}

// splitNEVRA reads a build through nevra.ParseNEVRA (canonical form only, so one build has
// one kept file) and refuses one whose kept file name would be too long.
func splitNEVRA(s string) (build, error) {
	n, err := nevra.ParseNEVRA(s)
	if err != nil {
		return build{}, err
	}
	if len(keptName(s)) > maxKeptName {
		return build{}, fmt.Errorf("%w: build %+q is too long to keep as a file", nevra.ErrInvalid, s)
	}
	return build{nevra: s, name: n.Name, evra: n.EVRA}, nil
}

// keptName is the file name of a valid build: ':' becomes '~'. Neither a name nor an
// epoch has '~', so the first '~' is the epoch's and two builds never share a file;
// a ':' is kept out because some tools read it as a separator (scp's host:path, URLs).
func keptName(nevra string) string {
	return strings.Replace(nevra, ":", "~", 1) + ".rpm"
}

// Path is where the build is kept, or "" when nevra is not a valid
// NAME-EPOCH:VERSION-RELEASE.ARCH (so no path outside Dir can be formed).
func (k Keeper) Path(nevra string) string {
	if _, err := splitNEVRA(nevra); err != nil {
		return ""
	}
	return filepath.Join(k.dir(), keptName(nevra))
}

// kept reports whether path is a non-empty regular file (a link is not kept).
func kept(path string) (bool, error) {
	fi, err := os.Lstat(path)
	if errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("inspect kept build %s: %w", path, err)
	}
	return fi.Mode().IsRegular() && fi.Size() > 0, nil
}

// found is one build keep.py found: the repository, and in fetch mode the file and
// whether its signature was checked (the repository has gpgcheck on).
type found struct {
	Repo     string `json:"repo"`
	Path     string `json:"path"`
	GPGCheck bool   `json:"gpgcheck"`
}

// gpgMarkSuffix names the file beside a kept build that says its repository had gpgcheck
// on when it was kept (its signature checked then): a rollback installs it with DNF's
// check of local packages on, so a file that is not what was checked is refused.
const gpgMarkSuffix = ".gpgcheck"

// GPGCheck reports whether the build was kept from a repository with gpgcheck on, so
// that installing it again must check its signature too.
func (k Keeper) GPGCheck(nevra string) bool {
	p := k.Path(nevra)
	if p == "" {
		return false
	}
	fi, err := os.Lstat(p + gpgMarkSuffix)
	return err == nil && fi.Mode().IsRegular()
}

// answer is keep.py's output.
type answer struct {
	Found   map[string]found `json:"found"`
	Missing []string         `json:"missing"`
	Error   string           `json:"error"`
}

// scriptArgv is the command that runs keep.py for builds, copying into dir. Each build
// is its own JSON argument, so no list of builds meets the kernel's limit on one
// argument's length.
func scriptArgv(python, dir string, builds []build, check bool) []string {
	mode := "fetch"
	if check {
		mode = "check"
	}
	argv := []string{python, "-I", "-c", keepScript, mode, dir}
	for _, b := range builds {
		m := map[string]any{
			"nevra": b.nevra, "name": b.name, "epoch": b.evra.Epoch,
			"version": b.evra.Version, "release": b.evra.Release, "arch": b.evra.Arch,
			"file": keptName(b.nevra),
		}
		if b.repo != "" {
			m["repo"] = b.repo
		}
		arg, _ := json.Marshal(m)
		argv = append(argv, string(arg))
	}
	return argv
}

// lookup runs keep.py and checks that its answer accounts for every build exactly once.
// The temporary files of a fetch are the caller's to adopt; when the answer is wrong,
// lookup removes those it names (a file it does not name as a temporary file of the
// build is never touched), and Prune any a garbled answer hid.
func (k Keeper) lookup(ctx context.Context, builds []build, check bool) (_ answer, err error) {
	python := k.Python
	if python == "" {
		python = dnfPython(dnfscript.LocateCommand, dnfscript.ReadFile)
	}
	res, err := k.Runner.Run(ctx, scriptArgv(python, k.dir(), builds, check)...)
	if err != nil {
		return answer{}, err
	}
	ans, perr := parseAnswer(res.Stdout)
	defer func() {
		if err != nil && !check {
			for n, f := range ans.Found {
				if isTempOf(f.Path, k.Path(n)) {
					_ = os.Remove(f.Path)
				}
			}
		}
	}()
	switch {
	case perr == nil && ans.Error != "":
		return answer{}, fmt.Errorf("%s (exit %d)", ans.Error, res.ExitCode)
	case res.ExitCode != 0:
		return answer{}, fmt.Errorf("%s exited %d: %s", python, res.ExitCode, res.Output())
	case perr != nil:
		return answer{}, fmt.Errorf("%w: %s", perr, res.Output())
	}
	want := map[string]bool{}
	for _, b := range builds {
		want[b.nevra] = true
	}
	for _, n := range ans.Missing {
		if !want[n] {
			return answer{}, fmt.Errorf("answer names %+q twice or unasked", n)
		}
		delete(want, n)
	}
	for n, f := range ans.Found {
		if !want[n] {
			return answer{}, fmt.Errorf("answer names %+q twice or unasked", n)
		}
		delete(want, n)
		if dst := k.Path(n); !check && !isTempOf(f.Path, dst) {
			return answer{}, fmt.Errorf("answer gives %+q for %s, not a temporary file of %s", f.Path, n, dst)
		}
	}
	for _, b := range builds {
		if want[b.nevra] {
			return answer{}, fmt.Errorf("answer leaves %s out", b.nevra)
		}
	}
	return ans, nil
}

// parseAnswer reads the last marker line of keep.py's stdout.
func parseAnswer(stdout string) (answer, error) {
	i := strings.LastIndex(stdout, "\n"+keepMarker)
	if i < 0 {
		if !strings.HasPrefix(stdout, keepMarker) {
			return answer{}, errors.New("no answer line in the output")
		}
	} else {
		stdout = stdout[i+1:]
	}
	line, _, _ := strings.Cut(strings.TrimPrefix(stdout, keepMarker), "\n")
	var ans answer
	if err := json.Unmarshal([]byte(line), &ans); err != nil {
		return answer{}, fmt.Errorf("answer line %+q: %w", line, err)
	}
	return ans, nil
}

// dnfPython is the interpreter that imports DNF 4: the absolute one on the dnf script's
// #! line (as dnfscript.Interpreter reads it), else DefaultPython.
func dnfPython(locate func(string) (string, error), read func(string) ([]byte, error)) string {
	path, err := locate("dnf")
	if err != nil {
		return DefaultPython
	}
	src, err := read(path)
	if err != nil {
		return DefaultPython
	}
	if interp, ok := dnfscript.Interpreter(src); ok {
		return interp
	}
	return DefaultPython
}

// isTempOf reports whether tmp is a temporary file of dst as keep.py names it:
// ".BASE.richt-DIGITS" beside dst, where BASE is dst's base name.
func isTempOf(tmp, dst string) bool {
	return dst != "" && filepath.Dir(tmp) == filepath.Dir(dst) &&
		strings.HasPrefix(filepath.Base(tmp), atomicfile.TempPrefix(dst)) && isKeptTemp(filepath.Base(tmp))
}

// adopt renames the temporary files keep.py made for the found builds into place, after
// checking that each is a non-empty regular file, and syncs the directory. On an error it
// removes the temporary files it did not rename.
func (k Keeper) adopt(builds []build, found map[string]found) (err error) {
	var temps []string
	for _, b := range builds {
		if f, ok := found[b.nevra]; ok {
			temps = append(temps, f.Path)
		}
	}
	if len(temps) == 0 {
		return nil
	}
	renamed := 0
	defer func() {
		if err != nil {
			for _, tmp := range temps[renamed:] {
				_ = os.Remove(tmp)
			}
		}
	}()
	for _, b := range builds {
		f, ok := found[b.nevra]
		if !ok {
			continue
		}
		fi, err := os.Lstat(f.Path)
		if err != nil {
			return fmt.Errorf("keep %s from repository %s: %w", b.nevra, f.Repo, err)
		}
		if !fi.Mode().IsRegular() || fi.Size() == 0 {
			return fmt.Errorf("keep %s from repository %s: %s is not a non-empty regular file (%s, %d bytes)",
				b.nevra, f.Repo, f.Path, fi.Mode().Type(), fi.Size())
		}
		// The mark first: a kill between leaves a mark without its build (fetched again,
		// the mark rewritten), never a build from a gpgcheck repository without its mark.
		mark := k.Path(b.nevra) + gpgMarkSuffix
		if f.GPGCheck {
			err = atomicfile.Write(mark, nil, atomicfile.Options{Mode: 0o600, UID: -1, GID: -1})
		} else if err = os.Remove(mark); errors.Is(err, os.ErrNotExist) {
			err = nil
		}
		if err != nil {
			return fmt.Errorf("keep %s from repository %s: %w", b.nevra, f.Repo, err)
		}
		if err := os.Rename(f.Path, k.Path(b.nevra)); err != nil {
			return fmt.Errorf("keep %s from repository %s: %w", b.nevra, f.Repo, err)
		}
		renamed++
	}
	if err := atomicfile.SyncDir(k.dir()); err != nil {
		return fmt.Errorf("keep builds: %w", err)
	}
	return nil
}

// isKeptTemp reports whether name is keep.py's temporary file for some kept file:
// "." + NAME.rpm + ".richt-" + digits.
func isKeptTemp(name string) bool {
	const mid = ".rpm.richt-"
	i := strings.LastIndex(name, mid)
	if i < 2 || name[0] != '.' {
		return false
	}
	digits := name[i+len(mid):]
	return digits != "" && strings.Trim(digits, "0123456789") == ""
}

// Prune removes every kept build in Dir that is not in keep, and the temporary files a
// killed Ensure left. Other files are left alone; a missing Dir is fine. Bad input
// removes nothing.
func (k Keeper) Prune(keep []string) error {
	want := map[string]bool{}
	for _, s := range keep {
		if _, err := splitNEVRA(s); err != nil {
			return fmt.Errorf("prune kept builds: %w", err)
		}
		want[keptName(s)] = true
	}
	dir := k.dir()
	if err := statedir.Check(dir); err != nil {
		return fmt.Errorf("prune kept builds: %w", err)
	}
	entries, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("prune kept builds: %w", err)
	}
	removed := false
	for _, e := range entries {
		name := e.Name()
		build := strings.TrimSuffix(name, gpgMarkSuffix)
		if !(strings.HasSuffix(build, ".rpm") && !want[build]) && !isKeptTemp(name) {
			continue
		}
		// Only files and links are the Keeper's; a directory is someone else's.
		if e.IsDir() {
			continue
		}
		if err := os.Remove(filepath.Join(dir, name)); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("prune kept builds: %w", err)
		}
		removed = true
	}
	if removed {
		if err := atomicfile.SyncDir(dir); err != nil {
			return fmt.Errorf("prune kept builds: %w", err)
		}
	}
	return nil
}
