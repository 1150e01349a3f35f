package service_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/richt/services/modules"
	"github.com/richt/services/testenv"
)

// End-to-end checks of what a rollback keeps, saves and installs: never more than DNF
// itself would install from the repository, never what the service does not own.

// sigd is a small package of the signing tests: one file, no scriptlet.
func sigd(name, version, note string) testenv.Package {
	return testenv.Package{Name: name, Version: version, Summary: "richt signing test " + note,
		Files: map[string]testenv.File{"/usr/share/" + name + "/version": {Content: version + " " + note + "\n", Mode: 0o644}}}
}

// signedRepo builds pkgs into a repository and signs the builds named in signed with a
// new key (rpmsign, gpg on this host), then writes the metadata again (a signature
// changes the file, so its checksum) and the public key as RPM-GPG-KEY-richt beside them.
func signedRepo(t *testing.T, signed []string, pkgs ...testenv.Package) string {
	t.Helper()
	for _, tool := range []string{"gpg", "rpmsign", "createrepo_c"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("signing fixtures need %s on this host: %v", tool, err)
		}
	}
	dir := testenv.BuildRepo(t, pkgs...)
	home, err := os.MkdirTemp("", "richt-gpg-") // short: gpg-agent's socket path is bounded
	require.NoError(t, err)
	t.Cleanup(func() {
		kill := exec.Command("gpgconf", "--kill", "gpg-agent")
		kill.Env = append(os.Environ(), "GNUPGHOME="+home)
		_ = kill.Run()
		_ = os.RemoveAll(home)
	})
	require.NoError(t, os.Chmod(home, 0o700))
	run := func(argv ...string) {
		cmd := exec.Command(argv[0], argv[1:]...)
		cmd.Env = append(os.Environ(), "GNUPGHOME="+home)
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "%v: %s", argv, out)
	}
	const uid = "richt signing test <signing@richt.invalid>"
	run("gpg", "--batch", "--pinentry-mode", "loopback", "--passphrase", "", "--quick-gen-key", uid, "rsa3072", "sign", "never")
	for _, nvr := range signed {
		run("rpmsign", "--addsign", "--define", "_gpg_name "+uid, "--define", "__gpg /usr/bin/gpg",
			"--define", "_gpg_path "+home, filepath.Join(dir, nvr+".noarch.rpm"))
	}
	run("createrepo_c", "--quiet", dir)
	cmd := exec.Command("gpg", "--armor", "--export", uid)
	cmd.Env = append(os.Environ(), "GNUPGHOME="+home)
	key, err := cmd.Output()
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "RPM-GPG-KEY-richt"), key, 0o644))
	return dir
}

// addSignedRepo adds dir to the target as repository id with gpgcheck on and its key.
func addSignedRepo(t *testing.T, tg *testenv.Target, id, dir string) {
	t.Helper()
	require.NoError(t, tg.AddRepo(context.Background(), id, dir))
	repo := fmt.Sprintf("[%s]\nname=richt signed %s\nbaseurl=file:///srv/richt-repos/%s\nenabled=1\ngpgcheck=1\ngpgkey=file:///srv/richt-repos/%s/RPM-GPG-KEY-richt\nmetadata_expire=0\n", id, id, id, id)
	require.NoError(t, tg.WriteFile(context.Background(), "/etc/yum.repos.d/"+id+".repo", []byte(repo), 0o644))
}

func trustEnv(t *testing.T) *env {
	t.Helper()
	if testing.Short() {
		t.Skip("end-to-end: needs Docker")
	}
	return &env{t: testenv.Start(t), module: testenv.BuildModule(t, modules.Command, testenv.Named("service"))}
}

// kept lists the builds kept for the service named (its own directory), "" for none.
func keptFiles(t *testing.T, tg *testenv.Target, service string) string {
	t.Helper()
	return strings.TrimSpace(tg.Shell(t, fmt.Sprintf("ls /var/cache/richt/rpms/%s-*/ 2>/dev/null | tr '\\n' ' ' || true", service)))
}

func sigdVersion(t *testing.T, tg *testenv.Target, name string) string {
	t.Helper()
	return strings.TrimSpace(tg.Shell(t, "rpm -q --qf '%{VERSION}' "+name+" || true"))
}

