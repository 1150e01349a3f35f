package ee

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/richt/services/pkg/lock"
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
	want, wantBase := Tag(Suite, req(), coll), BaseTag(Suite, req())
	assert.Equal(t, want, Tag(Suite, req(), coll), "the key is stable")
	assert.Equal(t, wantBase, BaseTag(Suite, req()), "the base's key is stable")
	assert.Regexp(t, `^richt-services-ee-base:[0-9a-f]{12}$`, wantBase)
	assert.Regexp(t, `^richt-services-ee:0\.3\.0-[0-9a-f]{12}$`, want)
	for _, c := range []struct {
		name   string
		change func(*string, *Requirements, *Collection)
		// base: the change is the base's too (a new base is built), not only the layer's.
		base bool
	}{
		{"constraint", func(_ *string, r *Requirements, _ *Collection) { r.Constraints["ansible-core"] = ">=2.20" }, true},
		{"new constraint", func(_ *string, r *Requirements, _ *Collection) { r.Constraints["python3"] = ">=3.11" }, true},
		{"package", func(_ *string, r *Requirements, _ *Collection) { r.Packages = append(r.Packages, "sshpass") }, true},
		{"suite", func(s *string, _ *Requirements, _ *Collection) { *s = "forky" }, true},
		{"collections", func(_ *string, r *Requirements, _ *Collection) { r.Collections = nil }, false},
		{"collection content", func(_ *string, _ *Requirements, c *Collection) { c.Digest = "d2" }, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			suite, r, cl := Suite, req(), coll
			c.change(&suite, &r, &cl)
			assert.NotEqual(t, want, Tag(suite, r, cl))
			if c.base {
				assert.NotEqual(t, wantBase, BaseTag(suite, r), "a new base")
			} else {
				assert.Equal(t, wantBase, BaseTag(suite, r), "the base is reused")
			}
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
	// inputs are what docker got on its standard input, by command number (from 1).
	inputs map[int][]byte
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

func (s *script) builder(dir string) builder {
	return builder{
		docker: func(_ context.Context, args ...string) ([]byte, error) {
			return s.run(append([]string{"docker"}, args...))
		},
		dockerInput: func(_ context.Context, input []byte, args ...string) ([]byte, error) {
			if s.inputs == nil {
				s.inputs = map[int][]byte{}
			}
			s.inputs[s.n+1] = input
			return s.run(append([]string{"docker"}, args...))
		},
		build: func(_ context.Context, args ...string) ([]byte, error) {
			return s.run(append([]string{"build"}, args...))
		},
		lock: lock.In(dir),
	}
}

// Ensure reuses only the final tag, and only with versions that meet the requirements. A
// build makes the base (build.sh) only when none with its key exists, then the collection's
// layer on it; each runs under an unchecked tag and gets its final one after its versions
// passed, and the unchecked tag goes on every path. Once the EE image is tagged, older keys
// of both images are removed, and an image docker refuses to remove (a container uses it)
// stays.
func TestEnsure(t *testing.T) {
	dir := t.TempDir()
	def := filepath.Join(dir, "execution-environment.yml")
	require.NoError(t, os.WriteFile(def, []byte(base), 0o644))
	tarball := filepath.Join(dir, "richt-services-0.3.0.tar.gz")
	writeTarball(t, tarball, time.Unix(1000, 0), map[string]string{
		"MANIFEST.json":            `{"collection_info": {"namespace": "richt", "name": "services", "version": "0.3.0"}}`,
		"bin/richt-modules-x86_64": "ELF",
	})
	tarData, err := os.ReadFile(tarball)
	require.NoError(t, err)
	req, err := ReadDefinition(def)
	require.NoError(t, err)
	coll, err := ReadCollection(tarball)
	require.NoError(t, err)
	tag, baseTag := Tag(Suite, req, coll), BaseTag(Suite, req)
	unchecked := strings.Replace(tag, ":", ":unchecked-", 1)
	baseUnchecked := strings.Replace(baseTag, ":", ":unchecked-", 1)
	const format = `{{.Size}} {{index .Config.Labels "org.richt.ee.versions"}}`
	inspect := []string{"docker", "image", "inspect", "--format", format, tag}
	inspectBase := []string{"docker", "image", "inspect", "--format", format, baseTag}
	inspectUnchecked := []string{"docker", "image", "inspect", "--format", format, unchecked}
	buildBase := []string{"build", "trixie", baseUnchecked, "ansible-core,python3-ansible-runner"}
	buildLayer := []string{"docker", "build", "--quiet", "--label", "org.richt.ee.collection=richt.services 0.3.0 " + coll.Digest, "-t", unchecked, "-"}
	rm := func(name string) []string { return []string{"docker", "image", "rm", name} }
	ls := func(repo string) []string {
		return []string{"docker", "image", "ls", "--format", "{{.Repository}}:{{.Tag}}", repo}
	}
	missing := errors.New("docker image inspect: exit status 1: No such image")
	good := "package ansible-core 2.19.11-1\npackage python3-ansible-runner 2.4.1-1\nbuilt " + baseUnchecked + "\n"
	goodLabel := "184000000 ansible-core=2.19.11-1 python3-ansible-runner=2.4.1-1\n"
	// The layer, its check and tag, and a prune with nothing older to remove.
	layer := []call{
		{buildLayer, "sha256:1234\n", nil},
		{inspectUnchecked, goodLabel, nil},
		{[]string{"docker", "tag", unchecked, tag}, "", nil},
		{rm(unchecked), "Untagged: " + unchecked, nil},
		{ls(Repository), tag + "\n" + Repository + ":latest\n", nil},
		{ls(BaseRepository), baseTag + "\n", nil},
	}
	inspectLatest := func(out string) call {
		return call{[]string{"docker", "image", "inspect", "--format", "{{.Id}} {{len .RepoTags}}", Repository + ":latest"}, out, nil}
	}
	tagLatest := call{[]string{"docker", "tag", tag, Repository + ":latest"}, "", nil}
	calls := func(c ...[]call) []call {
		var all []call
		for _, cs := range c {
			all = append(all, cs...)
		}
		return all
	}
	for _, c := range []struct {
		name             string
		latest           bool
		calls            []call
		built, baseBuilt bool
		err              string
		log              []string
	}{
		{"reused (base and layer)", false, []call{{inspect, goodLabel, nil}}, false, false, "", nil},
		{"reused and tagged latest", true, []call{{inspect, goodLabel, nil}, inspectLatest("sha256:1234 2"), tagLatest}, false, false, "", nil},
		{"reused and tagged latest, the image only latest held removed", true, []call{
			{inspect, goodLabel, nil}, inspectLatest("sha256:0ld 1"), tagLatest, {rm("sha256:0ld"), "Deleted: sha256:0ld", nil},
		}, false, false, "", []string{"removed sha256:0ld"}},
		{"reused and tagged latest, which was not there", true, []call{
			{inspect, goodLabel, nil}, {inspectLatest("").argv, "", missing}, tagLatest,
		}, false, false, "", nil},
		{"built and tagged latest before the older keys are removed", true, calls([]call{
			{inspect, "", missing}, {inspect, "", missing}, {inspectBase, goodLabel, nil},
		}, layer[:4], []call{inspectLatest("sha256:0ld 2"), tagLatest}, layer[4:]), true, false, "", nil},
		{"base and layer built, checked, then tagged", false, calls([]call{
			{inspect, "", missing}, {inspect, "", missing}, {inspectBase, "", missing},
			{buildBase, good, nil},
			{[]string{"docker", "tag", baseUnchecked, baseTag}, "", nil},
			{rm(baseUnchecked), "Untagged: " + baseUnchecked, nil},
		}, layer), true, true, "", []string{"building base " + baseTag}},
		{"base reused, the collection's layer built", false, calls([]call{
			{inspect, "", missing}, {inspect, "", missing}, {inspectBase, goodLabel, nil},
		}, layer), true, false, "", []string{"base " + baseTag + " reused"}},
		{"older keys removed, one a container uses kept", false, []call{
			{inspect, "", missing}, {inspect, "", missing}, {inspectBase, goodLabel, nil},
			layer[0], layer[1], layer[2], layer[3],
			{ls(Repository), strings.Join([]string{tag, Repository + ":latest", Repository + ":0.2.0-aaaaaaaaaaaa",
				Repository + ":unchecked-0.1.0-bbbbbbbbbbbb", Repository + ":mine", Repository + ":<none>"}, "\n"), nil},
			{rm(Repository + ":0.2.0-aaaaaaaaaaaa"), "", nil},
			{rm(Repository + ":unchecked-0.1.0-bbbbbbbbbbbb"), "", errors.New("conflict: unable to remove repository reference (must force) - container 0f1e is using its referenced image")},
			{ls(BaseRepository), baseTag + "\n" + BaseRepository + ":cccccccccccc\n" + BaseRepository + ":<none>\n", nil},
			{rm(BaseRepository + ":cccccccccccc"), "", nil},
		}, true, false, "", []string{
			"removed " + Repository + ":0.2.0-aaaaaaaaaaaa", "keeping " + Repository + ":unchecked-0.1.0-bbbbbbbbbbbb: conflict",
			"removed " + BaseRepository + ":cccccccccccc"}},
		{"built by another process while this one waited", false, []call{{inspect, "", missing}, {inspect, goodLabel, nil}}, false, false, "", nil},
		{"base built but older than the definition wants", false, []call{
			{inspect, "", missing}, {inspect, "", missing}, {inspectBase, "", missing},
			{buildBase, "package ansible-core 2.14.18-0+deb12u2\npackage python3-ansible-runner 2.3.1-1\n", nil},
			{rm(baseUnchecked), "", errors.New("docker image rm: exit status 1")},
		}, false, false, "ansible-core is 2.14.18-0+deb12u2, the definition wants >=2.19.0,<2.20.0 (and removing " + baseUnchecked, nil},
		{"an image under the tag whose label breaks the requirements is built again", false, calls([]call{
			{inspect, "184000000 ansible-core=2.14.18-0+deb12u2 python3-ansible-runner=2.4.1-1", nil},
			{inspect, "184000000 ", nil},
			{inspectBase, goodLabel, nil},
		}, layer), true, false, "", []string{"do not meet the requirements"}},
		{"base build fails", false, []call{
			{inspect, "", missing}, {inspect, "", missing}, {inspectBase, "", missing},
			{buildBase, "E: mmdebstrap failed", errors.New("exit status 1")},
			{rm(baseUnchecked), "", errors.New("No such image")},
		}, false, false, "E: mmdebstrap failed", nil},
		{"layer build fails", false, []call{
			{inspect, "", missing}, {inspect, "", missing}, {inspectBase, goodLabel, nil},
			{buildLayer, "", errors.New("docker build: exit status 1: ERROR: ansible-galaxy: no space left")},
			{rm(unchecked), "", errors.New("No such image")},
		}, false, false, "no space left", nil},
		{"layer built but does not carry the base's versions", false, []call{
			{inspect, "", missing}, {inspect, "", missing}, {inspectBase, goodLabel, nil},
			layer[0],
			{inspectUnchecked, "184000000 ", nil},
			{rm(unchecked), "", nil},
		}, false, false, "does not record versions that meet the requirements", nil},
		{"tagging the layer fails", false, []call{
			{inspect, "", missing}, {inspect, "", missing}, {inspectBase, goodLabel, nil},
			layer[0], layer[1],
			{[]string{"docker", "tag", unchecked, tag}, "", errors.New("docker tag: exit status 1")},
			{rm(unchecked), "", nil},
		}, false, false, "docker tag: exit status 1", nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := &script{t: t, calls: c.calls}
			var log strings.Builder
			img, err := s.builder(dir).ensure(context.Background(), Options{Definition: def, Collection: tarball, Latest: c.latest, Log: &log})
			assert.Equal(t, len(c.calls), s.n, "commands made")
			for _, l := range c.log {
				assert.Contains(t, log.String(), l)
			}
			for n, input := range s.inputs {
				assert.Equal(t, buildLayer, c.calls[n-1].argv, "only the layer's docker build has input")
				files := readTar(t, input)
				assert.Equal(t, layerDockerfile(baseTag), files["Dockerfile"])
				assert.Equal(t, string(tarData), files["collection.tar.gz"])
			}
			if c.err != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), c.err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tag, img.Tag)
			assert.Equal(t, baseTag, img.Base)
			assert.Equal(t, c.built, img.Built)
			assert.Equal(t, c.baseBuilt, img.BaseBuilt)
			assert.Equal(t, int64(184000000), img.Size)
			assert.Equal(t, map[string]string{"ansible-core": "2.19.11-1", "python3-ansible-runner": "2.4.1-1"}, img.Versions)
		})
	}
	_, err = (&script{t: t}).builder(dir).ensure(context.Background(), Options{Definition: def, Collection: tarball, Suite: "trixie;reboot"})
	assert.ErrorContains(t, err, `suite "trixie;reboot": not a Debian suite name`)
}

