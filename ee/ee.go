// Package ee builds the collection's execution environment (EE) image from Debian's
// packages (docs/ee.md). Running jobs through the image the way AWX and Ansible Automation
// Platform do is package ee/runner's: the image is all the two share, by its tag.
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
//
// The files follow the image's life: definition.go, collection.go, bindep.go and
// version.go read what it must hold; tag.go gives it its content keys; ee.go and build.go
// build it under the lock; check.go holds a built or reused image to the requirements;
// prune.go moves latest and removes older keys; exec.go runs docker and build.sh.
package ee

import (
	"context"
	_ "embed"
	"fmt"
	"io"
	"regexp"
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
