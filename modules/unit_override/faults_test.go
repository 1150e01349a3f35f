package unit_override_test

// Faults: unit_override killed at random moments, a full filesystem under the write, and
// parameters that must be refused before anything is written, each on its own target.

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/richt/services/modules"
	"github.com/richt/services/testenv"
)

// faultTarget is a bare target with unit_override installed: no package, no unit. A
// drop-in for a unit that does not exist is a file like any other, which is all these
// tests need.
type faultTarget struct {
	t      *testenv.Target
	module string // the binary on the host
}

func newFaultTarget(t *testing.T) *faultTarget {
	t.Helper()
	if testing.Short() {
		t.Skip("end-to-end: needs Docker")
	}
	return &faultTarget{t: testenv.Start(t), module: testenv.BuildModule(t, modules.Command, testenv.Named("unit_override"))}
}

func (f *faultTarget) run(t *testing.T, args map[string]any) testenv.Result {
	t.Helper()
	return f.t.RunModule(t, f.module, args)
}

// snapshot is everything a write could change in dir: names, modes, owners, sizes,
// mtimes to the nanosecond and the bytes, and the directory's own mtime (which a
// temporary file created and removed again changes too).
func (f *faultTarget) snapshot(t *testing.T, dir string) string {
	t.Helper()
	return f.t.Shell(t, "find "+dir+" -printf '%p %m %U %G %s %T@\\n' 2>/dev/null | sort; find "+dir+" -type f -exec sha256sum {} + 2>/dev/null | sort")
}

// files is snapshot without the directory itself.
func (f *faultTarget) files(t *testing.T, dir string) string {
	t.Helper()
	return f.t.Shell(t, "find "+dir+" -mindepth 1 -printf '%p %m %U %G %s %T@\\n' 2>/dev/null | sort; find "+dir+" -type f -exec sha256sum {} + 2>/dev/null | sort")
}

func writeJSON(t *testing.T, tg *testenv.Target, path string, v any) {
	t.Helper()
	data, err := json.Marshal(v)
	require.NoError(t, err)
	require.NoError(t, tg.WriteFile(context.Background(), path, data, 0o600))
}

// killLoop runs inside the target, in one exec: it starts the module in the background,
// kills it with SIGKILL after 0–30 ms and checks the drop-in after every kill, until it
// has killed a running module (kill succeeded) want times or run max rounds. It prints one
// line per violation and a summary line.
const killLoop = `
bin=$1 dir=$2 drop=$3 want=$4 max=$5
kills=0 mid=0 completed=0 failed=0 stale=0 i=0
while [ $kills -lt $want ] && [ $i -lt $max ]; do
	case $((i % 4)) in
	0) args=/var/tmp/kill-A-reload.json ;;
	1) args=/var/tmp/kill-B-noreload.json ;;
	2) args=/var/tmp/kill-A-noreload.json ;;
	3) args=/var/tmp/kill-B-reload.json ;;
	esac
	# dash has no $RANDOM; od reads two random bytes. sleep takes fractions: 0.000-0.030.
	ms=$(( $(od -An -N2 -tu2 /dev/urandom) % 31 ))
	"$bin" "$args" >/var/tmp/kill-out 2>&1 &
	pid=$!
	sleep "$(printf '0.%03d' "$ms")"
	kill -9 "$pid" 2>/dev/null && kills=$((kills + 1))
	wait "$pid" 2>/dev/null
	# The module prints its one result at its very end: empty output means the kill
	# landed while it was running.
	if [ -s /var/tmp/kill-out ]; then
		completed=$((completed + 1))
		grep -q '"failed":true' /var/tmp/kill-out && { failed=$((failed + 1)); echo "FAILED round $i: $(head -c 400 /var/tmp/kill-out)"; }
	else
		mid=$((mid + 1))
	fi
	if ! cmp -s "$drop" /var/tmp/kill-A && ! cmp -s "$drop" /var/tmp/kill-B; then
		echo "MIXED round $i (${ms}ms): $(stat -c '%s bytes' "$drop" 2>&1)"
	fi
	for c in "$dir"/*.conf; do
		[ "$c" = "$drop" ] || echo "EXTRA round $i: $c"
	done
	ls -A "$dir" | grep -q '^\.' && stale=$((stale + 1))
	i=$((i + 1))
done
echo "SUMMARY rounds=$i kills=$kills mid=$mid completed=$completed failed=$failed stale=$stale"
`

