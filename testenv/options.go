package testenv

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/testcontainers/testcontainers-go"
	tclog "github.com/testcontainers/testcontainers-go/log"
)

// Option configures how Start and StartContext boot a target. An option checks its own
// arguments and returns an error instead of starting a target that cannot be what the
// test asked for; Start fails the test with it, StartContext returns it.
//
// Options that set one thing (WithImage, WithName, WithReadyTimeout, WithLogger): the last
// one given wins. Options that add to a list (WithPackages, WithMount, WithFile) or to a set
// of keys (WithLabel, WithEnv) accumulate; for the same key, the last value wins. A nil
// Option is ignored.
type Option func(*config) error

// config is what the options build up; StartContext reads it.
type config struct {
	name       string
	image      string
	suite      string
	packages   []string
	readyAfter time.Duration
	env        map[string]string
	binds      []string
	files      []testcontainers.ContainerFile
	labels     map[string]string
	logger     Logger
}

// Logger receives testcontainers' lines about a target (container created, started,
// terminated). *log.Logger satisfies it.
type Logger interface {
	Printf(format string, args ...any)
}

// WithImage starts the target from image, an existing systemd image that boots from
// /sbin/init, instead of building testenv's own (see [EnsureImage]).
func WithImage(image string) Option {
	return func(c *config) error {
		if image == "" {
			return fmt.Errorf("WithImage: empty image name")
		}
		c.image = image
		return nil
	}
}

// WithSuite builds (or reuses) testenv's image from the given Debian suite instead of
// TESTENV_SUITE's, for a run that needs targets of both generations: "trixie" or
// "bookworm". TESTENV_IMAGE and WithImage still win.
func WithSuite(suite string) Option {
	return func(c *config) error {
		if suite != "trixie" && suite != "bookworm" {
			return fmt.Errorf("WithSuite: %q, want \"trixie\" or \"bookworm\"", suite)
		}
		c.suite = suite
		return nil
	}
}

// WithPackages adds Debian packages to the default image; the image is built once per
// package set (its tag is a hash of the recipe and the list) and reused afterwards. It
// cannot be combined with WithImage or TESTENV_IMAGE, whose images are used as they are.
func WithPackages(pkgs ...string) Option {
	return func(c *config) error {
		if err := checkPackageNames(pkgs); err != nil {
			return fmt.Errorf("WithPackages: %w", err)
		}
		c.packages = append(c.packages, pkgs...)
		return nil
	}
}

// WithMount bind-mounts the host path hostPath at targetPath in the target; mode is "ro"
// or "rw". Both paths must be absolute.
func WithMount(hostPath, targetPath, mode string) Option {
	return func(c *config) error {
		if mode != "ro" && mode != "rw" {
			return fmt.Errorf("WithMount %s: mode %q, want \"ro\" or \"rw\"", targetPath, mode)
		}
		if !filepath.IsAbs(hostPath) || !strings.HasPrefix(targetPath, "/") {
			return fmt.Errorf("WithMount %q → %q: both paths must be absolute", hostPath, targetPath)
		}
		c.binds = append(c.binds, hostPath+":"+targetPath+":"+mode)
		return nil
	}
}

// WithFile places a file in the target before systemd boots, for example a unit and a
// drop-in of multi-user.target that wants it, so the boot starts it. path must be absolute.
func WithFile(path string, content []byte, mode int64) Option {
	return func(c *config) error {
		if !strings.HasPrefix(path, "/") {
			return fmt.Errorf("WithFile %q: path must be absolute", path)
		}
		c.files = append(c.files, testcontainers.ContainerFile{Reader: bytes.NewReader(content), ContainerFilePath: path, FileMode: mode})
		return nil
	}
}

// WithLabel adds a container label, for finding a test's containers. [LabelKey] is
// reserved: every target carries it.
func WithLabel(key, value string) Option {
	return func(c *config) error {
		if key == "" || key == LabelKey {
			return fmt.Errorf("WithLabel: key %q is empty or reserved", key)
		}
		if c.labels == nil {
			c.labels = map[string]string{}
		}
		c.labels[key] = value
		return nil
	}
}

// WithName gives the container a fixed name (default: a random one, so parallel targets
// never clash).
func WithName(name string) Option {
	return func(c *config) error {
		if name == "" {
			return fmt.Errorf("WithName: empty name")
		}
		c.name = name
		return nil
	}
}

