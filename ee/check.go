package ee

import (
	"bufio"
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// versionsLabel is the image label build.sh records the requested packages' versions in
// ("NAME=VERSION NAME=VERSION"): a reused image is held to the requirements with it. The EE
// image inherits it from its base.
const versionsLabel = "org.richt.ee.versions"

// inspectFormat asks docker image inspect for the size and the versions label.
const inspectFormat = `{{.Size}} {{index .Config.Labels "` + versionsLabel + `"}}`

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