func TestFaultSIGKILLLeavesOldOrNewFile(t *testing.T) {
	t.Parallel()
	f := newFaultTarget(t)
	ctx := context.Background()
	const (
		unit  = "fault.service"
		name  = "10-kill.conf"
		dir   = "/etc/systemd/system/fault.service.d"
		kills = 50
	)
	drop := dir + "/" + name
	contentA := "[Service]\nEnvironment=KILL=A\n"
	var b strings.Builder
	b.WriteString("[Service]\n")
	for i := 0; i < 300; i++ {
		fmt.Fprintf(&b, "Environment=KILL_B_%03d=%s\n", i, strings.Repeat("b", 20))
	}
	contentB := b.String() // about 12 KB: a torn write would show as a size or byte mix
	require.NoError(t, f.t.WriteFile(ctx, "/var/tmp/kill-A", []byte(contentA), 0o644))
	require.NoError(t, f.t.WriteFile(ctx, "/var/tmp/kill-B", []byte(contentB), 0o644))
	for _, c := range []struct {
		file, content string
		reload        bool
	}{
		{"kill-A-reload", contentA, true}, {"kill-A-noreload", contentA, false},
		{"kill-B-reload", contentB, true}, {"kill-B-noreload", contentB, false},
	} {
		writeJSON(t, f.t, "/var/tmp/"+c.file+".json", map[string]any{"unit": unit, "name": name, "content": c.content, "daemon_reload": c.reload})
	}
	// A first, uninterrupted run: the drop-in exists, and the binary is in the target.
	r := f.run(t, map[string]any{"unit": unit, "name": name, "content": contentA})
	require.False(t, r.Failed(), r.Msg())
	bin, err := f.t.InstallModule(ctx, f.module)
	require.NoError(t, err)

	start := time.Now()
	res, err := f.t.Exec(ctx, "/bin/sh", "-c", killLoop, "kill-loop", bin, dir, drop, strconv.Itoa(kills), "200")
	require.NoError(t, err)
	elapsed := time.Since(start)
	require.Equal(t, 0, res.ExitCode, res.Stderr)
	out := strings.TrimSpace(res.Stdout)
	for _, l := range strings.Split(out, "\n") {
		assert.False(t, strings.HasPrefix(l, "MIXED") || strings.HasPrefix(l, "EXTRA") || strings.HasPrefix(l, "FAILED"), l)
	}
	m := regexp.MustCompile(`SUMMARY rounds=(\d+) kills=(\d+) mid=(\d+) completed=(\d+) failed=(\d+) stale=(\d+)`).FindStringSubmatch(out)
	require.NotNil(t, m, out)
	rounds, killed, mid := atoi(m[1]), atoi(m[2]), atoi(m[3])
	t.Logf("%d rounds in %s: %d kills delivered, %d landed mid-run (no result printed), %d runs finished first, %d rounds left a stale temporary file for the next run to clear",
		rounds, elapsed.Round(time.Millisecond), killed, mid, atoi(m[4]), atoi(m[6]))
	assert.GreaterOrEqual(t, killed, 40)
	assert.GreaterOrEqual(t, mid, 20, "enough kills landed while the module ran to mean something")

	// One normal run afterwards leaves no temporary file of the drop-in behind.
	r = f.run(t, map[string]any{"unit": unit, "name": name, "content": contentB})
	require.False(t, r.Failed(), r.Msg())
	left := f.t.Shell(t, "ls -A "+dir)
	assert.Equal(t, name, strings.TrimSpace(left), "only the drop-in remains")
	assert.Equal(t, contentB, f.t.MustExec(t, "cat", drop))
	if other := strings.TrimSpace(f.t.Shell(t, "ls -A /var/lib/richt 2>/dev/null | grep '^\\.' || true")); other != "" {
		t.Logf("stale temporary files of the durable store (not unit_override's to clear): %s", other)
	}
}

func atoi(s string) int { n, _ := strconv.Atoi(s); return n }

