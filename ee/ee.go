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
//
// The image is built in two steps, so that a change to the collection (nearly every
// commit) costs seconds rather than a ~100 s bootstrap: a base image (BaseTag; build.sh,
// mmdebstrap) holds the Debian packages, and the EE image (Tag) adds the collection to it
// with a thin docker build (layerDockerfile). Older keys of both are removed once a new
// EE image is tagged (prune).
package ee

import (
	"archive/tar"
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/richt/services/pkg/lock"
)

// buildScript builds the base image (build.sh's header says how).
//
//go:embed build.sh
var buildScript []byte

// Suite is the Debian suite the image is built from: trixie's ansible-core (2.19) is the
// one execution-environment.yml's ansible_core specifier accepts.
const Suite = "trixie"

// Repository is the EE image's name; tags are the collection's version and a content key
// (Tag).
const Repository = "richt-services-ee"

// BaseRepository is the base image's name; tags are content keys (BaseTag).
const BaseRepository = "richt-services-ee-base"

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
	// Tag is the image's name and content key (Tag). Ensure reuses only final tags (this
	// one and Base), never an unchecked one.
	Tag string
	// Base is the base image's name and content key (BaseTag), the image Tag is built on.
	Base string
	// Built is false when an image with the same content key already existed.
	Built bool
	// BuildTime is how long the build took, the base's included when it was built too
	// (zero when reused).
	BuildTime time.Duration
	// BaseBuilt is true when the base image was built as well (false: it existed, and only
	// the collection's layer was built, or nothing was).
	BaseBuilt bool
	// BaseBuildTime is how long the base's build took (zero when reused).
	BaseBuildTime time.Duration
	// Size in bytes, as docker reports it (the base's layers included).
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
	switch {
	case img.Built && img.BaseBuilt:
		how = fmt.Sprintf("built in %.0f s (base %s built in %.0f s)", img.BuildTime.Seconds(), img.Base, img.BaseBuildTime.Seconds())
	case img.Built:
		how = fmt.Sprintf("built in %.0f s (the collection's layer on base %s, reused)", img.BuildTime.Seconds(), img.Base)
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

// BaseTag is the content-keyed tag of the base image: a hash of its build recipe
// (build.sh), the suite and the requirements' packages and version specifiers. What the key
// does not cover is the state of Debian's archive: a suite's package updates build a
// different image under the same key only when the image is built again (it is not while
// one with the key exists); the recorded versions (versionsLabel) are checked again on
// reuse.
func BaseTag(suite string, req Requirements) string {
	return BaseRepository + ":" + baseKey(suite, req)[:keyLen]
}

// keyLen is how many hex digits of a content key go into a tag.
const keyLen = 12

func baseKey(suite string, req Requirements) string {
	return contentKey(struct {
		Script, Suite string
		Packages      []string
		Constraints   map[string]string
	}{string(buildScript), suite, req.Packages, req.Constraints})
}

// Tag is the content-keyed tag of the EE image: the collection's version (made a valid
// docker tag: tagVersion) and a hash of the base's key (BaseTag), the layer's recipe
// (layerDockerfile), the collections the definition installs and the collection's content.
// A change to any of them gives a new tag; only a change to the base's part builds a new
// base.
func Tag(suite string, req Requirements, c Collection) string {
	base := baseKey(suite, req)
	key := contentKey(struct {
		Base, Dockerfile string
		Collections      []string
		Collection       string
	}{base, layerDockerfile(BaseRepository + ":" + base[:keyLen]), req.Collections, c.Digest})
	return Repository + ":" + tagVersion(c.Version) + "-" + key[:keyLen]
}

// contentKey hashes a value's JSON: encoding/json writes map keys sorted, so one content
// gives one key.
func contentKey(v any) string {
	data, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("ee: content key: %v", err)) // strings, slices and maps of strings always encode
	}
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}

// maxTag is the longest tag docker accepts.
const maxTag = 128

// tagVersion makes the collection's version part of a docker tag, which allows only
// [A-Za-z0-9_.-], may not start with '.' or '-' and has at most maxTag characters: any other
// character becomes '-' (semver's "1.0.0+b1" is "1.0.0-b1"), a leading '.' or '-' becomes
// '_', and the version is cut to leave room for "-" and the key.
func tagVersion(v string) string {
	b := []byte(v)
	for i, c := range b {
		ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '.' || c == '-'
		if !ok {
			b[i] = '-'
		}
	}
	if len(b) > 0 && (b[0] == '.' || b[0] == '-') {
		b[0] = '_'
	}
	if n := maxTag - 1 - keyLen; len(b) > n {
		b = b[:n]
	}
	return string(b)
}

