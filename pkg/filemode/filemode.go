// Package filemode converts between a Unix mode as chmod(1) writes it (0o4644) and Go's
// os.FileMode, whose setuid, setgid and sticky bits are not the Unix ones. It is a leaf, so
// the protocol package (ansible, which reads a mode parameter) and the file rules
// (safefile, which names a refused mode) share one conversion without one importing the
// other.
package filemode

import "os"

// FromUnix turns a Unix mode ("4644" read as octal) into Go's os.FileMode:
// os.FileMode(0o4644) would carry a bit that os.Chmod silently drops and that
// os.ModeSetuid does not match.
func FromUnix(unix uint32) os.FileMode {
	m := os.FileMode(unix & 0o777)
	if unix&0o4000 != 0 {
		m |= os.ModeSetuid
	}
	if unix&0o2000 != 0 {
		m |= os.ModeSetgid
	}
	if unix&0o1000 != 0 {
		m |= os.ModeSticky
	}
	return m
}

// Unix is FromUnix's inverse: the permission, setuid, setgid and sticky bits of m as
// chmod(1) writes them (the file type bits are dropped).
func Unix(m os.FileMode) uint32 {
	u := uint32(m.Perm())
	if m&os.ModeSetuid != 0 {
		u |= 0o4000
	}
	if m&os.ModeSetgid != 0 {
		u |= 0o2000
	}
	if m&os.ModeSticky != 0 {
		u |= 0o1000
	}
	return u
}