// WithReadyTimeout bounds the wait for systemd to reach running or degraded (default 60s).
func WithReadyTimeout(d time.Duration) Option {
	return func(c *config) error {
		if d <= 0 {
			return fmt.Errorf("WithReadyTimeout: %s is not a positive duration", d)
		}
		c.readyAfter = d
		return nil
	}
}

// WithEnv adds environment variables of PID 1 (systemd passes them to no service).
func WithEnv(env map[string]string) Option {
	return func(c *config) error {
		for k, v := range env {
			if k == "" || strings.ContainsAny(k, "=\x00") {
				return fmt.Errorf("WithEnv: %q is not a variable name", k)
			}
			if c.env == nil {
				c.env = map[string]string{}
			}
			c.env[k] = v
		}
		return nil
	}
}

// WithLogger sends testcontainers' lines about this target to l. The default discards
// them (failures carry [Target.Diagnostics] instead), unless TESTENV_VERBOSE is set, which
// sends them to testcontainers' own default logger (standard error).
//
// The option reaches what testcontainers logs per container. Two lines testcontainers
// writes to its package-level logger are beyond it: the Docker connection banner (once per
// process) and the archive line of [Target.CopyDir]; silence those with
// testcontainers-go/log.SetDefault in TestMain if they bother you.
func WithLogger(l Logger) Option {
	return func(c *config) error {
		if l == nil {
			return fmt.Errorf("WithLogger: nil logger")
		}
		c.logger = l
		return nil
	}
}

// newConfig applies the defaults, then opts in order, then checks what only the whole set
// can tell.
func newConfig(opts []Option) (config, error) {
	c := config{readyAfter: 60 * time.Second}
	for _, o := range opts {
		if o == nil {
			continue
		}
		if err := o(&c); err != nil {
			return config{}, err
		}
	}
	if c.image != "" && len(c.packages) > 0 {
		return config{}, fmt.Errorf("WithPackages %v needs a built image; WithImage(%q) is used as it is", c.packages, c.image)
	}
	if c.logger == nil {
		c.logger = defaultLogger()
	}
	return c, nil
}

// defaultLogger is the containers' logger when the caller gives none: quiet, unless
// TESTENV_VERBOSE is set.
func defaultLogger() tclog.Logger {
	if os.Getenv("TESTENV_VERBOSE") != "" {
		return tclog.Default()
	}
	return tclog.NewNoopLogger()
}

// checkPackageNames refuses names that are not Debian package names (they end up in the
// image build's command line).
func checkPackageNames(pkgs []string) error {
	for _, p := range pkgs {
		if p == "" || strings.HasPrefix(p, "-") || strings.ContainsAny(p, " ,;$`'\"\\") {
			return fmt.Errorf("extra package %q is not a Debian package name", p)
		}
	}
	return nil
}

// reaperOnce turns testcontainers' reaper (Ryuk) off once per process, before the first
// container starts, unless the user chose: the reaper's image cannot be pulled offline,
// and targets are removed by Terminate (Start registers it with t.Cleanup).
//
// testcontainers-go (v0.45) reads this setting only from TESTCONTAINERS_RYUK_DISABLED or
// ryuk.disabled in ~/.testcontainers.properties, once per process, and has no per-request
// switch (ContainerRequest.SkipReaper is deprecated and ignored). So this is the one place
// testenv sets a process environment variable, and only when neither is set.
var reaperOnce sync.Once

func disableReaperUnlessChosen() {
	reaperOnce.Do(func() {
		if _, set := os.LookupEnv("TESTCONTAINERS_RYUK_DISABLED"); set {
			return
		}
		if home, err := os.UserHomeDir(); err == nil && propertiesSet(filepath.Join(home, ".testcontainers.properties"), "ryuk.disabled") {
			return
		}
		_ = os.Setenv("TESTCONTAINERS_RYUK_DISABLED", "true")
	})
}

// propertiesSet reports whether the Java-style properties file at path sets key.
func propertiesSet(path, key string) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		rest, ok := strings.CutPrefix(line, key)
		if !ok {
			continue
		}
		if rest = strings.TrimLeft(rest, " \t"); strings.HasPrefix(rest, "=") || strings.HasPrefix(rest, ":") {
			return true
		}
	}
	return false
}
