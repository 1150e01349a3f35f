package rollback

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestRestoreScript(t *testing.T) {
	cases := []struct {
		name            string
		install, remove []string
		want            string
		err             string
	}{
		{
			name:    "downgrade two, remove one, one transaction",
			install: []string{"/var/cache/richt/rpms/nginx-2~1.26.3-1.el10.x86_64.rpm", "/var/cache/richt/rpms/nginx-core-2~1.26.3-1.el10.x86_64.rpm"},
			remove:  []string{"python3-foo-bar"},
			want: "install /var/cache/richt/rpms/nginx-2~1.26.3-1.el10.x86_64.rpm\n" +
				"install /var/cache/richt/rpms/nginx-core-2~1.26.3-1.el10.x86_64.rpm\n" +
				"remove python3-foo-bar\n" +
				"run\n",
		},
		{name: "install only", install: []string{"/k/a-0~1-1.noarch.rpm"}, want: "install /k/a-0~1-1.noarch.rpm\nrun\n"},
		{name: "remove only", remove: []string{"a", "libstdc++"}, want: "remove a\nremove libstdc++\nrun\n"},
		{name: "nothing", err: "nothing to install or remove"},
		{name: "space in path", install: []string{"/k/a b.rpm"}, err: `install: path "/k/a b.rpm" has ' '`},
		{name: "newline in path", install: []string{"/k/a.rpm\nremove bash"}, err: `install: path "/k/a.rpm\nremove bash" does not end in .rpm`},
		{name: "newline before .rpm", install: []string{"/k/a\nrun\n.rpm"}, err: `has '\n'`},
		{name: "tab", install: []string{"/k/a\t.rpm"}, err: `has '\t'`},
		{name: "quote", install: []string{"/k/a'.rpm"}, err: `has '\''`},
		{name: "backslash", install: []string{`/k/a\.rpm`}, err: `has '\\'`},
		{name: "non-ASCII", install: []string{"/k/a\u00a0.rpm"}, err: `has '\u00a0'`},
		{name: "relative", install: []string{"k/a.rpm"}, err: "not absolute and clean"},
		{name: "unclean", install: []string{"/k/../a.rpm"}, err: "not absolute and clean"},
		{name: "empty path", install: []string{""}, err: "install: empty path"},
		{name: "not an rpm", install: []string{"/k/a"}, err: "does not end in .rpm"},
		{name: "name with space", remove: []string{"a b"}, err: "remove: invalid: package name \"a b\" has whitespace"},
		{name: "name with newline", remove: []string{"a\nrun"}, err: "control character"},
		{name: "name as option", remove: []string{"-y"}, err: `starts with "-"`},
		{name: "glob", remove: []string{"nginx*"}, err: "'*'"},
		{name: "empty name", remove: []string{""}, err: "empty package name"},
		{name: "one bad among good", install: []string{"/k/a.rpm"}, remove: []string{"ok", "b c"}, err: "whitespace"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := RestoreScript(c.install, c.remove)
			if c.err != "" {
				require.Error(t, err)
				assert.ErrorContains(t, err, "restore script")
				assert.ErrorContains(t, err, c.err)
				assert.Nil(t, got)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, c.want, string(got))
		})
	}
}

func TestRestoreScriptTakesKeeperPaths(t *testing.T) {
	k := Keeper{}
	got, err := RestoreScript([]string{k.Path("nginx-2:1.26.3-1.el10.x86_64"), k.Path("a-b-0:1.0~rc1^git2-1.noarch")}, nil)
	require.NoError(t, err)
	assert.Equal(t, "install /var/cache/richt/rpms/nginx-2~1.26.3-1.el10.x86_64.rpm\n"+
		"install /var/cache/richt/rpms/a-b-0~1.0~rc1^git2-1.noarch.rpm\nrun\n", string(got))
	_, err = RestoreScript([]string{k.Path("not a build")}, nil)
	assert.ErrorContains(t, err, "empty path", "an invalid build has no path to install")
}

// A kept build from a repository with gpgcheck on is installed with DNF's check of local
// packages on; without one DNF's default stays.
func TestRestoreArgv(t *testing.T) {
	for _, c := range []struct {
		name string
		got  []string
		want []string
	}{
		{"with repositories", RestoreArgv("dnf", "/var/lib/richt/rollback/web.dnf", false),
			[]string{"dnf", "-y", "--setopt=skip_if_unavailable=True", "shell", "/var/lib/richt/rollback/web.dnf"}},
		{"yum", RestoreArgv("/usr/bin/yum", "/s", false),
			[]string{"/usr/bin/yum", "-y", "--setopt=skip_if_unavailable=True", "shell", "/s"}},
		{"offline", RestoreArgvOffline("dnf", "/s", false), []string{"dnf", "-y", "--disablerepo=*", "shell", "/s"}},
		{"gpgcheck", RestoreArgv("dnf", "/s", true),
			[]string{"dnf", "-y", "--setopt=skip_if_unavailable=True", "--setopt=localpkg_gpgcheck=True", "shell", "/s"}},
		{"offline gpgcheck", RestoreArgvOffline("dnf", "/s", true),
			[]string{"dnf", "-y", "--disablerepo=*", "--setopt=localpkg_gpgcheck=True", "shell", "/s"}},
	} {
		assert.Equal(t, c.want, c.got, c.name)
	}
}
