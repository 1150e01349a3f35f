package testenv

import "fmt"

// DemoDaemon is the demo package's program: a long-running shell loop that records every
// start and every SIGHUP in /run/demo/events, so tests can count starts and reloads.
const DemoDaemon = `#!/bin/sh
mkdir -p /run/demo
echo "start $$" >> /run/demo/events
trap 'echo "reload $$" >> /run/demo/events' HUP
trap 'exit 0' TERM
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
