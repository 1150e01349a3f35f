package testenv

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
)

// Package describes one RPM fixture build.
type Package struct {
	Name    string
	Epoch   int // 0: no Epoch tag
	Version string
	Release string // default "1"
	Summary string
	// Files maps absolute paths in the package to their content and mode.
	Files map[string]File
	// Dirs are directories the package owns (%dir), such as a daemon's configuration
	// directory, with their mode and owner: a package removal removes them when empty.
	Dirs map[string]Dir
	// Scriptlets by RPM section name without %: "pre", "post", "preun", "postun". rpmbuild
	// makes each require /bin/sh, which richt-el-base provides in testenv's own images
	// (for other images, see fixtures.ShellProvider in the fixtures subpackage).
	Scriptlets map[string]string
	// Requires and Provides are written as RPM dependency tags, one each: "acc-lib = 1.0-1".
	Requires []string
	Provides []string
	// SystemdUnits names the units the package ships ("app.service"). The package then
	// carries the scriptlets EL's %systemd_post, %systemd_preun and
	// %systemd_postun_with_restart expand to, and requires systemd for them, as a package
	// built on AlmaLinux does: a first install applies the presets, a removal disables and
	// stops the units, an upgrade restarts them once at the end of the transaction.
	// Scriptlets may not also set those sections.
	SystemdUnits []string
	// NoRestart stands for %systemd_postun instead of %systemd_postun_with_restart: an
	// upgrade leaves the running units alone (EL's macro expands to no %postun at all).
	NoRestart bool
}

// File is one packaged file.
type File struct {
	Content string
	Mode    os.FileMode
	// Config marks a configuration file as EL packages ship them, %config(noreplace): a
	// copy changed on the host is kept on upgrade (the new one lands as .rpmnew) and
	// saved as .rpmsave on removal.
	Config bool
	// Owner and Group are user and group names (default root); rpm resolves them when it
	// installs the package, so a user a Debian package made (redis) may be named.
	Owner, Group string
}

// Dir is one directory a package owns.
type Dir struct {
	Mode         os.FileMode // default 0755
	Owner, Group string      // default root
}

// attr is %attr(MODE,OWNER,GROUP) for a spec file's %files line, the special bits
// (setgid on a shared directory) included.
func attr(mode os.FileMode, owner, group string) string {
	or := func(s string) string {
		if s == "" {
			return "root"
		}
		return s
	}
	m := uint32(mode.Perm())
	for bit, octal := range map[os.FileMode]uint32{os.ModeSetuid: 0o4000, os.ModeSetgid: 0o2000, os.ModeSticky: 0o1000} {
		if mode&bit != 0 {
			m |= octal
		}
	}
	return fmt.Sprintf("%%attr(%04o,%s,%s) ", m, or(owner), or(group))
}

// EVRA is the package's EPOCH:VERSION-RELEASE.noarch, as rpm_exact takes it.
func (p Package) EVRA() string {
	return fmt.Sprintf("%d:%s-%s.noarch", p.Epoch, p.Version, p.release())
}

// NEVRA is NAME-EPOCH:VERSION-RELEASE.noarch.
func (p Package) NEVRA() string { return p.Name + "-" + p.EVRA() }

func (p Package) release() string {
	if p.Release == "" {
		return "1"
	}
	return p.Release
}

// BuildRepo builds the packages with rpmbuild into a new directory and adds createrepo_c
// metadata; the directory is removed when the test ends.
func BuildRepo(tb testing.TB, pkgs ...Package) string {
	tb.Helper()
	dir := tb.TempDir()
	if err := BuildRepoDir(dir, pkgs...); err != nil {
		tb.Fatalf("%v", err)
	}
	return dir
}

var repos sync.Map // package-set key -> *repoOnce

type repoOnce struct {
	once sync.Once
	dir  string
	err  error
}

// Repo builds a repository of pkgs once per test process and returns its directory; tests
// that ask for the same packages share it. It is left in the temporary directory.
func Repo(tb testing.TB, pkgs ...Package) string {
	tb.Helper()
	key, err := json.Marshal(pkgs)
	if err != nil {
		tb.Fatal(err)
	}
	v, _ := repos.LoadOrStore(string(key), &repoOnce{})
	r := v.(*repoOnce)
	r.once.Do(func() {
		if r.dir, r.err = newBuildDir("repo"); r.err == nil {
			r.err = BuildRepoDir(r.dir, pkgs...)
		}
	})
	if r.err != nil {
		tb.Fatalf("build fixture repository: %v", r.err)
	}
	return r.dir
}

