// Package ee builds the collection's execution environment (EE) image from Debian's
// packages and runs jobs through it the way AWX and Ansible Automation Platform do:
// `ansible-runner transmit | ansible-runner worker | ansible-runner process`, each in a
// container of the image (docs/ee.md).
//
// The image follows execution-environment.yml at the repository root and the collection's
// own meta/execution-environment.yml: ReadDefinition and CollectionRequirements turn their
// dependencies into Debian packages through one table, and Ensure builds the image with
// exactly those packages plus the collection installed from its own tarball, and gives it
// its content-keyed tag only once the built versions meet the definition.
package ee

import (
	"archive/tar"
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
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
	// Latest also tags the image Repository:latest (make ee does, for AWX and
	// ansible-navigator).
	Latest bool
	// Log receives progress lines (nil: none).
	Log io.Writer
}

// Image is a built or reused execution environment.
type Image struct {
	// Tag is the image's name and content key (Tag), the only tag Ensure ever reuses.
	Tag string
	// Built is false when an image with the same content key already existed.
	Built bool
	// BuildTime is how long the build took (zero when reused).
	BuildTime time.Duration
	// Size in bytes, as docker reports it.
	Size int64
	// Versions of the requirements' Debian packages: found by the build, or recorded in
	// the image's label (versionsLabel) when reused.
	Versions map[string]string
	// Requirements are what the definition and the collection's own metadata asked for.
	Requirements Requirements
}

// Summary is what make ee prints about the image: its tag, whether it was built (and how
// long that took) or reused, its size, and its packages' versions.
func (img Image) Summary() string {
	how := "reused (same content key; nothing built)"
	if img.Built {
		how = fmt.Sprintf("built in %.0f s", img.BuildTime.Seconds())
	}
	s := fmt.Sprintf("ee: %s: %s, size %.0f MB (%d bytes)\n", img.Tag, how, float64(img.Size)/1e6, img.Size)
	var v []string
	for _, p := range img.Requirements.Packages {
		if got, ok := img.Versions[p]; ok {
			v = append(v, p+" "+got)
		}
	}
	if len(v) > 0 {
		s += "ee: " + strings.Join(v, ", ") + "\n"
	}
	return s
}

// Collection is what a collection tarball holds, as far as the image is concerned.
type Collection struct {
	// Name is the collection's namespace.name, from MANIFEST.json.
	Name string
	// Version is the collection's version, from MANIFEST.json.
	Version string
	// Digest is a hash of the members' names, modes, link targets and contents, not of
	// the archive: ansible-galaxy writes build times into it, so two builds of one commit
	// differ as files but not here.
	Digest string
	// Requirements are what the collection's own meta/execution-environment.yml (or its
	// requirements.txt and bindep.txt) asks of the image (CollectionRequirements).
	Requirements Requirements
}

// maxMetaFile is the largest member ReadCollection keeps for CollectionRequirements:
// requirements files are small, the collection's binaries are not.
const maxMetaFile = 64 << 10

// ReadCollection reads a collection tarball's MANIFEST.json, digests its content and reads
// what the collection asks of the image (CollectionRequirements).
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
	small := map[string][]byte{}
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return Collection{}, fmt.Errorf("collection tarball %s: %w", path, err)
		}
		fmt.Fprintf(h, "%s\x00%c\x00%o\x00%s\x00", hdr.Name, hdr.Typeflag, hdr.Mode, hdr.Linkname)
		name := strings.TrimPrefix(hdr.Name, "./")
		if hdr.Typeflag != tar.TypeReg || hdr.Size > maxMetaFile {
			if _, err := io.Copy(h, tr); err != nil {
				return Collection{}, fmt.Errorf("collection tarball %s: %w", path, err)
			}
			continue
		}
		data, err := io.ReadAll(tr)
		if err != nil {
			return Collection{}, fmt.Errorf("collection tarball %s: %s: %w", path, name, err)
		}
		h.Write(data)
		small[name] = data
		if name == "MANIFEST.json" {
			var m struct {
				Info struct{ Namespace, Name, Version string } `json:"collection_info"`
			}
			if err := json.Unmarshal(data, &m); err != nil {
				return Collection{}, fmt.Errorf("collection tarball %s: MANIFEST.json: %w", path, err)
			}
			c.Name, c.Version = m.Info.Namespace+"."+m.Info.Name, m.Info.Version
		}
	}
	if c.Name == "" || c.Version == "" {
		return Collection{}, fmt.Errorf("collection tarball %s: no MANIFEST.json naming the collection and its version", path)
	}
	c.Digest = hex.EncodeToString(h.Sum(nil))
	c.Requirements, err = CollectionRequirements(func(name string) ([]byte, bool) {
		data, ok := small[name]
		return data, ok
	})
	if err != nil {
		return Collection{}, fmt.Errorf("collection tarball %s: %w", path, err)
	}
	return c, nil
}

