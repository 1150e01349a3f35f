package service_test

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/richt/services/modules"
	"github.com/richt/services/testenv"
)

// swapTemp, run as the daemon's user, exchanges the config's temporary file (the one
// .appd.conf.richt-* in /etc/appd) with another name in that directory in one step
// (renameat2 RENAME_EXCHANGE: no moment without a file at either name). Run twice, it
// puts both back.
const swapTemp = `import ctypes, glob, os, sys
libc = ctypes.CDLL(None, use_errno=True)
tmp = glob.glob("/etc/appd/.appd.conf.richt-*")
if len(tmp) != 1:
    sys.exit("temporary files: %r" % tmp)
if libc.renameat2(-100, tmp[0].encode(), -100, sys.argv[1].encode(), 2) != 0:
    sys.exit("renameat2: " + os.strerror(ctypes.get_errno()))
`

// validateProbe is the config's validator, run by the module as root. It has the daemon's
// user swap the temporary file for a file of its own (what nginx -t would load_module
// as root), then for a link to /etc/shadow (what a validator's error would quote),
// records what it reads at the path it was given each time, and swaps back.
const validateProbe = `#!/bin/sh
for other in /etc/appd/evil /etc/appd/shadow; do
  setpriv --reuid=appd --regid=appd --clear-groups python3 /usr/local/lib/swap-temp.py "$other" || exit 2
  { cat "$1" || echo unreadable; echo --; } >>/var/log/validated 2>&1
  setpriv --reuid=appd --regid=appd --clear-groups python3 /usr/local/lib/swap-temp.py "$other" || exit 2
done
`

