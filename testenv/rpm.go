package testenv

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
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
	// Scriptlets by RPM section name without %: "pre", "post", "preun", "postun". rpmbuild
	// makes each require /bin/sh; see ShellProvider for targets whose RPM database has none.
	Scriptlets map[string]string
	// Requires and Provides are written as RPM dependency tags, one each: "acc-lib = 1.0-1".
	Requires []string
	Provides []string
}

// ShellProvider is a package with no files that provides /bin/sh. The targets' RPM
// databases start empty (the shell comes from a Debian package), so a package with any
// scriptlet cannot be installed until something in the database provides /bin/sh; put
// this package in the same repository and DNF pulls it in.
func ShellProvider() Package {
	return Package{Name: "richt-sh", Version: "1.0", Provides: []string{"/bin/sh"},
		Summary: "Provides /bin/sh for fixture scriptlets (the shell itself is Debian's)"}
}

// File is one packaged file.
type File struct {
	Content string
	Mode    os.FileMode
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
		if r.dir, r.err = os.MkdirTemp("", "richt-testenv-repo-"); r.err == nil {
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
		paths = append(paths, path)
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
	for _, r := range p.Provides {
		fmt.Fprintf(&spec, "Provides: %s\n", r)
	}
	spec.WriteString("%global debug_package %{nil}\n%global __os_install_post %{nil}\n%define _build_id_links none\n")
	spec.WriteString("\n%description\nFixture package built by richt testenv.\n")
	spec.WriteString("\n%install\nmkdir -p %{buildroot}\ncp -a %{_sourcedir}/root/. %{buildroot}/\n")
	for _, name := range []string{"pre", "post", "preun", "postun"} {
		if s, ok := p.Scriptlets[name]; ok {
			fmt.Fprintf(&spec, "\n%%%s\n%s\n", name, s)
		}
	}
	spec.WriteString("\n%files\n")
	for _, path := range paths {
		spec.WriteString(path + "\n")
	}
	specPath := filepath.Join(top, p.Name+".spec")
	if err := os.WriteFile(specPath, []byte(spec.String()), 0o644); err != nil {
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
