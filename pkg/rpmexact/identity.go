package rpmexact

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"syscall"
	"time"

	"github.com/richt/services/pkg/dnfscript"
)

// ExecutableIdentity names the file a command resolves to through PATH and symlinks, with
// the attributes any replacement changes (size, mtime, ctime, inode, device). Swapping DNF 4
// for DNF 5, or dnf for a wrapper, yields another identity.
func ExecutableIdentity(command string) (string, error) {
	id, _, err := executableIdentity(command)
	return id, err
}

func executableIdentity(command string) (string, time.Time, error) {
	real, err := dnfscript.LocateCommand(command)
	if err != nil {
		return "", time.Time{}, err
	}
	f, err := fileIdentity(real)
	if err != nil {
		return "", time.Time{}, err
	}
	return real + " " + f.id, f.ctime, nil
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
