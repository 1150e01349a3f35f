package rpmexact

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"syscall"
)

// exeFD is the file descriptor the supervisor's program is executed from: the module's
// own executable, opened by the module and inherited by the supervisor's process (fd 3 is
// the transaction lock). systemd-run --scope executes its command in its own process, so
// the descriptor is there when it does, whether the module still lives or not; a path
// through the module's PID (/proc/PID/exe) is gone once the module ended (its deadline, a
// SIGKILL, a lost SSH session) and names another program once the PID is reused.
const exeFD = 4

// exePath names exeFD in the process that executes it.
var exePath = "/proc/self/fd/" + strconv.Itoa(exeFD)

// selfArgv is the command line that starts this program again as the transaction's
// supervisor: path is what to execute and argv its arguments (argv[0] included).
//
// That is the module's own executable, inherited as exeFD (exePath), which works even
// after Ansible has removed the module file. A program run by a user-mode emulator (QEMU
// running an aarch64, ppc64le or s390x build) is started the same way when the kernel
// executes it itself, as where binfmt_misc runs the emulator (a container of another
// architecture: the emulator may not even exist in it, binfmt_misc's F flag opened it
// outside). Only where the kernel cannot ("exec format error": the emulator was started
// by hand, as the end-to-end tests do) is it started through the same emulator. The
// emulator answers /proc/self/exe with the emulated program, but not the same link under
// /proc/self/task/PID, which names the program the kernel really runs: when the two
// differ, an emulator runs this program. name is the module's name (the multi-call binary
// runs the module its argv[0] names).
func selfArgv(h host, pid int, self, name string) (path string, argv []string) {
	if self != "/proc/self/exe" {
		return self, []string{nameOr(name, self)}
	}
	native := []string{nameOr(name, exePath)}
	emulated, err1 := h.Readlink("/proc/self/exe")
	real, err2 := h.Readlink(fmt.Sprintf("/proc/self/task/%d/exe", pid))
	if err1 != nil || err2 != nil || emulated == real {
		return exePath, native
	}
	// Another failure to execute it natively is left to the supervisor's start to report.
	if err := h.Execute([]string{native[0], "--version"}); !errors.Is(err, syscall.ENOEXEC) {
		return exePath, native
	}
	// EMULATOR -0 NAME PROGRAM: QEMU's -0 sets the program's argv[0], so the supervisor
	// starts, as natively, with the module's name and no argument.
	return real, []string{real, "-0", native[0], exePath}
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
	// OpenSelf is this process's own executable, open for reading (under a user-mode
	// emulator: the emulated program).
	OpenSelf() (*os.File, error)
	// Execute starts OpenSelf's program natively with argv and stops it at once: an
	// error wrapping syscall.ENOEXEC says the kernel cannot execute it.
	Execute(argv []string) error
}

// osHost is this process on this kernel.
type osHost struct{}

func (osHost) Readlink(path string) (string, error) { return os.Readlink(path) }

// self is this process's own executable, opened once and kept open for the process's life:
// a QEMU started by binfmt_misc with its O flag answers every open of /proc/self/exe with
// the one descriptor it was given, which must then never be closed.
var self struct {
	once sync.Once
	f    *os.File
	err  error
}

func (osHost) OpenSelf() (*os.File, error) {
	self.once.Do(func() {
		self.f, self.err = os.Open("/proc/self/exe")
		if self.err != nil {
			self.err = fmt.Errorf("open the module's own executable for the transaction's supervisor: %w", self.err)
		}
	})
	return self.f, self.err
}

func (h osHost) Execute(argv []string) error {
	exe, err := h.OpenSelf()
	if err != nil {
		return err
	}
	return executeFrom(exe, argv)
}

// executeFrom starts the program open as exe, inherited as exeFD, with argv, and kills
// it at once: whether the kernel executes it is known when the start returns.
func executeFrom(exe *os.File, argv []string) error {
	// Path set as is: exec.Command would look exePath up in this process, where exeFD is
	// some other file.
	cmd := &exec.Cmd{Path: exePath, Args: argv, ExtraFiles: make([]*os.File, exeFD-2)}
	cmd.ExtraFiles[exeFD-3] = exe
	if err := cmd.Start(); err != nil {
		return err
	}
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	return nil
}
