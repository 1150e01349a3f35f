// Package testenv tests Ansible modules and roles against real systemd, in containers
// started with testcontainers-go, the way Molecule does in Python: fast, offline, in Go.
//
// A [Target] is a container booted with systemd as PID 1 from an image built offline from
// Debian packages ([EnsureImage]); it carries DNF 4 and rpm so RPM packages can be
// installed from a file repository built by [BuildRepo]. [Target.RunModule] copies a module
// binary and its arguments in and returns the parsed result.
//
// Docker must be reachable, and the testcontainers reaper must be off
// (TESTCONTAINERS_RYUK_DISABLED=true) where its image cannot be pulled; targets are
// removed by t.Cleanup instead.
//
// Environment:
//
//	TESTENV_SUITE   Debian suite of the built image: trixie (default; systemd 257, DNF 4.23)
//	                or bookworm (systemd 252, DNF 4.14)
//	TESTENV_IMAGE   use this existing systemd image instead of building one
package testenv
