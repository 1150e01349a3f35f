package rpmexact

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
)

// ExecutableIdentity names the file a command resolves to through PATH and symlinks, with
// the attributes any replacement changes (size, mtime, ctime, inode, device). Swapping DNF 4
// for DNF 5, or dnf for a wrapper, yields another identity.
func ExecutableIdentity(command string) (string, error) {
	path, err := exec.LookPath(command)
	if err != nil {
		return "", fmt.Errorf("find %s: %w", command, err)
	}
	real, err := filepath.EvalSymlinks(path)
	if err != nil {
		return "", fmt.Errorf("resolve %s: %w", path, err)
	}
	fi, err := os.Stat(real)
	if err != nil {
		return "", fmt.Errorf("stat %s: %w", real, err)
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return "", fmt.Errorf("stat %s: no inode data", real)
	}
	return fmt.Sprintf("%s size=%d mtime=%d.%09d ctime=%d.%09d ino=%d dev=%d",
		real, st.Size, st.Mtim.Sec, st.Mtim.Nsec, st.Ctim.Sec, st.Ctim.Nsec, st.Ino, st.Dev), nil
}