// BuildRepoDir builds the packages into repoDir (created if missing) and writes its
// repository metadata.
func BuildRepoDir(repoDir string, pkgs ...Package) error {
	if err := os.MkdirAll(repoDir, 0o755); err != nil {
		return err
	}
	for _, p := range pkgs {
		if err := buildRPM(repoDir, p); err != nil {
			return err
		}
	}
	if out, err := exec.Command("createrepo_c", "--quiet", repoDir).CombinedOutput(); err != nil {
		return fmt.Errorf("createrepo_c %s: %w\n%s", repoDir, err, out)
	}
	return nil
}

func buildRPM(repoDir string, p Package) error {
	top, err := os.MkdirTemp("", "richt-rpmbuild-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(top)
	root := filepath.Join(top, "SOURCES", "root")
	if err := os.MkdirAll(root, 0o755); err != nil { // also for a package without files
		return err
	}
	paths := make([]string, 0, len(p.Files))
	for path, f := range p.Files {
		if !strings.HasPrefix(path, "/") {
			return fmt.Errorf("package %s: file path %q is not absolute", p.Name, path)
		}
		dest := filepath.Join(root, path)
		if err := os.MkdirAll(filepath.Dir(dest), 0o755); err != nil {
			return err
		}
		mode := f.Mode
		if mode == 0 {
			mode = 0o644
		}
		if err := os.WriteFile(dest, []byte(f.Content), mode); err != nil {
			return err
		}
		line := path
		if f.Config {
			line = "%config(noreplace) " + line
		}
		if f.Owner != "" || f.Group != "" {
			line = attr(mode, f.Owner, f.Group) + line
		}
		paths = append(paths, line)
	}
	for path, d := range p.Dirs {
		if !strings.HasPrefix(path, "/") {
			return fmt.Errorf("package %s: directory path %q is not absolute", p.Name, path)
		}
		if err := os.MkdirAll(filepath.Join(root, path), 0o755); err != nil {
			return err
		}
		mode := d.Mode
		if mode == 0 {
			mode = 0o755
		}
		paths = append(paths, "%dir "+attr(mode, d.Owner, d.Group)+path)
	}
	spec, err := p.spec(paths)
	if err != nil {
		return err
	}
	specPath := filepath.Join(top, p.Name+".spec")
	if err := os.WriteFile(specPath, []byte(spec), 0o644); err != nil {
		return err
	}
	cmd := exec.Command("rpmbuild", "-bb", "--quiet",
		"--define", "_topdir "+top,
		"--define", "_rpmdir "+repoDir,
		"--define", "_build_name_fmt %%{NAME}-%%{VERSION}-%%{RELEASE}.%%{ARCH}.rpm",
		specPath)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("rpmbuild %s: %w\n%s", p.NEVRA(), err, out)
	}
	return nil
}

// spec is the package's spec file, listing paths (%files lines) in %files.
func (p Package) spec(paths []string) (string, error) {
	scriptlets, err := p.scriptlets()
	if err != nil {
		return "", err
	}
	sort.Strings(paths)
	var spec strings.Builder
	fmt.Fprintf(&spec, "Name: %s\nVersion: %s\nRelease: %s\n", p.Name, p.Version, p.release())
	if p.Epoch > 0 {
		fmt.Fprintf(&spec, "Epoch: %d\n", p.Epoch)
	}
	summary := p.Summary
	if summary == "" {
		summary = "richt testenv fixture " + p.Name
	}
	fmt.Fprintf(&spec, "Summary: %s\nLicense: MIT\nBuildArch: noarch\nAutoReqProv: no\n", summary)
	for _, r := range p.Requires {
		fmt.Fprintf(&spec, "Requires: %s\n", r)
	}
	if len(p.SystemdUnits) > 0 {
		// What EL's %{?systemd_requires} adds.
		spec.WriteString("Requires(post): systemd\nRequires(preun): systemd\nRequires(postun): systemd\n")
	}
	for _, r := range p.Provides {
		fmt.Fprintf(&spec, "Provides: %s\n", r)
	}
	// A fixture may ship a real ELF object (fixtures.LibFix) in its noarch package.
	spec.WriteString("%global debug_package %{nil}\n%global __os_install_post %{nil}\n%define _build_id_links none\n%global _binaries_in_noarch_packages_terminate_build 0\n")
	spec.WriteString("\n%description\nFixture package built by richt testenv.\n")
	spec.WriteString("\n%install\nmkdir -p %{buildroot}\ncp -a %{_sourcedir}/root/. %{buildroot}/\n")
	for _, name := range scriptletSections {
		if s, ok := scriptlets[name]; ok {
			fmt.Fprintf(&spec, "\n%%%s\n%s\n", name, s)
		}
	}
	spec.WriteString("\n%files\n")
	for _, path := range paths {
		spec.WriteString(path + "\n")
	}
	return spec.String(), nil
}