// layerDockerfile is the recipe of the EE image's layer on the base: ansible-galaxy installs
// the collection from its own tarball, --offline (a collection without dependencies needs
// no Galaxy server), as root into the system-wide collections path, with HOME a scratch
// directory removed in the same RUN, so that no ~/.ansible is left in the image; then the
// image runs as runner again. The tarball itself stays in the COPY layer (some 9 MB):
// Debian 12's docker (20.10, the legacy builder) has no RUN --mount to avoid it. The base's
// labels (the versions label) are inherited.
func layerDockerfile(base string) string {
	return "FROM " + base + `
USER root
COPY collection.tar.gz /tmp/collection.tar.gz
RUN mkdir /tmp/galaxy-home && HOME=/tmp/galaxy-home ansible-galaxy collection install --offline -p /usr/share/ansible/collections /tmp/collection.tar.gz && rm -rf /tmp/galaxy-home /tmp/collection.tar.gz
USER 1000
`
}

// versionsLabel is the image label build.sh records the requested packages' versions in
// ("NAME=VERSION NAME=VERSION"): a reused image is held to the requirements with it. The EE
// image inherits it from its base.
const versionsLabel = "org.richt.ee.versions"

// collectionLabel is the EE image's label naming the collection it installs
// ("NAME VERSION DIGEST").
const collectionLabel = "org.richt.ee.collection"

// inspectFormat asks docker image inspect for the size and the versions label.
const inspectFormat = `{{.Size}} {{index .Config.Labels "` + versionsLabel + `"}}`

var suiteName = regexp.MustCompile(`^[a-z][a-z0-9.-]*$`)

// Ensure returns the execution environment for the definition and the collection tarball,
// building it when no image with its content key exists: the base from Debian packages when
// none with its key exists either, then the collection's layer on it. Builds are serialised
// across processes with a lock (package lock: in a directory root's alone, never through a
// link; not a name in the shared temporary directory, which any local user could have
// made first, as a link or a file held forever), so parallel tests build once. Building needs root,
// mmdebstrap and docker (.ci/setup-host installs them).
func Ensure(ctx context.Context, o Options) (Image, error) {
	return builder{docker: runDocker, dockerInput: runDockerInput, build: runBuild, lock: lock.In(lock.Dir())}.ensure(ctx, o)
}

// builder is Ensure with its side effects as fields: docker commands, the build script,
// the lock builds share.
type builder struct {
	// docker runs docker with the arguments and returns its standard output.
	docker func(ctx context.Context, args ...string) ([]byte, error)
	// dockerInput is docker with the input on its standard input (docker build's context).
	dockerInput func(ctx context.Context, input []byte, args ...string) ([]byte, error)
	// build runs build.sh with the arguments and returns its output.
	build func(ctx context.Context, args ...string) ([]byte, error)
	lock  lock.Func
}

// buildLock is the name of the lock builds share (lock.Func).
const buildLock = "ee-image"

// lockBuild takes the build lock, waiting while another process holds it, until ctx ends.
func (b builder) lockBuild(ctx context.Context) (func(), error) {
	release, err := b.lock(ctx, buildLock)
	if err != nil {
		return nil, fmt.Errorf("take the EE build lock (another process may be building the image): %w", err)
	}
	return release, nil
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
	img := Image{Tag: Tag(suite, req, coll), Base: BaseTag(suite, req), Requirements: req}
	if !b.reuse(ctx, &img, logf) {
		if err := b.buildChecked(ctx, &img, suite, coll, o, logf); err != nil {
			return Image{}, err
		}
	}
	if o.Latest && !img.Built { // buildChecked tagged a built one
		if err := b.tagLatest(ctx, &img, logf); err != nil {
			return Image{}, err
		}
	}
	return img, nil
}

// tagLatest tags the image Repository:latest. An image that only latest held (prune
// removed its own tag while latest kept it) would be left untagged, so it is removed
// (docker image rm without -f: not while a container uses it).
func (b builder) tagLatest(ctx context.Context, img *Image, logf func(string, ...any)) error {
	latest := Repository + ":latest"
	prev, inspectErr := b.docker(ctx, "image", "inspect", "--format", "{{.Id}} {{len .RepoTags}}", latest)
	if _, err := b.docker(ctx, "tag", img.Tag, latest); err != nil {
		return err
	}
	// Tagged twice (its key and latest) when it is img, or held by some other tag: kept.
	if id, n, _ := strings.Cut(strings.TrimSpace(string(prev)), " "); inspectErr == nil && id != "" && n == "1" {
		if _, err := b.docker(ctx, "image", "rm", id); err != nil {
			logf("ee: keeping %s, the image %s was before: %v", id, latest, err)
		} else {
			logf("ee: removed %s, the image %s was before", id, latest)
		}
	}
	return nil
}

