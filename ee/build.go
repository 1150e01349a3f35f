package ee

import (
	"archive/tar"
	"bytes"
	"context"
	"fmt"
	"os"
	"strings"
	"time"
)

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

// collectionLabel is the EE image's label naming the collection it installs
// ("NAME VERSION DIGEST").
const collectionLabel = "org.richt.ee.collection"

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