func TestFaultFullDiskKeepsOldDropIn(t *testing.T) {
	t.Parallel()
	f := newFaultTarget(t)
	const (
		unit = "fault.service"
		name = "10-big.conf"
		dir  = "/etc/systemd/system/fault.service.d"
	)
	drop := dir + "/" + name
	// The targets run with every capability, so a mount works inside them.
	f.t.Shell(t, "mkdir -p "+dir+" && mount -t tmpfs -o size=64k,mode=0755 tmpfs "+dir)
	old := "[Service]\nEnvironment=SIZE=small\n"
	r := f.run(t, map[string]any{"unit": unit, "name": name, "content": old, "daemon_reload": false})
	require.False(t, r.Failed(), r.Msg())
	// Fill what is left; dd stops at ENOSPC.
	f.t.Shell(t, "dd if=/dev/zero of="+dir+"/filler bs=4k 2>/dev/null; true")
	before := f.files(t, dir)

	const secret = "s3cr3t-full-disk-4711"
	big := "[Service]\nEnvironment=TOKEN=" + secret + "\n" + strings.Repeat("Environment=PAD="+strings.Repeat("x", 60)+"\n", 200)
	for _, sensitive := range []bool{false, true} {
		t.Run(fmt.Sprintf("sensitive=%v", sensitive), func(t *testing.T) {
			args := map[string]any{"unit": unit, "name": name, "content": big, "sensitive": sensitive, "_ansible_diff": true}
			out, err := f.t.RunModuleRaw(context.Background(), f.module, args)
			require.NoError(t, err, out)
			var r testenv.Result
			require.NoError(t, json.Unmarshal([]byte(out), &r), out)
			require.True(t, r.Failed(), out)
			assert.False(t, r.Changed(), "the rename never happened: nothing changed")
			assert.Equal(t, "none", r.String("daemon_reload"))
			assert.Contains(t, r.Msg(), drop)
			assert.Contains(t, r.Msg(), "no space left on device")
			assert.Contains(t, r.Msg(), "not replaced (unchanged)")
			assert.Equal(t, before, f.files(t, dir), "old drop-in byte-identical, no temporary file left")
			if sensitive {
				assert.NotContains(t, out, secret)
			}
		})
	}
	assert.Equal(t, old, f.t.MustExec(t, "cat", drop))
}