// readTar reads a tar stream's regular files by name.
func readTar(t *testing.T, data []byte) map[string]string {
	t.Helper()
	files := map[string]string{}
	tr := tar.NewReader(bytes.NewReader(data))
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			return files
		}
		require.NoError(t, err)
		b, err := io.ReadAll(tr)
		require.NoError(t, err)
		files[hdr.Name] = string(b)
	}
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

// The build lock is package lock's: a file in a directory root's alone, never opened
// through a link (a name in the shared temporary directory could be anyone's link, or
// a file another user holds locked forever), and waiting for it ends with the context.
func TestTheBuildLockIsNeverALinkAndHonoursContext(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(t.TempDir(), "shadow")
	require.NoError(t, os.WriteFile(target, []byte("root:secret\n"), 0o600))
	require.NoError(t, os.Symlink(target, filepath.Join(dir, buildLock+".lock")))
	b := (&script{t: t}).builder(dir)
	_, err := b.lockBuild(context.Background())
	assert.ErrorContains(t, err, "take the EE build lock")
	assert.ErrorContains(t, err, "too many levels of symbolic links")
	got, rerr := os.ReadFile(target)
	require.NoError(t, rerr)
	assert.Equal(t, "root:secret\n", string(got), "nothing written through the link")

	open := t.TempDir()
	require.NoError(t, os.Chmod(open, 0o777))
	_, err = (&script{t: t}).builder(open).lockBuild(context.Background())
	assert.ErrorContains(t, err, "writable by group or others")

	b = (&script{t: t}).builder(t.TempDir())
	unlock, err := b.lockBuild(context.Background())
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = b.lockBuild(ctx)
	assert.ErrorIs(t, err, context.Canceled)
	assert.ErrorIs(t, err, lock.ErrHeld)
	assert.ErrorContains(t, err, "another process may be building the image")
	unlock()
	unlock, err = b.lockBuild(context.Background())
	require.NoError(t, err)
	unlock()
}

