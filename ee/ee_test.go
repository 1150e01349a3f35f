package ee

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Every part of the requirements shapes the image or what it is held to: changing any one
// of them must give a new tag, or the old image would be reused unchecked.
func TestTagCoversRequirements(t *testing.T) {
	coll := Collection{Name: "richt.services", Version: "0.3.0", Digest: "d1"}
	req := func() Requirements {
		return Requirements{
			Packages:    []string{"ansible-core", "python3-ansible-runner"},
			Constraints: map[string]string{"ansible-core": ">=2.19.0,<2.20.0"},
			Collections: []string{"richt.services"},
		}
	}
	want := Tag(Suite, req(), coll)
	assert.Equal(t, want, Tag(Suite, req(), coll), "the key is stable")
	for _, c := range []struct {
		name   string
		change func(*string, *Requirements, *Collection)
	}{
		{"constraint", func(_ *string, r *Requirements, _ *Collection) { r.Constraints["ansible-core"] = ">=2.20" }},
		{"new constraint", func(_ *string, r *Requirements, _ *Collection) { r.Constraints["python3"] = ">=3.11" }},
		{"package", func(_ *string, r *Requirements, _ *Collection) { r.Packages = append(r.Packages, "sshpass") }},
		{"collections", func(_ *string, r *Requirements, _ *Collection) { r.Collections = nil }},
		{"suite", func(s *string, _ *Requirements, _ *Collection) { *s = "forky" }},
		{"collection content", func(_ *string, _ *Requirements, c *Collection) { c.Digest = "d2" }},
	} {
		t.Run(c.name, func(t *testing.T) {
			suite, r, cl := Suite, req(), coll
			c.change(&suite, &r, &cl)
			assert.NotEqual(t, want, Tag(suite, r, cl))
		})
	}
}

// call is one expected command of a scripted fake: its argv (docker … or build …) and
// what it returns.
type call struct {
	argv []string
	out  string
	err  error
}

// script is a fake for docker and build.sh: each command must be the next expected one.
type script struct {
	t     *testing.T
	calls []call
	n     int
}

func (s *script) run(argv []string) ([]byte, error) {
	s.t.Helper()
	if s.n >= len(s.calls) {
		s.t.Fatalf("unexpected command %q (all %d expected ones were made)", argv, len(s.calls))
	}
	c := s.calls[s.n]
	s.n++
	require.Equal(s.t, c.argv, argv, "command %d", s.n)
	return []byte(c.out), c.err
}

func (s *script) builder(lock string) builder {
	return builder{
		docker: func(_ context.Context, args ...string) ([]byte, error) {
			return s.run(append([]string{"docker"}, args...))
		},
		build: func(_ context.Context, args ...string) ([]byte, error) {
			return s.run(append([]string{"build"}, args...))
		},
		lock: lock,
	}
}