func TestFaultRefusedParametersWriteNothing(t *testing.T) {
	t.Parallel()
	f := newFaultTarget(t)
	const (
		unit   = "fault.service"
		dir    = "/etc/systemd/system/fault.service.d"
		secret = "s3cr3t-refused-0815"
	)
	old := "[Service]\nEnvironment=OLD=1\n"
	r := f.run(t, map[string]any{"unit": unit, "name": "10-old.conf", "content": old, "daemon_reload": false})
	require.False(t, r.Failed(), r.Msg())
	// uid and gid 4242 are nobody's in the image; make sure, so the test means something.
	f.t.MustExec(t, "sh", "-c", "! getent passwd 4242 && ! getent group 4242")

	newContent := "[Service]\nEnvironment=TOKEN=" + secret + "\n"
	cases := []struct {
		name string
		args map[string]any
		msg  []string
	}{
		{"mode 0666", map[string]any{"mode": "0666"}, []string{"mode: 0666 lets group or others write the drop-in", "root escalation"}},
		{"mode 0646", map[string]any{"mode": "0646"}, []string{"mode: 0646 lets group or others write"}},
		{"mode 0660", map[string]any{"mode": "0660"}, []string{"mode: 0660 lets group or others write"}},
		{"mode 0666 as a YAML number", map[string]any{"mode": 438}, []string{"mode: 0666 lets group or others write"}},
		{"mode 4644", map[string]any{"mode": "4644"}, []string{"mode: 4644 sets the setuid bit"}},
		{"mode 2644", map[string]any{"mode": "2644"}, []string{"mode: 2644 sets the setgid bit"}},
		{"mode 1644", map[string]any{"mode": "1644"}, []string{"mode: 1644 sets the sticky bit"}},
		{"owner name unknown", map[string]any{"owner": "nobody-here"}, []string{`owner: "nobody-here" is not a known name`}},
		{"owner id unknown", map[string]any{"owner": "4242"}, []string{`owner: "4242" is a numeric id no user on the target has`}},
		{"group name unknown", map[string]any{"group": "nogroup-here"}, []string{`group: "nogroup-here" is not a known name`}},
		{"group id unknown", map[string]any{"group": 4242}, []string{`group: "4242" is a numeric id no group on the target has`}},
	}
	// Each case against the existing drop-in (must stay as it is) and a new one (must not
	// appear), first plainly, then sensitive with a secret in the content.
	for _, c := range cases {
		for _, file := range []string{"10-old.conf", "20-new.conf"} {
			for _, sensitive := range []bool{false, true} {
				t.Run(fmt.Sprintf("%s/%s/sensitive=%v", c.name, file, sensitive), func(t *testing.T) {
					args := map[string]any{"unit": unit, "name": file, "content": newContent, "_ansible_diff": true}
					if sensitive {
						args["sensitive"] = true
					}
					for k, v := range c.args {
						args[k] = v
					}
					before := f.snapshot(t, dir)
					out, err := f.t.RunModuleRaw(context.Background(), f.module, args)
					require.NoError(t, err, out)
					var r testenv.Result
					require.NoError(t, json.Unmarshal([]byte(out), &r), out)
					require.True(t, r.Failed(), out)
					for _, m := range c.msg {
						assert.Contains(t, r.Msg(), m)
					}
					assert.Equal(t, before, f.snapshot(t, dir), "nothing written")
					if sensitive {
						assert.NotContains(t, out, secret)
					}
				})
			}
		}
	}
	f.t.MustExec(t, "test", "!", "-e", dir+"/20-new.conf")
	assert.Equal(t, old, f.t.MustExec(t, "cat", dir+"/10-old.conf"))

	t.Run("other failures do not echo sensitive content either", func(t *testing.T) {
		for name, args := range map[string]map[string]any{
			"parse error":       {"name": "10-old.conf", "content": "[Service]\nEnvironment=TOKEN=" + secret + "\n[Broken\n"},
			"parse error, key":  {"name": "10-old.conf", "content": "[Service]\n" + secret + "\n"},
			"bad path":          {"name": "10-old.conf", "content": newContent, "path": "/tmp/10-old.conf"},
			"unknown parameter": {"name": "10-old.conf", "content": newContent, "bogus": secret},
			"bad name":          {"name": "x.txt", "content": newContent},
			"absent + content":  {"name": "10-old.conf", "content": newContent, "state": "absent"},
		} {
			args["unit"], args["sensitive"], args["_ansible_diff"] = unit, true, true
			before := f.snapshot(t, dir)
			out, err := f.t.RunModuleRaw(context.Background(), f.module, args)
			require.NoError(t, err, out)
			var r testenv.Result
			require.NoError(t, json.Unmarshal([]byte(out), &r), out)
			assert.True(t, r.Failed(), "%s: %s", name, out)
			assert.NotContains(t, out, secret, name)
			assert.Equal(t, before, f.snapshot(t, dir), "%s: nothing written", name)
		}
	})

	t.Run("a non-root owner that can write the file: allowed, with a warning naming it", func(t *testing.T) {
		r := f.run(t, map[string]any{"unit": unit, "name": "30-nobody.conf", "content": "[Service]\n", "owner": "nobody", "daemon_reload": false})
		require.False(t, r.Failed(), r.Msg())
		assert.Contains(t, strings.Join(r.Strings("warnings"), "\n"), "owner nobody (uid 65534) can write the drop-in")
		assert.Equal(t, "nobody 644", strings.TrimSpace(f.t.MustExec(t, "stat", "-c", "%U %a", dir+"/30-nobody.conf")))
		r = f.run(t, map[string]any{"unit": unit, "name": "31-nobody.conf", "content": "[Service]\n", "owner": "65534", "mode": "0444", "daemon_reload": false})
		require.False(t, r.Failed(), r.Msg())
		assert.Empty(t, r.Strings("warnings"), "read-only for its owner: nothing to warn about")
	})
}

