package testenv

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const (
	elPost = `if [ $1 -eq 1 ] && [ -x /usr/lib/systemd/systemd-update-helper ]; then
    /usr/lib/systemd/systemd-update-helper install-system-units a.service b.socket || :
fi`
	elPreun = `if [ $1 -eq 0 ] && [ -x /usr/lib/systemd/systemd-update-helper ]; then
    /usr/lib/systemd/systemd-update-helper remove-system-units a.service b.socket || :
fi`
	elPostunWithRestart = `if [ $1 -ge 1 ] && [ -x /usr/lib/systemd/systemd-update-helper ]; then
    /usr/lib/systemd/systemd-update-helper mark-restart-system-units a.service b.socket || :
fi`
)

func TestSystemdUnitsGiveELScriptlets(t *testing.T) {
	p := Package{Name: "app", Version: "1.0", SystemdUnits: []string{"a.service", "b.socket"},
		Scriptlets: map[string]string{"pre": "getent group app >/dev/null || groupadd -r app"}}
	spec, err := p.spec(nil)
	require.NoError(t, err)
	for _, want := range []string{
		"Requires(post): systemd\nRequires(preun): systemd\nRequires(postun): systemd\n",
		"\n%pre\ngetent group app >/dev/null || groupadd -r app\n",
		"\n%post\n" + elPost + "\n",
		"\n%preun\n" + elPreun + "\n",
		"\n%postun\n" + elPostunWithRestart + "\n",
	} {
		assert.Contains(t, spec, want)
	}

	p.NoRestart = true
	spec, err = p.spec(nil)
	require.NoError(t, err)
	assert.NotContains(t, spec, "%postun\n", "%systemd_postun expands to no scriptlet")
	assert.NotContains(t, spec, "mark-restart")
	assert.Contains(t, spec, "\n%post\n"+elPost+"\n")
}

func TestPackageRefusals(t *testing.T) {
	for _, tc := range []struct {
		name string
		p    Package
		want string
	}{
		{"section set twice", Package{Name: "x", SystemdUnits: []string{"x.service"}, Scriptlets: map[string]string{"post": "true"}},
			"package x: %post is both in Scriptlets and made by SystemdUnits"},
		{"postun set twice", Package{Name: "x", SystemdUnits: []string{"x.service"}, Scriptlets: map[string]string{"postun": "true"}},
			"package x: %postun is both in Scriptlets and made by SystemdUnits"},
		{"NoRestart alone", Package{Name: "x", NoRestart: true}, "NoRestart is set but SystemdUnits is empty"},
		{"unit name with a space", Package{Name: "x", SystemdUnits: []string{"a.service; rm -rf /"}}, `"a.service; rm -rf /" is not a systemd unit name`},
		{"unit name without type", Package{Name: "x", SystemdUnits: []string{"app"}}, `"app" is not a systemd unit name`},
		{"unknown section", Package{Name: "x", Scriptlets: map[string]string{"posttrans": "true"}}, `scriptlet "posttrans" is not one of pre, post, preun, postun`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := tc.p.spec(nil)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
	_, err := Package{Name: "x", SystemdUnits: []string{"x.service"}, NoRestart: true,
		Scriptlets: map[string]string{"postun": "true"}}.spec(nil)
	assert.NoError(t, err, "with NoRestart the macros make no %postun, so the package may have its own")
}

// TestSystemdUnitsPackageBuilds checks that rpmbuild takes the spec and records the
// scriptlets and their dependencies as EL's macros leave them.
func TestSystemdUnitsPackageBuilds(t *testing.T) {
	if _, err := exec.LookPath("rpmbuild"); err != nil {
		t.Skip("needs rpmbuild")
	}
	p := Package{Name: "unitpkg", Version: "1.0", SystemdUnits: []string{"a.service", "b.socket"},
		Requires: []string{"acc-lib = 1.0-1"},
		Files:    map[string]File{"/usr/lib/systemd/system/a.service": {Content: "[Service]\nExecStart=/bin/true\n"}}}
	dir := BuildRepo(t, p)
	rpm := filepath.Join(dir, "unitpkg-1.0-1.noarch.rpm")
	out, err := exec.Command("rpm", "-qp", "--scripts", rpm).CombinedOutput()
	require.NoError(t, err, "%s", out)
	assert.Contains(t, string(out), "postinstall scriptlet (using /bin/sh):\n"+elPost)
	assert.Contains(t, string(out), "preuninstall scriptlet (using /bin/sh):\n"+elPreun)
	assert.Contains(t, string(out), "postuninstall scriptlet (using /bin/sh):\n"+elPostunWithRestart)
	out, err = exec.Command("rpm", "-qp", "--requires", rpm).CombinedOutput()
	require.NoError(t, err, "%s", out)
	reqs := strings.Split(strings.TrimSpace(string(out)), "\n")
	assert.Contains(t, reqs, "acc-lib = 1.0-1")
	assert.Contains(t, reqs, "systemd")
	assert.Contains(t, reqs, "/bin/sh")
}

// TestConfigFilesAndDirsBuild checks that a package's %config(noreplace) files and owned
// directories reach the RPM with their attributes, as EL's daemon packages ship them.
func TestConfigFilesAndDirsBuild(t *testing.T) {
	if _, err := exec.LookPath("rpmbuild"); err != nil {
		t.Skip("needs rpmbuild")
	}
	p := Package{Name: "cfgpkg", Version: "1.0",
		Files: map[string]File{
			"/etc/cfgpkg/main.conf": {Content: "a=1\n", Mode: 0o640, Config: true, Owner: "root", Group: "daemon"},
			"/usr/bin/cfgpkg":       {Content: "#!/bin/sh\n", Mode: 0o755},
		},
		Dirs: map[string]Dir{"/etc/cfgpkg": {Mode: 0o750 | os.ModeSetgid, Group: "daemon"}, "/etc/cfgpkg/conf.d": {}}}
	rpm := filepath.Join(BuildRepo(t, p), "cfgpkg-1.0-1.noarch.rpm")
	out, err := exec.Command("rpm", "-qp", "--qf", "[%{FILEMODES:perms} %{FILEUSERNAME} %{FILEGROUPNAME} %{FILEFLAGS:fflags} %{FILENAMES}\n]", rpm).CombinedOutput()
	require.NoError(t, err, "%s", out)
	assert.Equal(t, `drwxr-s--- root daemon  /etc/cfgpkg
drwxr-xr-x root root  /etc/cfgpkg/conf.d
-rw-r----- root daemon cn /etc/cfgpkg/main.conf
-rwxr-xr-x root root  /usr/bin/cfgpkg
`, string(out))
}