// Tag is the content-keyed tag of the image: a hash of the build recipe (build.sh), the
// suite, everything in the requirements (packages, their version specifiers, collections)
// and the collection's content. A change to any of them gives a new tag. What the key does
// not cover is the state of Debian's archive: a suite's package updates build a different
// image under the same key only when the image is built again (it is not while one with
// the key exists); the recorded versions (versionsLabel) are checked again on reuse.
func Tag(suite string, req Requirements, c Collection) string {
	// encoding/json writes map keys sorted: one key for one content.
	key, err := json.Marshal(struct {
		Script, Suite string
		Requirements  Requirements
		Collection    string
	}{string(buildScript), suite, req, c.Digest})
	if err != nil {
		panic(fmt.Sprintf("ee: content key: %v", err)) // strings, slices and a map of strings always encode
	}
	sum := sha256.Sum256(key)
	return Repository + ":" + c.Version + "-" + hex.EncodeToString(sum[:])[:12]
}

// versionsLabel is the image label build.sh records the requested packages' versions in
// ("NAME=VERSION NAME=VERSION"): a reused image is held to the requirements with it.
const versionsLabel = "org.richt.ee.versions"

// inspectFormat asks docker image inspect for the size and the versions label.
const inspectFormat = `{{.Size}} {{index .Config.Labels "` + versionsLabel + `"}}`

var suiteName = regexp.MustCompile(`^[a-z][a-z0-9.-]*$`)

// Ensure returns the execution environment for the definition and the collection tarball,
// building it from Debian packages when no image with its content key exists. Builds are
// serialised across processes with a lock file, so parallel tests build once. Building
// needs root, mmdebstrap and docker (.ci/setup-host installs them).
func Ensure(ctx context.Context, o Options) (Image, error) {
	return builder{docker: runDocker, build: runBuild, lock: filepath.Join(os.TempDir(), "richt-ee-image.lock")}.ensure(ctx, o)
}

// builder is Ensure with its side effects as fields: docker commands, the build script,
// the lock file's path.
type builder struct {
	// docker runs docker with the arguments and returns its standard output.
	docker func(ctx context.Context, args ...string) ([]byte, error)
	// build runs build.sh with the arguments and returns its output.
	build func(ctx context.Context, args ...string) ([]byte, error)
	lock  string
}

func (b builder) ensure(ctx context.Context, o Options) (Image, error) {
	logf := func(f string, a ...any) {
		if o.Log != nil {
			fmt.Fprintf(o.Log, f+"\n", a...)
		}
	}
	suite := o.Suite
	if suite == "" {
		suite = Suite
	}
	if !suiteName.MatchString(suite) {
		return Image{}, fmt.Errorf("suite %q: not a Debian suite name", suite)
	}
	def, err := ReadDefinition(o.Definition)
	if err != nil {
		return Image{}, err
	}
	coll, err := ReadCollection(o.Collection)
	if err != nil {
		return Image{}, err
	}
	for _, name := range def.Collections {
		if name != coll.Name {
			return Image{}, fmt.Errorf("%s installs %s, the tarball %s holds %s", o.Definition, name, o.Collection, coll.Name)
		}
	}
	req, err := def.Merge(coll.Requirements)
	if err != nil {
		return Image{}, err
	}
	img := Image{Tag: Tag(suite, req, coll), Requirements: req}
	if !b.reuse(ctx, &img, logf) {
		if err := b.buildChecked(ctx, &img, suite, o, logf); err != nil {
			return Image{}, err
		}
	}
	if o.Latest {
		if _, err := b.docker(ctx, "tag", img.Tag, Repository+":latest"); err != nil {
			return Image{}, err
		}
	}
	return img, nil
}

// buildChecked builds the image under lock. The build tags it "unchecked-…", which is never
// reused; only an image whose versions meet the requirements gets the final tag, so a
// process that dies between build and check leaves nothing a later call would trust.
func (b builder) buildChecked(ctx context.Context, img *Image, suite string, o Options, logf func(string, ...any)) error {
	unlock, err := lockFile(ctx, b.lock)
	if err != nil {
		return err
	}
	defer unlock()
	// Another process may have built it while this one waited for the lock.
	if b.reuse(ctx, img, logf) {
		return nil
	}
	tarball, err := filepath.Abs(o.Collection)
	if err != nil {
		return fmt.Errorf("collection tarball: %w", err)
	}
	key := strings.TrimPrefix(img.Tag, Repository+":")
	unchecked := Repository + ":unchecked-" + key
	req := img.Requirements
	logf("ee: building %s from Debian %s: %s", img.Tag, suite, strings.Join(req.Packages, ", "))
	start := time.Now()
	out, err := b.build(ctx, suite, unchecked, strings.Join(req.Packages, ","), tarball)
	if err != nil {
		return fmt.Errorf("build image %s from Debian %s packages (needs root, mmdebstrap and docker): %w\n%s", img.Tag, suite, err, tail(string(out), 30))
	}
	buildTime := time.Since(start)
	versions := builtVersions(string(out))
	if err := checkVersions(req, versions); err != nil {
		err = fmt.Errorf("%s: Debian %s does not meet %s: %w", img.Tag, suite, o.Definition, err)
		if _, rmErr := b.docker(ctx, "image", "rm", unchecked); rmErr != nil {
			// Left under its unchecked tag, which nothing reuses.
			err = fmt.Errorf("%w (and removing %s: %v)", err, unchecked, rmErr)
		}
		return err
	}
	if _, err := b.docker(ctx, "tag", unchecked, img.Tag); err != nil {
		return err
	}
	if _, err := b.docker(ctx, "image", "rm", unchecked); err != nil {
		logf("ee: %s stays tagged %s too: %v", img.Tag, unchecked, err)
	}
	if !b.reuse(ctx, img, logf) {
		return fmt.Errorf("image %s was built and tagged but docker cannot inspect it", img.Tag)
	}
	img.Built, img.BuildTime, img.Versions = true, buildTime, versions
	return nil
}