// The directories a drop-in is written into are checked like the file: a UNIT.d anyone can
// write is made root's 0755 first (and the run says so); a UNIT.d that is a link out of
// /etc/systemd/system, or a unit directory anyone can write, is refused, naming it, and
// nothing is written.
func TestFaultInsecureDirectories(t *testing.T) {
	t.Parallel()
	f := newFaultTarget(t)
	const conf = "[Service]\nEnvironment=A=1\n"

	t.Run("a drop-in directory writable by others is secured, then written", func(t *testing.T) {
		f.t.MustExec(t, "install", "-d", "-m", "0777", "-o", "nobody", "/etc/systemd/system/acc-plain.service.d")
		check := f.run(t, map[string]any{"unit": "acc-plain", "name": "10.conf", "content": conf, "_ansible_check_mode": true})
		require.False(t, check.Failed(), check.Msg())
		assert.Equal(t, []string{"secure-directory", "record-reload-due", "write", "daemon-reload"}, check.Strings("plan"))
		assert.Equal(t, "777 nobody", strings.TrimSpace(f.t.MustExec(t, "stat", "-c", "%a %U", "/etc/systemd/system/acc-plain.service.d")), "check mode repairs nothing")

		r := f.run(t, map[string]any{"unit": "acc-plain", "name": "10.conf", "content": conf})
		require.False(t, r.Failed(), r.Msg())
		assert.Equal(t, check.Strings("plan"), r.Strings("plan"))
		assert.Equal(t, "755 root", strings.TrimSpace(f.t.MustExec(t, "stat", "-c", "%a %U", "/etc/systemd/system/acc-plain.service.d")))

		// Loosened again under a converged drop-in: the repair alone is the change.
		f.t.MustExec(t, "chmod", "0777", "/etc/systemd/system/acc-plain.service.d")
		r = f.run(t, map[string]any{"unit": "acc-plain", "name": "10.conf", "content": conf})
		require.False(t, r.Failed(), r.Msg())
		assert.True(t, r.Changed())
		assert.Equal(t, []string{"secure-directory"}, r.Strings("plan"))
		assert.Equal(t, "none", r.String("operation"))
		assert.Equal(t, "755", strings.TrimSpace(f.t.MustExec(t, "stat", "-c", "%a", "/etc/systemd/system/acc-plain.service.d")))
	})

	t.Run("a drop-in directory linked out of /etc/systemd/system is refused", func(t *testing.T) {
		f.t.MustExec(t, "mkdir", "-p", "/var/tmp/elsewhere")
		f.t.MustExec(t, "ln", "-s", "/var/tmp/elsewhere", "/etc/systemd/system/acc-link.service.d")
		r := f.run(t, map[string]any{"unit": "acc-link", "name": "10.conf", "content": conf})
		assert.True(t, r.Failed())
		assert.Contains(t, r.Msg(), "/etc/systemd/system/acc-link.service.d is a symbolic link to /var/tmp/elsewhere")
		assert.Empty(t, strings.TrimSpace(f.t.MustExec(t, "ls", "-A", "/var/tmp/elsewhere")), "nothing written through the link")
	})

	t.Run("a unit directory writable by others is refused", func(t *testing.T) {
		f.t.MustExec(t, "chmod", "0777", "/etc/systemd/system")
		defer f.t.MustExec(t, "chmod", "0755", "/etc/systemd/system")
		before := f.snapshot(t, "/etc/systemd/system/acc-dir.service.d")
		r := f.run(t, map[string]any{"unit": "acc-dir", "name": "10.conf", "content": conf})
		assert.True(t, r.Failed())
		assert.Contains(t, r.Msg(), "/etc/systemd/system is writable by group or others (mode 0777)")
		assert.Equal(t, before, f.snapshot(t, "/etc/systemd/system/acc-dir.service.d"), "nothing written")
	})
}

// An owner and a group that only another NSS source knows (SSSD or LDAP on EL; here
// Debian's libnss-extrausers): the module, built without cgo, resolves them through
// getent and writes the file with their ids.
func TestOwnerFromAnotherNSSSource(t *testing.T) {
	t.Parallel()
	f := newFaultTarget(t)
	f.t.Shell(t, `sed -i -e 's/^passwd:.*/& extrausers/' -e 's/^group:.*/& extrausers/' /etc/nsswitch.conf &&
		mkdir -p /var/lib/extrausers &&
		echo 'ldapuser:x:4242:4343:LDAP user:/nonexistent:/usr/sbin/nologin' > /var/lib/extrausers/passwd &&
		echo 'ldapgroup:x:4343:' > /var/lib/extrausers/group &&
		touch /var/lib/extrausers/shadow`)
	require.Equal(t, "ldapuser:x:4242:4343:LDAP user:/nonexistent:/usr/sbin/nologin", strings.TrimSpace(f.t.MustExec(t, "getent", "passwd", "ldapuser")))
	f.t.MustExec(t, "sh", "-c", "! grep -q ldapuser /etc/passwd")

	r := f.run(t, map[string]any{"unit": "acc-nss", "name": "10.conf", "content": "[Service]\nEnvironment=A=1\n", "owner": "ldapuser", "group": "ldapgroup", "mode": "0444"})
	require.False(t, r.Failed(), r.Msg())
	assert.Equal(t, "4242 4343 444", strings.TrimSpace(f.t.MustExec(t, "stat", "-c", "%u %g %a", "/etc/systemd/system/acc-nss.service.d/10.conf")))
	// Numeric ids of that source count as existing ones too; unknown ones stay refused.
	r = f.run(t, map[string]any{"unit": "acc-nss", "name": "10.conf", "content": "[Service]\nEnvironment=A=1\n", "owner": "4242", "group": "4343", "mode": "0444"})
	require.False(t, r.Failed(), r.Msg())
	assert.False(t, r.Changed())
	r = f.run(t, map[string]any{"unit": "acc-nss", "name": "10.conf", "content": "[Service]\n", "owner": "ghost"})
	assert.True(t, r.Failed())
	assert.Contains(t, r.Msg(), `owner: "ghost" is not a known name`)
}
