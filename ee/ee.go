// Package ee builds the collection's execution environment (EE) image from Debian's
// packages and runs jobs through it the way AWX and Ansible Automation Platform do:
// `ansible-runner transmit | ansible-runner worker | ansible-runner process`, each in a
// container of the image (docs/ee.md).
//
// The image follows execution-environment.yml at the repository root: ReadDefinition turns
// its dependencies into Debian packages through one table, and Ensure builds the image with
// exactly those packages plus the collection installed from its own tarball.
package ee

import (
	"archive/tar"
	"bufio"
	"compress/gzip"
	"context"
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"
)

//go:embed build.sh
var buildScript []byte

// Suite is the Debian suite the image is built from: trixie's ansible-core (2.19) is the
// one execution-environment.yml's ansible_core specifier accepts.
const Suite = "trixie"

// Repository is the image's name; tags are content keys (Tag).
const Repository = "richt-services-ee"

// Options say what to build.
type Options struct {
	// Definition is execution-environment.yml.
	Definition string
	// Collection is the collection's tarball (make collection).
	Collection string
	// Suite overrides Suite (the built versions must still meet the definition).
	Suite string
	// Log receives progress lines (nil: none).
	Log io.Writer
}

// Image is a built or reused execution environment.
type Image struct {
	Tag string
	// Built is false when an image with the same content key already existed.
	Built     bool
	BuildTime time.Duration
	// Size in bytes, as docker reports it.
	Size int64
	// Versions of the definition's Debian packages (only when Built).
	Versions map[string]string
	// Requirements are what the definition asked for.
	Requirements Requirements
}

// Collection is what a collection tarball holds, as far as the image is concerned.
type Collection struct {
	Name, Version string
	// Digest is a hash of the members' names, modes, link targets and contents, not of
	// the archive: ansible-galaxy writes build times into it, so two builds of one commit
	// differ as files but not here.
	Digest string
}

// ReadCollection reads a collection tarball's MANIFEST.json and digests its content.
func ReadCollection(path string) (Collection, error) {
	f, err := os.Open(path)
	if err != nil {
		return Collection{}, fmt.Errorf("collection tarball: %w", err)
	}
	defer f.Close()
	gz, err := gzip.NewReader(f)
	if err != nil {
		return Collection{}, fmt.Errorf("collection tarball %s: %w", path, err)
	}
	tr := tar.NewReader(gz)
	h := sha256.New()
	var c Collection
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return Collection{}, fmt.Errorf("collection tarball %s: %w", path, err)
		}
		fmt.Fprintf(h, "%s\x00%c\x00%o\x00%s\x00", hdr.Name, hdr.Typeflag, hdr.Mode, hdr.Linkname)
		var r io.Reader = tr
		if strings.TrimPrefix(hdr.Name, "./") == "MANIFEST.json" {
			data, err := io.ReadAll(tr)
			if err != nil {
				return Collection{}, fmt.Errorf("collection tarball %s: MANIFEST.json: %w", path, err)
			}
			var m struct {
				Info struct{ Namespace, Name, Version string } `json:"collection_info"`
			}
			if err := json.Unmarshal(data, &m); err != nil {
				return Collection{}, fmt.Errorf("collection tarball %s: MANIFEST.json: %w", path, err)
			}
			c.Name, c.Version = m.Info.Namespace+"."+m.Info.Name, m.Info.Version
			r = strings.NewReader(string(data))
		}
		if _, err := io.Copy(h, r); err != nil {
			return Collection{}, fmt.Errorf("collection tarball %s: %w", path, err)
		}
	}
	if c.Name == "" || c.Version == "" {
		return Collection{}, fmt.Errorf("collection tarball %s: no MANIFEST.json naming the collection and its version", path)
	}
	c.Digest = hex.EncodeToString(h.Sum(nil))
	return c, nil
}

// Tag is the content-keyed tag of the image for suite, the definition's packages and the
// collection: a change to the build recipe, the packages or the collection gives a new tag,
// so a stale image is never reused.
func Tag(suite string, req Requirements, c Collection) string {
	h := sha256.New()
	for _, part := range []string{string(buildScript), suite, strings.Join(req.Packages, ","), c.Digest} {
		h.Write([]byte(part))
		h.Write([]byte{0})
	}
	return Repository + ":" + c.Version + "-" + hex.EncodeToString(h.Sum(nil))[:12]
}

