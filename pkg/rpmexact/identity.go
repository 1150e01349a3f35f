package rpmexact

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"
)

// ExecutableIdentity names the file a command resolves to through PATH and symlinks, with
// the attributes any replacement changes (size, mtime, ctime, inode, device). Swapping DNF 4
// for DNF 5, or dnf for a wrapper, yields another identity.
func ExecutableIdentity(command string) (string, error) {
	id, _, err := executableIdentity(command)
	return id, err
}

func executableIdentity(command string) (string, time.Time, error) {
	real, err := LocateCommand(command)
	if err != nil {
		return "", time.Time{}, err
	}
	f, err := fileIdentity(real)
	if err != nil {
		return "", time.Time{}, err
	}
	return real + " " + f.id, f.ctime, nil
}

// LocateCommand is the file a command resolves to through PATH and symlinks.
func LocateCommand(command string) (string, error) {
	path, err := exec.LookPath(command)
	if err != nil {
		return "", fmt.Errorf("find %s: %w", command, err)
	}
	real, err := filepath.EvalSymlinks(path)
	if err != nil {
		return "", fmt.Errorf("resolve %s: %w", path, err)
	}
	return real, nil
}

// identity is what fileIdentity found.
type identity struct {
	id           string // every attribute, ctime included
	content      string // the attributes a write changes, without the ctime (see QueryMemo.key)
	ctime, mtime time.Time
	dir          bool
}

// fileIdentity describes the file at path (symlinks followed) by what any write or
// replacement changes. Writing a file always moves its ctime, which user space cannot set
// back, so an equal identity means an unchanged file. A missing file is "absent".
func fileIdentity(path string) (identity, error) {
	fi, err := os.Stat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return identity{id: "absent"}, nil
	}
	if err != nil {
		return identity{}, fmt.Errorf("stat %s: %w", path, err)
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return identity{}, fmt.Errorf("stat %s: no inode data", path)
	}
	content := fmt.Sprintf("size=%d mtime=%d.%09d ino=%d dev=%d", st.Size, st.Mtim.Sec, st.Mtim.Nsec, st.Ino, st.Dev)
	return identity{
		id:      fmt.Sprintf("%s ctime=%d.%09d mode=%o", content, st.Ctim.Sec, st.Ctim.Nsec, st.Mode),
		content: content,
		ctime:   time.Unix(st.Ctim.Sec, st.Ctim.Nsec),
		mtime:   time.Unix(st.Mtim.Sec, st.Mtim.Nsec),
		dir:     fi.IsDir(),
	}, nil
}
