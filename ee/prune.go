package ee

import (
	"context"
	"regexp"
	"strings"
)

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
