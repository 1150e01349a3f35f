package unitfile

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseNamesTheLineWithoutQuotingIt(t *testing.T) {
	cases := []struct {
		name, content string
		line          int
		reason        string
	}{
		{"garbage after header", "[Unit]\nDescription=x\n[Service] secret-token\n", 3, "text after a [Section] header"},
		{"unterminated header", "[Unit]\n[Service\nExecStart=/bin/true\n", 2, "without its closing ]"},
		{"no equals sign", "[Unit]\nDescription=x\n\n[Service]\nsecret-token\nExecStart=/bin/true\n", 5, "neither a [Section] header"},
		{"assignment before section", "# c\nsecret-token=1\n[Unit]\n", 2, "before the first [Section]"},
		{"too long", "[Service]\nEnvironment=" + strings.Repeat("s", 3000) + "\n", 2, "longer than systemd's limit"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Parse([]byte(c.content))
			var pe *ParseError
			require.ErrorAs(t, err, &pe)
			assert.Equal(t, c.line, pe.Line)
			assert.Contains(t, pe.Error(), c.reason)
			assert.NotContains(t, pe.Error(), "secret-token")
			assert.NotContains(t, pe.Error(), "sss")
		})
	}
	opts, err := Parse([]byte("[Unit]\nDescription=ok\n[Service]\nExecStart=/bin/true \\\n  --flag\n"))
	require.NoError(t, err)
	assert.Len(t, opts, 2)
}

func src(path, content string) Source { return Source{Path: path, Content: []byte(content)} }

func TestReloadableMerge(t *testing.T) {
	frag := src("/usr/lib/systemd/system/a.service", "[Service]\nExecStart=/bin/a\n")
	fragR := src("/usr/lib/systemd/system/a.service", "[Service]\nExecStart=/bin/a\nExecReload=/bin/kill -HUP $MAINPID\n")
	cases := []struct {
		name    string
		sources []Source
		capable bool
		reason  string
	}{
		{"fragment without ExecReload", []Source{frag}, false, "no ExecReload="},
		{"fragment with ExecReload", []Source{fragR}, true, "ExecReload= in /usr/lib/systemd/system/a.service"},
		{"drop-in adds ExecReload", []Source{frag, src("/etc/systemd/system/a.service.d/r.conf", "[Service]\nExecReload=/bin/true\n")}, true, "r.conf"},
		{"drop-in resets ExecReload", []Source{fragR, src("/etc/x/reset.conf", "[Service]\nExecReload=\n")}, false, "reset (empty assignment) by /etc/x/reset.conf"},
		{"reset then set again", []Source{fragR, src("/e/10-reset.conf", "[Service]\nExecReload=\n"), src("/e/20-set.conf", "[Service]\nExecReload=/bin/true\n")}, true, "20-set.conf"},
		{"set then reset", []Source{frag, src("/e/10-set.conf", "[Service]\nExecReload=/bin/true\n"), src("/e/20-reset.conf", "[Service]\nExecReload=\n")}, false, "20-reset.conf"},
		{"notify-reload", []Source{src("/f", "[Service]\nType=notify-reload\nExecStart=/bin/x\n")}, true, "Type=notify-reload"},
		{"notify-reload overridden by Type=simple", []Source{src("/f", "[Service]\nType=notify-reload\n"), src("/d.conf", "[Service]\nType=simple\n")}, false, "no ExecReload="},
		{"ExecReload in another section does not count", []Source{src("/f", "[Unit]\nExecReload=/bin/true\n[Service]\nExecStart=/bin/x\n")}, false, "no ExecReload="},
		{"no files", nil, false, "no unit file found"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := Reloadable(c.sources)
			require.NoError(t, err)
			assert.Equal(t, c.capable, got.Capable)
			assert.Contains(t, got.Reason, c.reason)
		})
	}
	_, err := Reloadable([]Source{src("/bad.conf", "[Service\n")})
	assert.ErrorContains(t, err, "parse /bad.conf: line 1")
}

func TestDropInDirs(t *testing.T) {
	assert.Equal(t, []string{"service.d", "foo.service.d"}, DropInDirs("foo.service"))
	assert.Equal(t, []string{"service.d", "foo-.service.d", "foo-bar-.service.d", "foo-bar-baz.service.d"}, DropInDirs("foo-bar-baz.service"))
	assert.Equal(t, []string{"service.d", "web@.service.d", "web@blue.service.d"}, DropInDirs("web@blue.service"))
}

func write(t *testing.T, root, p, content string) {
	t.Helper()
	full := filepath.Join(root, p)
	require.NoError(t, os.MkdirAll(filepath.Dir(full), 0o755))
	require.NoError(t, os.WriteFile(full, []byte(content), 0o644))
}

func TestFilesOrder(t *testing.T) {
	root := t.TempDir()
	write(t, root, "/usr/lib/systemd/system/web@.service", "[Service]\n")
	write(t, root, "/usr/lib/systemd/system/web@.service.d/20-vendor.conf", "")
	write(t, root, "/usr/lib/systemd/system/web@blue.service.d/10-same.conf", "")
	write(t, root, "/etc/systemd/system/web@blue.service.d/10-same.conf", "")
	write(t, root, "/run/systemd/system/service.d/05-all.conf", "")
	write(t, root, "/etc/systemd/system/web@blue.service.d/30-admin.conf", "")
	write(t, root, "/etc/systemd/system/web@blue.service.d/ignored.txt", "")
	frag, dropIns := Files(root, "web@blue.service")
	assert.Equal(t, "/usr/lib/systemd/system/web@.service", frag)
	assert.Equal(t, []string{
		"/run/systemd/system/service.d/05-all.conf",
		"/etc/systemd/system/web@blue.service.d/10-same.conf", // /etc replaces /usr/lib
		"/usr/lib/systemd/system/web@.service.d/20-vendor.conf",
		"/etc/systemd/system/web@blue.service.d/30-admin.conf",
	}, dropIns)

	write(t, root, "/etc/systemd/system/web@blue.service", "[Service]\n")
	frag, _ = Files(root, "web@blue.service")
	assert.Equal(t, "/etc/systemd/system/web@blue.service", frag, "an instance file beats the template")
}

