package testenv

import (
	"context"
	"fmt"
	"strings"
	"testing"
)

// DemoDaemon is the demo package's program: a long-running shell loop that records every
// start and every SIGHUP in /run/demo/events, so tests can count starts and reloads, and
// greets every connection to 127.0.0.1:DEMO_PORT (8080) with "demo ready", for health
// probes (systemd-socket-activate, which ships with systemd, does the listening).
const DemoDaemon = `#!/bin/sh
mkdir -p /run/demo
echo "start $$" >> /run/demo/events
trap 'echo "reload $$" >> /run/demo/events' HUP
trap 'exit 0' TERM
systemd-socket-activate --listen=127.0.0.1:${DEMO_PORT:-8080} --accept --inetd /bin/echo "demo ready" >/dev/null 2>&1 &
while :; do sleep 1 & wait $!; done
`

// DemoPackage is the fixture package "demo" at version (release 1): /usr/bin/demo-daemon
// and demo.service, whose Description names the version so that every version ships a
// different unit file. The unit has no ExecReload, on purpose: tests add one with a drop-in.
func DemoPackage(version string) Package {
	unit := fmt.Sprintf(`[Unit]
Description=richt demo daemon %s

[Service]
Type=simple
ExecStart=/usr/bin/demo-daemon

[Install]
WantedBy=multi-user.target
`, version)
	return Package{
		Name:    "demo",
		Version: version,
		Files: map[string]File{
			"/usr/bin/demo-daemon":                 {Content: DemoDaemon, Mode: 0o755},
			"/usr/lib/systemd/system/demo.service": {Content: unit, Mode: 0o644},
		},
	}
}

// TestDaemon is a service program for tests: like DemoDaemon, but it records its events in
// /run/testd/NAME (its first argument), so many units can run it side by side.
const TestDaemon = `#!/bin/sh
mkdir -p /run/testd
f=/run/testd/$1
echo "start $$" >> "$f"
trap 'echo "reload $$" >> "$f"' HUP
trap 'exit 0' TERM
while :; do sleep 1 & wait $!; done
`

// TestDaemonPath is where InstallTestDaemon puts TestDaemon.
const TestDaemonPath = "/usr/local/bin/testd"

// InstallTestDaemon writes TestDaemon into the target.
func (t *Target) InstallTestDaemon(tb testing.TB) {
	tb.Helper()
	if err := t.WriteFile(context.Background(), TestDaemonPath, []byte(TestDaemon), 0o755); err != nil {
		tb.Fatal(err)
	}
}

// eventsSettled prints /run/testd/$1 once TestDaemon's records under that name are
// settled: every running instance has written its start line, and the file did not change
// for 100 ms (a reload's trap writes a moment after systemctl reload returned). A service
// is "started" when its process is forked, before the shell wrote anything, so counting
// right after a start or restart would race without this wait. It gives up after ~10 s and
// prints what is there.
const eventsSettled = `f=/run/testd/$1
i=0
while [ $i -lt 50 ]; do
  i=$((i+1)); settled=1
  for d in /proc/[0-9]*; do
    [ "$(tr '\0' ' ' < "$d/cmdline" 2>/dev/null)" = "/bin/sh ` + TestDaemonPath + ` $1 " ] || continue
    grep -qx "start ${d#/proc/}" "$f" 2>/dev/null || settled=0
  done
  a=$(cat "$f" 2>/dev/null); sleep 0.1; b=$(cat "$f" 2>/dev/null)
  [ $settled = 1 ] && [ "$a" = "$b" ] && break
done
cat "$f" 2>/dev/null || true`

// Events counts the starts and reloads TestDaemon recorded under name, after they settled
// (see eventsSettled).
func (t *Target) Events(tb testing.TB, name string) (starts, reloads int) {
	tb.Helper()
	out := t.MustExec(tb, "/bin/sh", "-c", eventsSettled, "events", name)
	for _, l := range strings.Split(out, "\n") {
		switch {
		case strings.HasPrefix(l, "start "):
			starts++
		case strings.HasPrefix(l, "reload "):
			reloads++
		}
	}
	return starts, reloads
}

// PinnedSet is a service shipped as three packages pinned together, as real services are:
// acc-app and acc-tool require acc-lib at exactly their own version, and acc-app ships a
// unit. Pinned one at a time they cannot move; a pin of acc-lib alone makes DNF move the
// other two.
func PinnedSet(version string) []Package {
	exact := "acc-lib = " + version + "-1"
	unit := fmt.Sprintf("[Unit]\nDescription=acc app %s\n\n[Service]\nExecStart=/bin/sleep infinity\n", version)
	return []Package{
		{Name: "acc-lib", Version: version, Files: map[string]File{"/usr/lib/acc/lib.txt": {Content: version}}},
		{Name: "acc-app", Version: version, Requires: []string{exact},
			Files: map[string]File{"/usr/lib/systemd/system/acc-app.service": {Content: unit}}},
		{Name: "acc-tool", Version: version, Requires: []string{exact},
			Files: map[string]File{"/usr/lib/acc/tool.txt": {Content: version}}},
	}
}
