package testenv

import (
	"context"
	"log"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	tclog "github.com/testcontainers/testcontainers-go/log"
)

func TestOptionsDefaults(t *testing.T) {
	t.Setenv("TESTENV_VERBOSE", "")
	c, err := newConfig(nil)
	require.NoError(t, err)
	assert.Equal(t, 60*time.Second, c.readyAfter)
	assert.Equal(t, tclog.NewNoopLogger(), c.logger, "testcontainers' lines are discarded by default")

	t.Setenv("TESTENV_VERBOSE", "1")
	c, err = newConfig(nil)
	require.NoError(t, err)
	assert.Equal(t, tclog.Default(), c.logger, "TESTENV_VERBOSE, read at start, shows them")

	l := log.New(os.Stderr, "tc: ", 0)
	c, err = newConfig([]Option{WithLogger(l)})
	require.NoError(t, err)
	assert.Same(t, l, c.logger, "an explicit logger wins over TESTENV_VERBOSE")
}

// Single-valued options: the last wins. Lists and keyed sets accumulate, the last value of
// a key wins.
func TestOptionsMerge(t *testing.T) {
	c, err := newConfig([]Option{
		WithName("a"), WithName("b"),
		WithReadyTimeout(time.Second), WithReadyTimeout(2 * time.Second),
		WithPackages("less"), WithPackages("curl", "jq"),
		WithLabel("team", "x"), WithLabel("run", "1"), WithLabel("team", "y"),
		WithEnv(map[string]string{"A": "1", "B": "1"}), WithEnv(map[string]string{"B": "2"}),
		WithMount("/srv/a", "/a", "ro"), WithMount("/srv/b", "/b", "rw"),
		WithFile("/etc/a", []byte("a"), 0o644), WithFile("/etc/b", []byte("b"), 0o600),
		nil,
	})
	require.NoError(t, err)
	assert.Equal(t, "b", c.name)
	assert.Equal(t, 2*time.Second, c.readyAfter)
	assert.Equal(t, []string{"less", "curl", "jq"}, c.packages)
	assert.Equal(t, map[string]string{"team": "y", "run": "1"}, c.labels)
	assert.Equal(t, map[string]string{"A": "1", "B": "2"}, c.env)
	assert.Equal(t, []string{"/srv/a:/a:ro", "/srv/b:/b:rw"}, c.binds)
	require.Len(t, c.files, 2)
	assert.Equal(t, "/etc/b", c.files[1].ContainerFilePath)
	assert.Equal(t, map[string]string{LabelKey: "target", "team": "y", "run": "1"}, labels(c.labels))
}

func TestOptionsRefused(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts []Option
		want string
	}{
		{"empty image", []Option{WithImage("")}, "WithImage: empty image name"},
		{"package flag", []Option{WithPackages("--allow-unauthenticated")}, `extra package "--allow-unauthenticated" is not a Debian package name`},
		{"package list in one name", []Option{WithPackages("less,curl")}, `extra package "less,curl"`},
		{"mount mode", []Option{WithMount("/srv", "/srv", "readonly")}, `mode "readonly", want "ro" or "rw"`},
		{"relative host path", []Option{WithMount("srv", "/srv", "ro")}, "both paths must be absolute"},
		{"relative target path", []Option{WithMount("/srv", "srv", "ro")}, "both paths must be absolute"},
		{"relative file", []Option{WithFile("etc/x", nil, 0o644)}, `WithFile "etc/x": path must be absolute`},
		{"reserved label", []Option{WithLabel(LabelKey, "x")}, "is empty or reserved"},
		{"empty label", []Option{WithLabel("", "x")}, "is empty or reserved"},
		{"empty name", []Option{WithName("")}, "WithName: empty name"},
		{"zero timeout", []Option{WithReadyTimeout(0)}, "is not a positive duration"},
		{"env name", []Option{WithEnv(map[string]string{"A=B": "1"})}, `WithEnv: "A=B" is not a variable name`},
		{"nil logger", []Option{WithLogger(nil)}, "WithLogger: nil logger"},
		{"packages on a given image", []Option{WithImage("almalinux/9-init"), WithPackages("less")}, `needs a built image; WithImage("almalinux/9-init")`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := newConfig(tc.opts)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
			// StartContext refuses before it looks for an image or Docker.
			tg, err := StartContext(context.Background(), tc.opts...)
			assert.Nil(t, tg)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}

func TestPropertiesSet(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		content string
		want    bool
	}{
		{"ryuk.disabled=false\n", true},
		{"  ryuk.disabled : true\n", true},
		{"ryuk.disabled.extra=true\nryuk.container.privileged=true\n", false},
		{"# ryuk.disabled=true\n", false},
		{"", false},
	} {
		path := filepath.Join(dir, "p")
		require.NoError(t, os.WriteFile(path, []byte(tc.content), 0o600))
		assert.Equal(t, tc.want, propertiesSet(path, "ryuk.disabled"), "%q", tc.content)
	}
	assert.False(t, propertiesSet(filepath.Join(dir, "missing"), "ryuk.disabled"))
}
