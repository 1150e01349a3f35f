package rpmexact

import (
	"fmt"
	"os"
)

// selfArgv is the command line that starts this program again as the transaction's
// supervisor: path is what to execute and argv its arguments (argv[0] included).
//
// Natively that is /proc/self/exe, which works even after Ansible has removed the module
// file. Under a user-mode emulator (QEMU running an aarch64, ppc64le or s390x build on
// another host, as the end-to-end tests do) /proc/self/exe is answered by the emulator with
// the emulated program, which the kernel cannot execute without binfmt_misc ("exec format
// error"). The emulator answers only /proc/self/exe and /proc/PID/exe that way, not the
// same link under /proc/self/task/PID, which names the program the kernel really runs:
// when the two differ, the supervisor is started through that same emulator. name is the
// module's name (the multi-call binary runs the module its argv[0] names).
func selfArgv(h host, pid int, self, name string) (path string, argv []string) {
	if self != "/proc/self/exe" {
		return self, []string{nameOr(name, self)}
	}
	emulated, err1 := h.Readlink("/proc/self/exe")
	real, err2 := h.Readlink(fmt.Sprintf("/proc/self/task/%d/exe", pid))
	if err1 != nil || err2 != nil || emulated == real {
		return self, []string{nameOr(name, self)}
	}
	// EMULATOR -0 NAME PROGRAM: QEMU's -0 sets the program's argv[0], so the supervisor
	// starts, as natively, with the module's name and no argument.
	return real, []string{real, "-0", name, emulated}
}

func nameOr(name, self string) string {
	if name != "" {
		return name
	}
	return self
}

// host is what starting the supervisor learns from this process and the kernel; tests
// fake it.
type host interface {
	// Readlink is os.Readlink.
	Readlink(path string) (string, error)
}

// osHost is this process on this kernel.
type osHost struct{}

func (osHost) Readlink(path string) (string, error) { return os.Readlink(path) }