var scriptletSections = []string{"pre", "post", "preun", "postun"}

// updateHelper is the program EL's systemd macros call; richt-el-base ships one.
const updateHelper = "/usr/lib/systemd/systemd-update-helper"

// scriptlets merges Scriptlets with the sections SystemdUnits stands for. A section set
// both ways is refused rather than joined: on EL the packager places the macro among
// their own commands, and an order guessed here would test a package nobody wrote.
func (p Package) scriptlets() (map[string]string, error) {
	for name := range p.Scriptlets {
		if !slices.Contains(scriptletSections, name) {
			return nil, fmt.Errorf("package %s: scriptlet %q is not one of %s", p.Name, name, strings.Join(scriptletSections, ", "))
		}
	}
	if len(p.SystemdUnits) == 0 {
		if p.NoRestart {
			return nil, fmt.Errorf("package %s: NoRestart is set but SystemdUnits is empty", p.Name)
		}
		return p.Scriptlets, nil
	}
	for _, u := range p.SystemdUnits {
		if !validUnitName(u) {
			return nil, fmt.Errorf("package %s: %q is not a systemd unit name", p.Name, u)
		}
	}
	units := strings.Join(p.SystemdUnits, " ")
	macro := func(test, command string) string {
		return fmt.Sprintf("if [ $1 %s ] && [ -x %s ]; then\n    %s %s %s || :\nfi", test, updateHelper, updateHelper, command, units)
	}
	systemd := map[string]string{
		"post":  macro("-eq 1", "install-system-units"),
		"preun": macro("-eq 0", "remove-system-units"),
	}
	if !p.NoRestart {
		systemd["postun"] = macro("-ge 1", "mark-restart-system-units")
	}
	merged := make(map[string]string, len(p.Scriptlets)+len(systemd))
	for name, s := range p.Scriptlets {
		merged[name] = s
	}
	for name, s := range systemd {
		if _, dup := p.Scriptlets[name]; dup {
			return nil, fmt.Errorf("package %s: %%%s is both in Scriptlets and made by SystemdUnits; put the commands in one place", p.Name, name)
		}
		merged[name] = s
	}
	return merged, nil
}

// validUnitName accepts what systemd accepts in a unit name, which keeps the names safe
// as words in the scriptlets' shell.
func validUnitName(u string) bool {
	dot := strings.LastIndexByte(u, '.')
	if dot <= 0 || dot == len(u)-1 || len(u) > 255 {
		return false
	}
	for _, r := range u {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune(":-_.\\@", r)) {
			return false
		}
	}
	return true
}

// AddRepo copies a repository directory into the target and writes its .repo file,
// /etc/yum.repos.d/ID.repo, pointing at it. metadata_expire=0 makes DNF see changes made
// while the target runs.
func (t *Target) AddRepo(ctx context.Context, id, repoDir string) error {
	dir := "/srv/richt-repos/" + id
	if err := t.CopyDir(ctx, repoDir, dir); err != nil {
		return err
	}
	repo := fmt.Sprintf("[%s]\nname=richt testenv %s\nbaseurl=file://%s\nenabled=1\ngpgcheck=0\nmetadata_expire=0\n", id, id, dir)
	return t.WriteFile(ctx, "/etc/yum.repos.d/"+id+".repo", []byte(repo), 0o644)
}