// Ensure reuses only the final tag, and only with versions that meet the requirements; a
// build runs under the unchecked tag and gets the final one after its versions passed.
func TestEnsure(t *testing.T) {
	dir := t.TempDir()
	def := filepath.Join(dir, "execution-environment.yml")
	require.NoError(t, os.WriteFile(def, []byte(base), 0o644))
	tarball := filepath.Join(dir, "richt-services-0.3.0.tar.gz")
	writeTarball(t, tarball, time.Unix(1000, 0), map[string]string{
		"MANIFEST.json":            `{"collection_info": {"namespace": "richt", "name": "services", "version": "0.3.0"}}`,
		"bin/richt-modules-x86_64": "ELF",
	})
	req, err := ReadDefinition(def)
	require.NoError(t, err)
	coll, err := ReadCollection(tarball)
	require.NoError(t, err)
	tag := Tag(Suite, req, coll)
	unchecked := strings.Replace(tag, ":", ":unchecked-", 1)
	const format = `{{.Size}} {{index .Config.Labels "org.richt.ee.versions"}}`
	inspect := []string{"docker", "image", "inspect", "--format", format, tag}
	build := []string{"build", "trixie", unchecked, "ansible-core,python3-ansible-runner", tarball}
	missing := errors.New("docker image inspect: exit status 1: No such image")
	good := "package ansible-core 2.19.11-1\npackage python3-ansible-runner 2.4.1-1\nbuilt " + unchecked + "\n"
	goodLabel := "184000000 ansible-core=2.19.11-1 python3-ansible-runner=2.4.1-1\n"
	for _, c := range []struct {
		name   string
		latest bool
		calls  []call
		built  bool
		err    string
	}{
		{"reused", false, []call{{inspect, goodLabel, nil}}, false, ""},
		{"reused and tagged latest", true, []call{{inspect, goodLabel, nil}, {[]string{"docker", "tag", tag, "richt-services-ee:latest"}, "", nil}}, false, ""},
		{"built, checked, then tagged", false, []call{
			{inspect, "", missing}, {inspect, "", missing},
			{build, good, nil},
			{[]string{"docker", "tag", unchecked, tag}, "", nil},
			{[]string{"docker", "image", "rm", unchecked}, "Untagged: " + unchecked, nil},
			{inspect, goodLabel, nil},
		}, true, ""},
		{"built by another process while this one waited", false, []call{{inspect, "", missing}, {inspect, goodLabel, nil}}, false, ""},
		{"built but older than the definition wants", false, []call{
			{inspect, "", missing}, {inspect, "", missing},
			{build, "package ansible-core 2.14.18-0+deb12u2\npackage python3-ansible-runner 2.3.1-1\n", nil},
			{[]string{"docker", "image", "rm", unchecked}, "", errors.New("docker image rm: exit status 1")},
		}, false, "ansible-core is 2.14.18-0+deb12u2, the definition wants >=2.19.0,<2.20.0 (and removing " + unchecked},
		{"an image under the tag whose label breaks the requirements is built again", false, []call{
			{inspect, "184000000 ansible-core=2.14.18-0+deb12u2 python3-ansible-runner=2.4.1-1", nil},
			{inspect, "184000000 ", nil},
			{build, good, nil},
			{[]string{"docker", "tag", unchecked, tag}, "", nil},
			{[]string{"docker", "image", "rm", unchecked}, "", nil},
			{inspect, goodLabel, nil},
		}, true, ""},
		{"build fails", false, []call{{inspect, "", missing}, {inspect, "", missing}, {build, "E: mmdebstrap failed", errors.New("exit status 1")}},
			false, "E: mmdebstrap failed"},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := &script{t: t, calls: c.calls}
			img, err := s.builder(filepath.Join(dir, "lock")).ensure(context.Background(), Options{Definition: def, Collection: tarball, Latest: c.latest})
			assert.Equal(t, len(c.calls), s.n, "commands made")
			if c.err != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), c.err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tag, img.Tag)
			assert.Equal(t, c.built, img.Built)
			assert.Equal(t, int64(184000000), img.Size)
			assert.Equal(t, map[string]string{"ansible-core": "2.19.11-1", "python3-ansible-runner": "2.4.1-1"}, img.Versions)
		})
	}
	_, err = (&script{t: t}).builder(filepath.Join(dir, "lock")).ensure(context.Background(), Options{Definition: def, Collection: tarball, Suite: "trixie;reboot"})
	assert.ErrorContains(t, err, `suite "trixie;reboot": not a Debian suite name`)
}

// A cancelled build stops as a whole: the script's children get SIGTERM with it (none is
// left running) and its TERM trap, which removes its work directory, runs.
func TestRunScriptCancelStopsTheGroup(t *testing.T) {
	dir := t.TempDir()
	sh := filepath.Join(dir, "build.sh")
	require.NoError(t, os.WriteFile(sh, []byte(`set -eu
trap 'touch "$1/cleaned"' EXIT
trap 'exit 143' TERM
# A foreground child, as mmdebstrap and docker build are.
sh -c 'echo $$ > "$1/child.tmp" && mv "$1/child.tmp" "$1/child" && exec sleep 600' sh "$1"
`), 0o755))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { _, err := runScript(ctx, sh, dir); done <- err }()
	var pid int
	require.Eventually(t, func() bool {
		data, err := os.ReadFile(filepath.Join(dir, "child"))
		if err != nil {
			return false
		}
		pid, err = strconv.Atoi(strings.TrimSpace(string(data)))
		return err == nil
	}, 60*time.Second, 20*time.Millisecond, "the script's child started")
	cancel()
	select {
	case err := <-done:
		require.Error(t, err)
	case <-time.After(2 * scriptWaitDelay):
		t.Fatal("runScript did not return after cancel")
	}
	assert.FileExists(t, filepath.Join(dir, "cleaned"), "the script's trap ran")
	assert.Eventually(t, func() bool { return !running(pid) }, 30*time.Second, 50*time.Millisecond, "child %d still runs", pid)
}

