package testenv

import (
	"context"
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"

	"github.com/richt/services/pkg/lock"
)

//go:embed image/build.sh
var buildScript []byte

// DefaultSuite is the Debian suite the default image is built from.
const DefaultSuite = "trixie"

// Suite returns the Debian suite selected by TESTENV_SUITE, or DefaultSuite.
func Suite() string {
	if s := os.Getenv("TESTENV_SUITE"); s != "" {
		return s
	}
	return DefaultSuite
}

// ImageTag is the content-keyed tag of the image for suite and extra packages: a change to
// the build recipe or the package list gives a new tag, so a stale image is never reused.
func ImageTag(suite string, extraPackages ...string) string {
	pkgs := append([]string(nil), extraPackages...)
	sort.Strings(pkgs)
	h := sha256.New()
	h.Write(buildScript)
	h.Write([]byte{0})
	h.Write([]byte(suite))
	h.Write([]byte{0})
	h.Write([]byte(strings.Join(pkgs, ",")))
	return "richt-testenv:" + suite + "-" + hex.EncodeToString(h.Sum(nil))[:12]
}

// EnsureImage returns the image to start targets from: TESTENV_IMAGE when set, else the
// content-keyed image for Suite(), built from Debian packages when it is missing. Builds
// are serialised across processes with pkg/lock's lock, so parallel test binaries build
// once; a process waiting for it gives up when ctx ends.
func EnsureImage(ctx context.Context, extraPackages ...string) (string, error) {
	return EnsureSuiteImage(ctx, Suite(), extraPackages...)
}

// EnsureSuiteImage is EnsureImage for a given Debian suite, whatever TESTENV_SUITE says:
// for a run whose targets are of two generations at once (richt-molecule's platforms).
// TESTENV_IMAGE still wins when set.
func EnsureSuiteImage(ctx context.Context, suite string, extraPackages ...string) (string, error) {
	if img := os.Getenv("TESTENV_IMAGE"); img != "" {
		if len(extraPackages) > 0 {
			return "", fmt.Errorf("extra packages %v need a built image; TESTENV_IMAGE=%s is used as it is", extraPackages, img)
		}
		return img, nil
	}
	if err := checkPackageNames(extraPackages); err != nil {
		return "", err
	}
	if suite == "" {
		return "", fmt.Errorf("EnsureSuiteImage: empty suite")
	}
	tag := ImageTag(suite, extraPackages...)
	if imageExists(ctx, tag) {
		return tag, nil
	}
	// The same lock as the modules and the EE build use (pkg/lock): a root-owned directory
	// rather than a name in the shared temporary directory, which another local user could
	// have made first, and a wait that ends with ctx instead of blocking forever.
	l, err := lock.Acquire(ctx, imageLockDir(), imageBuildLock)
	if err != nil {
		return "", fmt.Errorf("take the testenv image build lock (another process may be building %s): %w", tag, err)
	}
	defer l.Release()
	if imageExists(ctx, tag) {
		return tag, nil
	}
	script := filepath.Join(os.TempDir(), "richt-testenv-build-"+strings.TrimPrefix(tag, "richt-testenv:")+".sh")
	if err := os.WriteFile(script, buildScript, 0o755); err != nil {
		return "", fmt.Errorf("write image build script: %w", err)
	}
	defer os.Remove(script)
	cmd := exec.CommandContext(ctx, "bash", script, suite, tag, strings.Join(extraPackages, ","))
	out, err := cmd.CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("build image %s from Debian %s packages (needs root, mmdebstrap and docker): %w\n%s", tag, suite, err, tail(string(out), 30))
	}
	return tag, nil
}

func imageExists(ctx context.Context, tag string) bool {
	return exec.CommandContext(ctx, "docker", "image", "inspect", "--format", "{{.Id}}", tag).Run() == nil
}

// imageBuildLock is the name of the lock testenv's image builds share, so parallel test
// processes build an image once.
const imageBuildLock = "testenv-image"

// imageLockDir is where that lock lives (pkg/lock's directory for the running user); a
// test points it elsewhere so that it never holds the lock real builds wait for.
var imageLockDir = lock.Dir

func tail(s string, n int) string {
	l := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(l) > n {
		l = l[len(l)-n:]
	}
	return strings.Join(l, "\n")
}