// A mask is a link to /dev/null where the unit's fragment would be. Files reports it as
// the fragment (the unit as it stands); Unmasked passes over a mask in /etc or /run, the
// links `systemctl unmask` removes, to the fragment systemd loads once it is gone.
func TestUnmaskedPassesOverTheMask(t *testing.T) {
	mask := func(root, p string) {
		full := filepath.Join(root, p)
		require.NoError(t, os.MkdirAll(filepath.Dir(full), 0o755))
		require.NoError(t, os.Symlink("/dev/null", full))
	}
	cases := []struct {
		name       string
		masks      []string
		files      []string
		wantMask   string
		wantUnmask string
	}{
		{name: "not masked", files: []string{"/usr/lib/systemd/system/demo.service"},
			wantUnmask: "/usr/lib/systemd/system/demo.service"},
		{name: "masked in /etc: the vendor fragment after it", masks: []string{"/etc/systemd/system/demo.service"},
			files: []string{"/usr/lib/systemd/system/demo.service"}, wantMask: "/etc/systemd/system/demo.service",
			wantUnmask: "/usr/lib/systemd/system/demo.service"},
		{name: "masked in /etc and /run: both passed over",
			masks: []string{"/etc/systemd/system/demo.service", "/run/systemd/system/demo.service"},
			files: []string{"/usr/local/lib/systemd/system/demo.service"}, wantMask: "/etc/systemd/system/demo.service",
			wantUnmask: "/usr/local/lib/systemd/system/demo.service"},
		{name: "masked, no fragment after it", masks: []string{"/etc/systemd/system/demo.service"},
			wantMask: "/etc/systemd/system/demo.service"},
		{name: "a mask under /usr is not unmasked", masks: []string{"/usr/lib/systemd/system/demo.service"},
			wantMask: "/usr/lib/systemd/system/demo.service", wantUnmask: "/usr/lib/systemd/system/demo.service"},
		{name: "a file in /etc above a lower mask: not masked", masks: []string{"/run/systemd/system/demo.service"},
			files: []string{"/etc/systemd/system/demo.service"}, wantUnmask: "/etc/systemd/system/demo.service"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			root := t.TempDir()
			for _, m := range c.masks {
				mask(root, m)
			}
			for _, f := range c.files {
				write(t, root, f, "[Service]\n")
			}
			write(t, root, "/etc/systemd/system/demo.service.d/10.conf", "")
			assert.Equal(t, c.wantMask, Mask(root, "demo.service"))
			frag, dropIns := Unmasked(root, "demo.service")
			assert.Equal(t, c.wantUnmask, frag)
			assert.Equal(t, []string{"/etc/systemd/system/demo.service.d/10.conf"}, dropIns, "drop-ins stay")
		})
	}
}

func FuzzParse(f *testing.F) {
	f.Add("[Unit]\nDescription=x\n[Service]\nExecStart=/bin/true\n")
	f.Add("[Service\n")
	f.Add("a=b\n[X]\n")
	f.Add("[S]\nA=b \\\n c\n")
	f.Fuzz(func(t *testing.T, s string) {
		_, err := Parse([]byte(s))
		if err == nil {
			_, _ = Reloadable([]Source{{Path: "/f", Content: []byte(s)}})
			return
		}
		pe, ok := err.(*ParseError)
		if !ok {
			t.Fatalf("not a ParseError: %v", err)
		}
		if pe.Line < 1 || pe.Line > strings.Count(s, "\n")+1 {
			t.Fatalf("line %d out of range for %q", pe.Line, s)
		}
	})
}

func TestReplaceKeepsSystemdOrder(t *testing.T) {
	frag := src("/usr/lib/systemd/system/a.service", "")
	d10 := src("/usr/lib/systemd/system/a.service.d/10-vendor.conf", "")
	d30 := src("/etc/systemd/system/a.service.d/30-admin.conf", "")
	paths := func(s []Source) []string {
		var out []string
		for _, x := range s {
			out = append(out, x.Path)
		}
		return out
	}
	cases := []struct {
		name    string
		p       string
		present bool
		full    bool
		want    []string
	}{
		{"new drop-in sorts by name", "/etc/systemd/system/a.service.d/20-mine.conf", true, false,
			[]string{frag.Path, d10.Path, "/etc/systemd/system/a.service.d/20-mine.conf", d30.Path}},
		{"same name replaces the vendor drop-in", "/etc/systemd/system/a.service.d/10-vendor.conf", true, false,
			[]string{frag.Path, "/etc/systemd/system/a.service.d/10-vendor.conf", d30.Path}},
		{"full unit becomes the fragment", "/etc/systemd/system/a.service", true, true,
			[]string{"/etc/systemd/system/a.service", d10.Path, d30.Path}},
		{"removal", d30.Path, false, false, []string{frag.Path, d10.Path}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := Replace([]Source{frag, d10, d30}, c.p, nil, c.present, c.full)
			assert.Equal(t, c.want, paths(got))
		})
	}
	got := Replace([]Source{d10}, "/etc/systemd/system/a.service", nil, true, true)
	assert.Equal(t, []string{"/etc/systemd/system/a.service", d10.Path}, paths(got), "a unit with only drop-ins gets a fragment first")
}