// running tells whether a process exists and is not a zombie.
func running(pid int) bool {
	if err := syscall.Kill(pid, 0); err != nil {
		return false
	}
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	_, after, _ := strings.Cut(string(stat), ") ")
	return !strings.HasPrefix(after, "Z")
}

// Waiting for the build lock ends with the context, while another holder keeps it; once
// released, the lock is taken.
func TestLockFileHonoursContext(t *testing.T) {
	path := filepath.Join(t.TempDir(), "lock")
	unlock, err := lockFile(context.Background(), path)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		u, err := lockFile(ctx, path)
		if err == nil {
			u()
		}
		done <- err
	}()
	time.Sleep(2 * lockPoll) // it is waiting, not holding
	cancel()
	select {
	case err := <-done:
		assert.ErrorIs(t, err, context.Canceled)
		assert.ErrorContains(t, err, "another process is building the image")
	case <-time.After(60 * time.Second):
		t.Fatal("lockFile did not return after cancel")
	}
	unlock()
	unlock2, err := lockFile(context.Background(), path)
	require.NoError(t, err)
	unlock2()
}

func TestImageSummary(t *testing.T) {
	req := Requirements{Packages: []string{"ansible-core", "python3"}}
	for _, c := range []struct {
		name string
		img  Image
		want string
	}{
		{"built", Image{Tag: "richt-services-ee:0.3.0-abc", Built: true, BuildTime: 104600 * time.Millisecond, Size: 184_123_456,
			Versions: map[string]string{"python3": "3.13.5-1", "ansible-core": "2.19.11-1", "zlib1g": "1:1.3"}, Requirements: req},
			"ee: richt-services-ee:0.3.0-abc: built in 105 s, size 184 MB (184123456 bytes)\nee: ansible-core 2.19.11-1, python3 3.13.5-1\n"},
		{"reused without versions", Image{Tag: "richt-services-ee:0.3.0-abc", Size: 184_000_000, Requirements: req},
			"ee: richt-services-ee:0.3.0-abc: reused (same content key; nothing built), size 184 MB (184000000 bytes)\n"},
	} {
		t.Run(c.name, func(t *testing.T) { assert.Equal(t, c.want, c.img.Summary()) })
	}
}

func TestParseVersionsLabel(t *testing.T) {
	assert.Equal(t, map[string]string{"ansible-core": "2.19.11-1", "openssh-client": "1:10.0p1-7"},
		parseVersionsLabel(" ansible-core=2.19.11-1  openssh-client=1:10.0p1-7 junk =x y= \n"))
	assert.Empty(t, parseVersionsLabel(""))
	assert.Empty(t, parseVersionsLabel("<no value>"))
}

// build.sh's output and an image's label are read back: any text gives one-word names and
// versions, and a label written from the versions reads back the same.
func FuzzBuiltVersions(f *testing.F) {
	f.Add("package ansible-core 2.19.11-1\nnoise\npackage python3 3.13.5-1\nbuilt x\n")
	f.Add("package a=b 1\npackage  x\n")
	f.Fuzz(func(t *testing.T, out string) {
		v := builtVersions(out)
		var label []string
		for name, version := range v {
			assert.Equal(t, []string{name}, strings.Fields(name))
			assert.Equal(t, []string{version}, strings.Fields(version))
			if !strings.Contains(name, "=") {
				label = append(label, name+"="+version)
			} else {
				delete(v, name) // not a Debian name: build.sh never writes it into a label
			}
		}
		assert.Equal(t, v, parseVersionsLabel(strings.Join(label, " ")))
		parseVersionsLabel(out)
	})
}