// TestRollbackKeepsOnlyWhatTheRepositorySigned: a repository with gpgcheck on that
// serves an unsigned old build. DNF refuses to install it from there; a rollback, which
// installs the kept file as a local package, must refuse it too: the change is refused
// before it begins, naming the build, and nothing is kept. A signed build is kept (marked),
// and a failed change puts it back with DNF's signature check of local files on: a kept
// file that is not the signed build is refused by that transaction.
func TestRollbackKeepsOnlyWhatTheRepositorySigned(t *testing.T) {
	t.Parallel()
	e := trustEnv(t)
	tg := e.t
	dir := signedRepo(t, []string{"sigd-2.0-1", "sigd-3.0-1"},
		sigd("sigd", "1.0", "unsigned"), sigd("sigd", "2.0", "signed"), sigd("sigd", "3.0", "signed"))
	addSignedRepo(t, tg, "signed", dir)
	args := func(version string) map[string]any {
		return map[string]any{"name": "trust", "rollback": true,
			"packages": []any{map[string]any{"name": "sigd", "version": "0:" + version + "-1.noarch"}}}
	}

	t.Run("DNF itself refuses the unsigned build from that repository", func(t *testing.T) {
		res, err := tg.Exec(context.Background(), "dnf", "-y", "install-nevra", "sigd-0:1.0-1.noarch")
		require.NoError(t, err)
		require.NotZero(t, res.ExitCode, "DNF installed an unsigned build from a gpgcheck repository: %s", res.Stdout+res.Stderr)
		t.Logf("DNF: %s", lastLine(res.Stdout+res.Stderr))
		tg.MustExec(t, "dnf", "-y", "--nogpgcheck", "install-nevra", "sigd-0:1.0-1.noarch")
		require.Equal(t, "1.0", sigdVersion(t, tg, "sigd"))
	})

	t.Run("a change whose rollback would install the unsigned build is refused before it begins", func(t *testing.T) {
		r := e.run(t, args("2.0"))
		require.True(t, r.Failed(), "the change went ahead: %v", r)
		t.Logf("message: %s", r.Msg())
		assert.Equal(t, "rollback", r["failed_step"])
		assert.Contains(t, r.Msg(), "sigd-0:1.0-1.noarch from repository signed, which has gpgcheck on, fails DNF's signature check")
		assert.False(t, r.Changed())
		assert.Equal(t, "1.0", sigdVersion(t, tg, "sigd"), "nothing changed")
		assert.Equal(t, "", keptFiles(t, tg, "trust"), "the unsigned build is not kept")
		assert.Equal(t, "", strings.TrimSpace(tg.Shell(t, "ls -A /var/lib/richt/rollback 2>/dev/null || true")), "no record")
	})

	t.Run("a signed build is kept, marked, and put back with its signature checked", func(t *testing.T) {
		tg.MustExec(t, "dnf", "-y", "install-nevra", "sigd-0:2.0-1.noarch") // imports the key, as a run would
		r := e.run(t, args("3.0"))
		require.False(t, r.Failed(), r.Msg())
		assert.Equal(t, "sigd-0~3.0-1.noarch.rpm sigd-0~3.0-1.noarch.rpm.gpgcheck", keptFiles(t, tg, "trust"),
			"the installed build is kept, marked as checked")
		// A change that fails after the packages step: the config's validator refuses it.
		failing := args("2.0")
		failing["configs"] = []any{map[string]any{"name": "c", "path": "/etc/sigd.conf", "content": "x\n", "validate": "/bin/false %s"}}
		r = e.run(t, failing)
		require.True(t, r.Failed())
		assert.Contains(t, r.Msg(), "the previous state is back", r.Msg())
		assert.Equal(t, "3.0", sigdVersion(t, tg, "sigd"))

		// The kept file swapped for an unsigned build of the same NEVRA (what the mark
		// says was checked no longer is): the rollback's transaction refuses it.
		forged := testenv.BuildRepo(t, sigd("sigd", "3.0", "forged"))
		kept := strings.TrimSpace(tg.Shell(t, "ls -d /var/cache/richt/rpms/trust-*"))
		require.NoError(t, tg.CopyFile(context.Background(), filepath.Join(forged, "sigd-3.0-1.noarch.rpm"), kept+"/sigd-0~3.0-1.noarch.rpm", 0o600))
		r = e.run(t, failing)
		require.True(t, r.Failed())
		t.Logf("message: %s", r.Msg())
		assert.Contains(t, r.Msg(), "the rollback failed at packages")
		assert.NotContains(t, tg.Shell(t, "cat /usr/share/sigd/version"), "forged", "the unsigned file was not installed")
	})
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}