// buildChecked builds the image under lock: the base first when none with its key exists,
// then the collection's layer. Each build tags its image "unchecked-…", which is never
// reused; only an image whose versions meet the requirements gets the final tag, so a
// process that dies between build and check leaves nothing a later call would trust. Once
// the EE image is tagged, images of older keys are removed (prune).
func (b builder) buildChecked(ctx context.Context, img *Image, suite string, coll Collection, o Options, logf func(string, ...any)) error {
	unlock, err := b.lockBuild(ctx)
	if err != nil {
		return err
	}
	defer unlock()
	// Another process may have built it while this one waited for the lock. The base is
	// only looked at under the lock, so that look is already the second one.
	if b.reuse(ctx, img, logf) {
		return nil
	}
	start := time.Now()
	if err := b.ensureBase(ctx, img, suite, o, logf); err != nil {
		return err
	}
	if err := b.buildLayer(ctx, img, coll, o, logf); err != nil {
		return err
	}
	img.Built, img.BuildTime = true, time.Since(start)
	// latest first: an older image it still pointed to is then only under its own tag,
	// which prune removes with it.
	if o.Latest {
		if err := b.tagLatest(ctx, img, logf); err != nil {
			return err
		}
	}
	b.prune(ctx, img, logf)
	return nil
}

// ensureBase builds the base image with build.sh unless one with its key exists whose
// versions meet the requirements.
func (b builder) ensureBase(ctx context.Context, img *Image, suite string, o Options, logf func(string, ...any)) error {
	req := img.Requirements
	if _, _, ok := b.checked(ctx, img.Base, req, logf); ok {
		logf("ee: base %s reused", img.Base)
		return nil
	}
	unchecked := BaseRepository + ":unchecked-" + strings.TrimPrefix(img.Base, BaseRepository+":")
	logf("ee: building base %s from Debian %s: %s", img.Base, suite, strings.Join(req.Packages, ", "))
	start := time.Now()
	out, err := b.build(ctx, suite, unchecked, strings.Join(req.Packages, ","))
	if err != nil {
		b.dropUnchecked(ctx, unchecked, logf) // a build stopped after docker build tagged it
		return fmt.Errorf("build base image %s from Debian %s packages (needs root, mmdebstrap and docker): %w\n%s", img.Base, suite, err, tail(string(out), 30))
	}
	versions := builtVersions(string(out))
	if err := checkVersions(req, versions); err != nil {
		err = fmt.Errorf("%s: Debian %s does not meet %s: %w", img.Base, suite, o.Definition, err)
		if rmErr := b.dropUnchecked(ctx, unchecked, nil); rmErr != nil {
			// Left under its unchecked tag, which nothing reuses.
			err = fmt.Errorf("%w (and removing %s: %v)", err, unchecked, rmErr)
		}
		return err
	}
	if _, err := b.docker(ctx, "tag", unchecked, img.Base); err != nil {
		b.dropUnchecked(ctx, unchecked, logf)
		return err
	}
	b.dropUnchecked(ctx, unchecked, logf)
	img.BaseBuilt, img.BaseBuildTime = true, time.Since(start)
	return nil
}

// buildLayer builds the EE image on the base: the collection's layer (layerDockerfile), with
// the Dockerfile and the tarball streamed to docker build as its context.
func (b builder) buildLayer(ctx context.Context, img *Image, coll Collection, o Options, logf func(string, ...any)) error {
	buildCtx, err := layerContext(layerDockerfile(img.Base), o.Collection)
	if err != nil {
		return err
	}
	unchecked := Repository + ":unchecked-" + strings.TrimPrefix(img.Tag, Repository+":")
	logf("ee: building %s: %s %s on %s", img.Tag, coll.Name, coll.Version, img.Base)
	out, err := b.dockerInput(ctx, buildCtx, "build", "--quiet",
		"--label", collectionLabel+"="+coll.Name+" "+coll.Version+" "+coll.Digest,
		"-t", unchecked, "-")
	if err != nil {
		b.dropUnchecked(ctx, unchecked, logf)
		return fmt.Errorf("install %s on %s: %w\n%s", o.Collection, img.Base, err, tail(string(out), 30))
	}
	// The versions are the base's, checked there; read back through the new image they
	// show that it is built on that base.
	size, versions, ok := b.checked(ctx, unchecked, img.Requirements, logf)
	if !ok {
		b.dropUnchecked(ctx, unchecked, logf)
		return fmt.Errorf("image %s was built on %s but does not record versions that meet the requirements", unchecked, img.Base)
	}
	if _, err := b.docker(ctx, "tag", unchecked, img.Tag); err != nil {
		b.dropUnchecked(ctx, unchecked, logf)
		return err
	}
	b.dropUnchecked(ctx, unchecked, logf)
	img.Size, img.Versions = size, versions
	return nil
}