func TestImageSummary(t *testing.T) {
	req := Requirements{Packages: []string{"ansible-core", "python3"}}
	for _, c := range []struct {
		name string
		img  Image
		want string
	}{
		{"base and layer built", Image{Tag: "richt-services-ee:0.3.0-abc", Base: "richt-services-ee-base:def", Built: true, BuildTime: 104600 * time.Millisecond,
			BaseBuilt: true, BaseBuildTime: 99400 * time.Millisecond, Size: 184_123_456,
			Versions: map[string]string{"python3": "3.13.5-1", "ansible-core": "2.19.11-1", "zlib1g": "1:1.3"}, Requirements: req},
			"ee: richt-services-ee:0.3.0-abc: built in 105 s (base richt-services-ee-base:def built in 99 s), size 184 MB (184123456 bytes)\nee: ansible-core 2.19.11-1, python3 3.13.5-1\n"},
		{"layer built on a reused base", Image{Tag: "richt-services-ee:0.3.0-abc", Base: "richt-services-ee-base:def", Built: true, BuildTime: 4200 * time.Millisecond, Size: 184_000_000, Requirements: req},
			"ee: richt-services-ee:0.3.0-abc: built in 4 s (the collection's layer on base richt-services-ee-base:def, reused), size 184 MB (184000000 bytes)\n"},
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

// The collection's version goes into a docker tag, which allows only [A-Za-z0-9_.-], may
// not start with '.' or '-', and has at most 128 characters.
func TestTagIsAValidDockerTag(t *testing.T) {
	valid := regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$`)
	req := Requirements{Packages: []string{"ansible-core"}}
	for _, c := range []struct{ version, prefix string }{
		{"0.3.0", "0.3.0-"},
		{"1.0.0+b1", "1.0.0-b1-"},
		{"1.0.0-rc.1+build/7 x", "1.0.0-rc.1-build-7-x-"},
		{".hidden", "_hidden-"},
		{strings.Repeat("9", 300), strings.Repeat("9", 115) + "-"},
	} {
		t.Run(c.version, func(t *testing.T) {
			tag := Tag(Suite, req, Collection{Name: "richt.services", Version: c.version, Digest: "d"})
			name, ver, ok := strings.Cut(tag, ":")
			require.True(t, ok)
			assert.Equal(t, Repository, name)
			assert.Regexp(t, valid, ver)
			assert.True(t, strings.HasPrefix(ver, c.prefix), "%q starts with %q", ver, c.prefix)
		})
	}
}

// fakeMmdebstrap stands in for mmdebstrap on PATH: it records its work directory (the
// directory of its last argument, build.sh's rootfs.tar) and its pid, then sleeps as a
// long bootstrap would.
const fakeMmdebstrap = `#!/bin/sh
for a; do last=$a; done
dirname "$last" > "$RICHT_FAKE_DIR/work"
echo $$ > "$RICHT_FAKE_DIR/pid.tmp" && mv "$RICHT_FAKE_DIR/pid.tmp" "$RICHT_FAKE_DIR/pid"
exec sleep 600
`

// buildHelperEnv names the environment variable that makes TestRunBuildHelperProcess run
// build.sh (the process TestBuildStopsWhenItsCallerDies kills).
const buildHelperEnv = "RICHT_EE_BUILD_HELPER"

// TestRunBuildHelperProcess is not a test: TestBuildStopsWhenItsCallerDies runs the test
// binary with it to have a process that runs build.sh and can be killed.
func TestRunBuildHelperProcess(t *testing.T) {
	if os.Getenv(buildHelperEnv) == "" {
		t.Skip("helper process for TestBuildStopsWhenItsCallerDies")
	}
	_, err := runBuild(context.Background(), strings.Fields(os.Getenv(buildHelperEnv))...)
	t.Fatalf("build.sh returned while its caller should have been killed: %v", err)
}

// A caller that dies without cancelling (a go test timeout, SIGKILL) still stops the
// build: bash gets SIGTERM as its parent dies, and build.sh's trap stops its whole process
// group (mmdebstrap here) and removes its work directory.
func TestBuildStopsWhenItsCallerDies(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "bin")
	require.NoError(t, os.Mkdir(bin, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(bin, "mmdebstrap"), []byte(fakeMmdebstrap), 0o755))
	tmp := filepath.Join(dir, "tmp") // the helper's TMPDIR: runBuild must leave nothing there
	require.NoError(t, os.Mkdir(tmp, 0o755))
	helper := exec.Command(os.Args[0], "-test.run=^TestRunBuildHelperProcess$", "-test.count=1")
	helper.Env = append(os.Environ(),
		buildHelperEnv+"="+strings.Join(buildTestArgs, " "),
		"RICHT_FAKE_DIR="+dir,
		"TMPDIR="+tmp,
		"PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	require.NoError(t, helper.Start())
	defer func() { _ = helper.Process.Kill(); _ = helper.Wait() }()
	var pid int
	require.Eventually(t, func() bool {
		data, err := os.ReadFile(filepath.Join(dir, "pid"))
		if err != nil {
			return false
		}
		pid, err = strconv.Atoi(strings.TrimSpace(string(data)))
		return err == nil
	}, 60*time.Second, 20*time.Millisecond, "the fake mmdebstrap started")
	work, err := os.ReadFile(filepath.Join(dir, "work"))
	require.NoError(t, err)
	require.NoError(t, helper.Process.Kill())
	_ = helper.Wait()
	assert.Eventually(t, func() bool { return !running(pid) }, 60*time.Second, 50*time.Millisecond, "mmdebstrap %d still runs", pid)
	assert.Eventually(t, func() bool {
		_, err := os.Stat(strings.TrimSpace(string(work)))
		return os.IsNotExist(err)
	}, 60*time.Second, 50*time.Millisecond, "build.sh's work directory %s is left", work)
	left, err := os.ReadDir(tmp)
	require.NoError(t, err)
	assert.Empty(t, left, "files the killed caller left in its TMPDIR")
	if running(pid) {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
}

// buildTestArgs are build.sh's arguments for the tests that run it with fakes.
var buildTestArgs = []string{"trixie", BaseRepository + ":unchecked-test", "ansible-core"}
