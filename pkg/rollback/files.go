package rollback

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"syscall"

	"github.com/richt/services/pkg/atomicfile"
)

func owner(fi os.FileInfo) (uid, gid int) {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return int(st.Uid), int(st.Gid)
	}
	return 0, 0
}

// RestoreFile puts one recorded file back: its saved content, mode and owner, or, for a
// file that did not exist, its removal. It changes nothing when the file is as recorded
// (a rollback run again, or a file the run did not reach), and reports whether it changed
// anything. The content is written as every file of the modules is (atomicfile: a reader
// sees the old content or the restored one).
func (s Store) RestoreFile(rec *Record, f File) (bool, error) {
	moved, saved, err := s.moved(rec, f)
	if err != nil || !moved {
		return false, err
	}
	if !f.Existed {
		if err := os.Remove(f.Path); err != nil && !errors.Is(err, os.ErrNotExist) {
			return false, fmt.Errorf("remove %s (it did not exist before the change): %w", f.Path, err)
		}
		return true, nil
	}
	if err := atomicfile.Write(f.Path, saved, atomicfile.Options{Mode: f.Mode, UID: f.UID, GID: f.GID}); err != nil {
		return false, fmt.Errorf("put %s back: %w", f.Path, err)
	}
	return true, nil
}

// Moved reports whether a recorded file is no longer as recorded (its existence, content,
// mode or owner): what a rollback has to put back, and the only files whose reactions it
// owes. It reads only.
func (s Store) Moved(rec *Record, f File) (bool, error) {
	moved, _, err := s.moved(rec, f)
	return moved, err
}

// moved is Moved's rule; it returns the saved content of a file that existed.
func (s Store) moved(rec *Record, f File) (bool, []byte, error) {
	now, data, err := Observe(f.Path)
	if err != nil {
		return false, nil, err
	}
	if !f.Existed {
		return now.Existed, nil, nil
	}
	saved, err := s.Saved(rec, f)
	if err != nil {
		return false, nil, err
	}
	same := now.Existed && bytes.Equal(data, saved) && now.Mode == f.Mode && now.UID == f.UID && now.GID == f.GID
	return !same, saved, nil
}