// Ensure returns the execution environment for the definition and the collection tarball,
// building it from Debian packages when no image with its content key exists. Builds are
// serialised across processes with a lock file, so parallel tests build once. Building
// needs root, mmdebstrap and docker (.ci/setup-host installs them).
func Ensure(ctx context.Context, o Options) (Image, error) {
	logf := func(f string, a ...any) {
		if o.Log != nil {
			fmt.Fprintf(o.Log, f+"\n", a...)
		}
	}
	suite := o.Suite
	if suite == "" {
		suite = Suite
	}
	req, err := ReadDefinition(o.Definition)
	if err != nil {
		return Image{}, err
	}
	coll, err := ReadCollection(o.Collection)
	if err != nil {
		return Image{}, err
	}
	for _, name := range req.Collections {
		if name != coll.Name {
			return Image{}, fmt.Errorf("%s installs %s, the tarball %s holds %s", o.Definition, name, o.Collection, coll.Name)
		}
	}
	img := Image{Tag: Tag(suite, req, coll), Requirements: req}
	if size, ok := imageSize(ctx, img.Tag); ok {
		img.Size = size
		return img, nil
	}
	unlock, err := lockFile(filepath.Join(os.TempDir(), "richt-ee-image.lock"))
	if err != nil {
		return Image{}, err
	}
	defer unlock()
	if size, ok := imageSize(ctx, img.Tag); ok {
		img.Size = size
		return img, nil
	}
	script := filepath.Join(os.TempDir(), "richt-ee-build-"+strings.ReplaceAll(strings.TrimPrefix(img.Tag, Repository+":"), ".", "_")+".sh")
	if err := os.WriteFile(script, buildScript, 0o755); err != nil {
		return Image{}, fmt.Errorf("write image build script: %w", err)
	}
	defer os.Remove(script)
	tarball, err := filepath.Abs(o.Collection)
	if err != nil {
		return Image{}, fmt.Errorf("collection tarball: %w", err)
	}
	logf("ee: building %s from Debian %s: %s and %s %s", img.Tag, suite, strings.Join(req.Packages, ", "), coll.Name, coll.Version)
	start := time.Now()
	out, err := exec.CommandContext(ctx, "bash", script, suite, img.Tag, strings.Join(req.Packages, ","), tarball).CombinedOutput()
	img.BuildTime = time.Since(start)
	if err != nil {
		return Image{}, fmt.Errorf("build image %s from Debian %s packages (needs root, mmdebstrap and docker): %w\n%s", img.Tag, suite, err, tail(string(out), 30))
	}
	img.Built = true
	img.Versions = builtVersions(string(out))
	if err := checkVersions(req, img.Versions); err != nil {
		// An image that breaks the definition must not be reused by the next call.
		_ = exec.Command("docker", "image", "rm", "-f", img.Tag).Run()
		return Image{}, fmt.Errorf("%s: Debian %s does not meet %s: %w", img.Tag, suite, o.Definition, err)
	}
	size, ok := imageSize(ctx, img.Tag)
	if !ok {
		return Image{}, fmt.Errorf("image %s was built but docker cannot inspect it", img.Tag)
	}
	img.Size = size
	return img, nil
}

// builtVersions reads build.sh's "package NAME VERSION" lines.
func builtVersions(out string) map[string]string {
	v := map[string]string{}
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		if f := strings.Fields(sc.Text()); len(f) == 3 && f[0] == "package" {
			v[f[1]] = f[2]
		}
	}
	return v
}

// checkVersions holds the built package versions to the definition's specifiers; every
// package must have been installed.
func checkVersions(req Requirements, versions map[string]string) error {
	var problems []string
	for _, pkg := range req.Packages {
		got, ok := versions[pkg]
		if !ok {
			problems = append(problems, pkg+" is not installed")
			continue
		}
		spec := req.Constraints[pkg]
		if spec == "" {
			continue
		}
		ok, err := Satisfies(got, spec)
		if err != nil {
			return err
		}
		if !ok {
			problems = append(problems, fmt.Sprintf("%s is %s, the definition wants %s", pkg, got, spec))
		}
	}
	sort.Strings(problems)
	if len(problems) > 0 {
		return fmt.Errorf("%s", strings.Join(problems, "; "))
	}
	return nil
}

func imageSize(ctx context.Context, tag string) (int64, bool) {
	out, err := exec.CommandContext(ctx, "docker", "image", "inspect", "--format", "{{.Size}}", tag).Output()
	if err != nil {
		return 0, false
	}
	n, err := strconv.ParseInt(strings.TrimSpace(string(out)), 10, 64)
	return n, err == nil
}

func lockFile(path string) (func(), error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open lock %s: %w", path, err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		f.Close()
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	return func() { _ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN); f.Close() }, nil
}

func tail(s string, n int) string {
	l := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(l) > n {
		l = l[len(l)-n:]
	}
	return strings.Join(l, "\n")
}