// TestADaemonsUserCannotMakeRootActForIt is docs/security.md's end-to-end check of the
// configs step on a real target, with a daemon's user that owns its config's directory
// (Debian's /etc/redis shape, appd:appd 2770) and acts while the module runs as root: it swaps the
// temporary file under the validator (root validates only the task's content, and that
// is what is installed, the user's); it cannot have a config under a unit directory
// (what systemd runs as root) made its own, nor written into a directory it owns there;
// and no run without diff mode returns the config's previous content.
func TestADaemonsUserCannotMakeRootActForIt(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("end-to-end: needs Docker")
	}
	ctx := context.Background()
	tg := testenv.Start(t)
	module := testenv.BuildModule(t, modules.Command, testenv.Named("service"))
	require.NoError(t, tg.WriteFile(ctx, "/usr/local/lib/swap-temp.py", []byte(swapTemp), 0o644))
	require.NoError(t, tg.WriteFile(ctx, "/usr/local/bin/validate-probe", []byte(validateProbe), 0o755))
	tg.Shell(t, `useradd -r -M -s /usr/sbin/nologin appd && install -d -o appd -g appd -m 2770 /etc/appd &&
printf 'requirepass old-secret\n' >/etc/appd/appd.conf && chown appd:appd /etc/appd/appd.conf && chmod 0640 /etc/appd/appd.conf &&
printf 'load_module /home/appd/evil.so;\n' >/etc/appd/evil && chown appd:appd /etc/appd/evil &&
ln -s /etc/shadow /etc/appd/shadow && chown -h appd:appd /etc/appd/shadow`)
	config := func(content string) map[string]any {
		return map[string]any{"name": "appd", "configs": []any{map[string]any{"name": "main", "path": "/etc/appd/appd.conf",
			"content": content, "owner": "appd", "group": "appd", "mode": "0640", "validate": "/usr/local/bin/validate-probe %s"}}}
	}

	t.Run("the validator sees only the task's content, which is installed", func(t *testing.T) {
		r := tg.RunModule(t, module, config("port 7000\n"))
		require.False(t, r.Failed(), r.Msg())
		assert.True(t, r.Changed())
		assert.Equal(t, "port 7000\n--\nport 7000\n--\n", tg.MustExec(t, "cat", "/var/log/validated"),
			"what root's validator read, each time the daemon's user had swapped the temporary file")
		assert.Equal(t, "port 7000\n", tg.MustExec(t, "cat", "/etc/appd/appd.conf"))
		assert.Equal(t, "appd:appd 640", strings.TrimSpace(tg.MustExec(t, "stat", "-c", "%U:%G %a", "/etc/appd/appd.conf")))
		assert.Equal(t, "load_module /home/appd/evil.so;\n", tg.MustExec(t, "cat", "/etc/appd/evil"), "the user's file is its own again")
		assert.Equal(t, "/etc/shadow", strings.TrimSpace(tg.MustExec(t, "readlink", "/etc/appd/shadow")))
		tg.Shell(t, `! ls -A /etc/appd | grep richt && [ -z "$(ls -A /run/richt/validate)" ]`)
		assert.Equal(t, "drwx------ root", strings.TrimSpace(tg.MustExec(t, "stat", "-c", "%A %U", "/run/richt/validate")))

		configs, _ := r["configs"].([]any)
		require.Len(t, configs, 1)
		assert.NotContains(t, configs[0], "diff", "no diff without diff mode")
		assert.NotContains(t, r, "diff")
	})

	t.Run("the previous content only in diff mode", func(t *testing.T) {
		tg.Shell(t, `: >/var/log/validated`)
		r := tg.RunModule(t, module, with(config("port 7001\n"), "_ansible_check_mode", true, "_ansible_diff", true))
		require.False(t, r.Failed(), r.Msg())
		assert.Contains(t, r.Map("diff")["before"], "port 7000")
		configs, _ := r["configs"].([]any)
		require.Len(t, configs, 1)
		assert.Contains(t, configs[0], "diff")
		r = tg.RunModule(t, module, with(config("port 7001\n"), "_ansible_check_mode", true))
		require.False(t, r.Failed(), r.Msg())
		configs, _ = r["configs"].([]any)
		assert.NotContains(t, configs[0], "diff")
		assert.NotContains(t, r, "diff")
	})

	const dropin = "/etc/systemd/system/appd.service.d/50-env.conf"
	unitConfig := func(owner string) map[string]any {
		c := map[string]any{"name": "env", "path": dropin, "content": "[Service]\nExecStartPre=/bin/true\n"}
		if owner != "" {
			c["owner"] = owner
		}
		return map[string]any{"name": "appd", "configs": []any{c}}
	}

	t.Run("a config under a unit directory is never the daemon user's", func(t *testing.T) {
		tg.Shell(t, `install -d -m 0755 /etc/systemd/system/appd.service.d`)
		r := tg.RunModule(t, module, unitConfig("appd"))
		require.True(t, r.Failed())
		assert.Contains(t, r.Msg(), `configs[0].owner: "appd" is not root, and `+dropin+` is under systemd's unit directories`)
		tg.MustExec(t, "test", "!", "-e", dropin)
	})

	t.Run("nor written into a directory the daemon's user owns there", func(t *testing.T) {
		tg.Shell(t, `chown appd:appd /etc/systemd/system/appd.service.d`)
		uid := strings.TrimSpace(tg.MustExec(t, "id", "-u", "appd"))
		r := tg.RunModule(t, module, unitConfig(""))
		require.True(t, r.Failed())
		assert.Contains(t, r.Msg(), "/etc/systemd/system/appd.service.d (owner uid "+uid)
		assert.Contains(t, r.Msg(), "its directories follow the unit files' rule: owned by root and writable by neither group nor others")
		tg.MustExec(t, "test", "!", "-e", dropin)

		tg.Shell(t, `chown root:root /etc/systemd/system/appd.service.d`)
		r = tg.RunModule(t, module, unitConfig(""))
		require.False(t, r.Failed(), r.Msg())
		assert.Equal(t, "root:root 644", strings.TrimSpace(tg.MustExec(t, "stat", "-c", "%U:%G %a", dropin)))
	})
}