// reuse fills in the image when one with its tag exists and the versions it records meet
// the requirements.
func (b builder) reuse(ctx context.Context, img *Image, logf func(string, ...any)) bool {
	out, err := b.docker(ctx, "image", "inspect", "--format", inspectFormat, img.Tag)
	if err != nil {
		return false
	}
	size, label, _ := strings.Cut(strings.TrimSpace(string(out)), " ")
	n, err := strconv.ParseInt(size, 10, 64)
	if err != nil {
		logf("ee: %s: docker reports size %q; building it again", img.Tag, size)
		return false
	}
	versions := parseVersionsLabel(label)
	if err := checkVersions(img.Requirements, versions); err != nil {
		logf("ee: %s exists, but the versions it records do not meet the requirements (%v); building it again", img.Tag, err)
		return false
	}
	img.Size, img.Versions = n, versions
	return true
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

// parseVersionsLabel reads the versions label ("NAME=VERSION NAME=VERSION").
func parseVersionsLabel(label string) map[string]string {
	v := map[string]string{}
	for _, f := range strings.Fields(label) {
		if name, version, ok := strings.Cut(f, "="); ok && name != "" && version != "" {
			v[name] = version
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

// runDocker runs docker and returns its standard output; an error carries its standard
// error.
func runDocker(ctx context.Context, args ...string) ([]byte, error) {
	var stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, "docker", args...)
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return out, fmt.Errorf("docker %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return out, nil
}

// runBuild writes build.sh to a temporary file and runs it with the arguments.
func runBuild(ctx context.Context, args ...string) ([]byte, error) {
	f, err := os.CreateTemp("", "richt-ee-build-*.sh")
	if err != nil {
		return nil, fmt.Errorf("write image build script: %w", err)
	}
	defer os.Remove(f.Name())
	if _, err := f.Write(buildScript); err != nil {
		f.Close()
		return nil, fmt.Errorf("write image build script: %w", err)
	}
	if err := f.Close(); err != nil {
		return nil, fmt.Errorf("write image build script: %w", err)
	}
	return runScript(ctx, f.Name(), args...)
}

// scriptWaitDelay is how long a cancelled build has after SIGTERM to clean up (build.sh
// removes its ~200 MB work directory; mmdebstrap and docker build stop) before it is
// killed.
const scriptWaitDelay = 60 * time.Second

// runScript runs a bash script in a process group of its own and returns its combined
// output. Cancelling ctx sends SIGTERM to the whole group, not only to bash: mmdebstrap and
// docker build are its children and would otherwise run on as orphans, and bash's TERM
// trap (its cleanup) would never run under SIGKILL. Whatever is left after scriptWaitDelay
// is killed.
func runScript(ctx context.Context, script string, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, "bash", append([]string{script}, args...)...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM) }
	cmd.WaitDelay = scriptWaitDelay
	out, err := cmd.CombinedOutput()
	if ctx.Err() != nil && cmd.Process != nil {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) // ESRCH when all ended as asked
	}
	return out, err
}

// lockPoll is how often lockFile tries a lock another process holds.
const lockPoll = 250 * time.Millisecond

// lockFile takes an exclusive flock on path, waiting while another process holds it, until
// ctx ends: a blocking flock could not be cancelled.
func lockFile(ctx context.Context, path string) (func(), error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open lock %s: %w", path, err)
	}
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			return func() { _ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN); f.Close() }, nil
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) && !errors.Is(err, syscall.EINTR) {
			f.Close()
			return nil, fmt.Errorf("lock %s: %w", path, err)
		}
		select {
		case <-ctx.Done():
			f.Close()
			return nil, fmt.Errorf("wait for lock %s (another process is building the image): %w", path, ctx.Err())
		case <-time.After(lockPoll):
		}
	}
}

func tail(s string, n int) string {
	l := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(l) > n {
		l = l[len(l)-n:]
	}
	return strings.Join(l, "\n")
}