// layerContext is docker build's context for the collection's layer, as a tar stream:
// the Dockerfile and the collection tarball.
func layerContext(dockerfile, tarball string) ([]byte, error) {
	data, err := os.ReadFile(tarball)
	if err != nil {
		return nil, fmt.Errorf("collection tarball: %w", err)
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, f := range []struct {
		name string
		data []byte
	}{{"Dockerfile", []byte(dockerfile)}, {"collection.tar.gz", data}} {
		if err := tw.WriteHeader(&tar.Header{Name: f.name, Mode: 0o644, Size: int64(len(f.data)), Typeflag: tar.TypeReg}); err != nil {
			return nil, fmt.Errorf("docker build context: %w", err)
		}
		if _, err := tw.Write(f.data); err != nil {
			return nil, fmt.Errorf("docker build context: %w", err)
		}
	}
	if err := tw.Close(); err != nil {
		return nil, fmt.Errorf("docker build context: %w", err)
	}
	return buf.Bytes(), nil
}

// cleanupTimeout bounds the docker commands that clean up after a failed or cancelled build.
const cleanupTimeout = 60 * time.Second

// dropUnchecked removes an unchecked tag, also when ctx is cancelled (the cancel is often
// why the build failed). Its error goes to logf when logf is not nil ("No such image" when
// the build stopped before tagging), and is returned.
func (b builder) dropUnchecked(ctx context.Context, unchecked string, logf func(string, ...any)) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
	defer cancel()
	_, err := b.docker(ctx, "image", "rm", unchecked)
	if err != nil && logf != nil {
		logf("ee: %s is left (nothing reuses an unchecked tag): %v", unchecked, err)
	}
	return err
}

// Tags of older keys that prune removes: the EE image's "VERSION-KEY" and the base's
// "KEY", and either's "unchecked-" tags that a stopped build left. Other tags (latest, a
// user's own) stay.
var (
	eeKeyTag   = regexp.MustCompile(`^(unchecked-)?[A-Za-z0-9_][A-Za-z0-9_.-]*-[0-9a-f]{12}$`)
	baseKeyTag = regexp.MustCompile(`^(unchecked-)?[0-9a-f]{12}$`)
)

// prune removes the images of older keys once a new EE image is tagged (under the lock, so
// no build of another process is under way): every content-keyed tag of Repository but
// img.Tag, then every one of BaseRepository but img.Base (after the EE images, which are
// built on them). docker image rm without -f refuses to remove an image a container uses;
// that image stays, and so does any other that fails, with a log line: a prune that fails
// is no reason to fail the build.
func (b builder) prune(ctx context.Context, img *Image, logf func(string, ...any)) {
	for _, r := range []struct {
		repo, keep string
		key        *regexp.Regexp
	}{{Repository, img.Tag, eeKeyTag}, {BaseRepository, img.Base, baseKeyTag}} {
		out, err := b.docker(ctx, "image", "ls", "--format", "{{.Repository}}:{{.Tag}}", r.repo)
		if err != nil {
			logf("ee: not removing older %s images: %v", r.repo, err)
			continue
		}
		for _, name := range strings.Fields(string(out)) {
			repo, tag, _ := strings.Cut(name, ":")
			if repo != r.repo || name == r.keep || !r.key.MatchString(tag) {
				continue
			}
			if _, err := b.docker(ctx, "image", "rm", name); err != nil {
				logf("ee: keeping %s: %v", name, err)
				continue
			}
			logf("ee: removed %s (an older key)", name)
		}
	}
}

// reuse fills in the image when one with its tag exists and the versions it records meet
// the requirements.
func (b builder) reuse(ctx context.Context, img *Image, logf func(string, ...any)) bool {
	size, versions, ok := b.checked(ctx, img.Tag, img.Requirements, logf)
	if ok {
		img.Size, img.Versions = size, versions
	}
	return ok
}

// checked inspects an image: ok when it exists and the versions it records meet the
// requirements.
func (b builder) checked(ctx context.Context, tag string, req Requirements, logf func(string, ...any)) (size int64, versions map[string]string, ok bool) {
	out, err := b.docker(ctx, "image", "inspect", "--format", inspectFormat, tag)
	if err != nil {
		return 0, nil, false
	}
	s, label, _ := strings.Cut(strings.TrimSpace(string(out)), " ")
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		logf("ee: %s: docker reports size %q; building it again", tag, s)
		return 0, nil, false
	}
	versions = parseVersionsLabel(label)
	if err := checkVersions(req, versions); err != nil {
		logf("ee: %s exists, but the versions it records do not meet the requirements (%v); building it again", tag, err)
		return 0, nil, false
	}
	return n, versions, true
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