// TestRollbackKeepsTheBuildsOfEveryPackageOfTheService: a run that moves only one of the
// service's packages keeps the other's build, so the other's next change, once no
// repository carries its installed build any more, can still be rolled back. Check mode
// keeps nothing and leaves no temporary cache. A config whose state before the change could not be put
// back (setgid) refuses the run before any change.
func TestRollbackKeepsTheBuildsOfEveryPackageOfTheService(t *testing.T) {
	t.Parallel()
	e := trustEnv(t)
	tg := e.t
	repo := testenv.BuildRepo(t, sigd("pa", "1.0", "a"), sigd("pa", "2.0", "a"), sigd("pb", "1.0", "b"), sigd("pb", "2.0", "b"))
	require.NoError(t, tg.AddRepo(context.Background(), "pair", repo))
	args := func(a, b string) map[string]any {
		return map[string]any{"name": "pair", "rollback": true, "packages": []any{
			map[string]any{"name": "pa", "version": "0:" + a + "-1.noarch"},
			map[string]any{"name": "pb", "version": "0:" + b + "-1.noarch"}}}
	}
	r := e.run(t, args("1.0", "1.0"))
	require.False(t, r.Failed(), r.Msg())
	assert.Equal(t, "pa-0~1.0-1.noarch.rpm pb-0~1.0-1.noarch.rpm", keptFiles(t, tg, "pair"))

	t.Run("check mode asks the repositories and leaves nothing behind", func(t *testing.T) {
		// pa's build no longer kept: check mode asks the repositories for it (keep.py,
		// through a temporary DNF cache of its own).
		tg.Shell(t, "rm /var/cache/richt/rpms/pair-*/pa-* && touch /var/tmp/before-check")
		r := e.run(t, with(args("2.0", "1.0"), "_ansible_check_mode", true))
		require.False(t, r.Failed(), r.Msg())
		assert.Contains(t, fmt.Sprint(r["plan"]), "rollback: keep pa-0:1.0-1.noarch: fetch from pair, gpgcheck off",
			"the keep step is planned (the build to fetch, its repository, its gpgcheck), not done")
		assert.Equal(t, "", strings.TrimSpace(tg.Shell(t, "find /var/cache/richt /var/lib/richt/rollback -newer /var/tmp/before-check 2>/dev/null || true")))
		assert.Equal(t, "", strings.TrimSpace(tg.Shell(t, "ls -d /tmp/richt-keep-check-* /var/tmp/richt-keep-check-* 2>/dev/null || true")),
			"its temporary cache is removed")

		// keep.py alone (the module's check mode also runs rpm_exact's dnf --assumeno,
		// which reads through DNF's cache): it asks the repository (metadata_expire=0)
		// and writes nothing to DNF's cache.
		script, err := os.ReadFile("../../pkg/rollback/keep.py")
		require.NoError(t, err)
		require.NoError(t, tg.WriteFile(context.Background(), "/var/tmp/keep.py", script, 0o644))
		build := `{"nevra": "pa-0:1.0-1.noarch", "name": "pa", "epoch": 0, "version": "1.0", "release": "1", "arch": "noarch", "file": "pa-0~1.0-1.noarch.rpm"}`
		out := tg.Shell(t, "touch /var/tmp/before-keep && python3 -I /var/tmp/keep.py check /var/tmp '"+build+"'")
		assert.Contains(t, out, `"found": {"pa-0:1.0-1.noarch": {"gpgcheck": false, "path": "", "repo": "pair"}}`)
		assert.Equal(t, "", strings.TrimSpace(tg.Shell(t, "find /var/cache/dnf -newer /var/tmp/before-keep 2>/dev/null || true")))
	})

	t.Run("moving pa keeps pb's build", func(t *testing.T) {
		r := e.run(t, args("2.0", "1.0"))
		require.False(t, r.Failed(), r.Msg())
		assert.Equal(t, "pa-0~2.0-1.noarch.rpm pb-0~1.0-1.noarch.rpm", keptFiles(t, tg, "pair"))
		// No repository carries pb 1.0 any more; its change is still possible, with
		// its rollback from the kept build.
		tg.Shell(t, "rm /etc/yum.repos.d/pair.repo")
		require.NoError(t, tg.AddRepo(context.Background(), "pair2", testenv.BuildRepo(t, sigd("pa", "2.0", "a"), sigd("pb", "2.0", "b"))))
		failing := args("2.0", "2.0")
		failing["configs"] = []any{map[string]any{"name": "c", "path": "/etc/pair.conf", "content": "x\n", "validate": "/bin/false %s"}}
		r = e.run(t, failing)
		require.True(t, r.Failed())
		assert.Contains(t, r.Msg(), "the previous state is back", r.Msg())
		assert.Equal(t, "1.0", sigdVersion(t, tg, "pb"))
	})

	t.Run("a config whose old state could not be put back refuses the run before any change", func(t *testing.T) {
		tg.Shell(t, "printf 'old\\n' > /etc/pair.conf && chmod 2644 /etc/pair.conf")
		a := args("2.0", "1.0")
		a["configs"] = []any{map[string]any{"name": "c", "path": "/etc/pair.conf", "content": "new\n"}}
		r := e.run(t, a)
		require.True(t, r.Failed(), "went ahead: %v", r)
		t.Logf("message: %s", r.Msg())
		assert.Equal(t, "rollback", r["failed_step"])
		assert.Contains(t, r.Msg(), "/etc/pair.conf could not be put back")
		assert.Contains(t, r.Msg(), "setgid")
		assert.Equal(t, "old\n", tg.MustExec(t, "cat", "/etc/pair.conf"))
	})
}
