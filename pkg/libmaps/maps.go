package libmaps

import (
	"bufio"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"
)

// Mapping is one file-backed line of /proc/PID/maps that may name a regular file.
type Mapping struct {
	// Path is the file's path as the kernel printed it, without " (deleted)".
	Path string
	// Major and Minor are the device the kernel shows for the mapped file.
	Major, Minor uint32
	Inode        uint64
	// Deleted: the kernel marked the path " (deleted)": the mapped file was unlinked.
	Deleted bool
}

// deletedSuffix is what the kernel appends to the path of a mapping whose file was unlinked.
const deletedSuffix = " (deleted)"

// sysv is how the kernel names a SysV shared memory segment's mapping (/SYSV0000abcd,
// always " (deleted)").
var sysv = regexp.MustCompile(`^/SYSV[0-9a-f]{8}$`)

// pseudo are path prefixes of mappings that are not regular files an update can replace.
var pseudo = []string{"/dev/", "/memfd:", "/anon_hugepage", "/[aio]", "/proc/", "/sys/"}

// ParseMaps reads /proc/PID/maps text and returns the mappings that may be regular files,
// each (path, device, inode) once, in the order first seen. A line that does not have the
// kernel's shape is an error naming its number: the text is the kernel's, so a bad line
// means something else was read.
func ParseMaps(r io.Reader) ([]Mapping, error) {
	var out []Mapping
	seen := map[Mapping]bool{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64*1024), 1024*1024)
	for n := 1; sc.Scan(); n++ {
		m, ok, err := parseLine(sc.Text())
		if err != nil {
			return nil, fmt.Errorf("maps line %d: %w", n, err)
		}
		if ok && !seen[m] {
			seen[m] = true
			out = append(out, m)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read maps: %w", err)
	}
	return out, nil
}

// parseLine reads "ADDR PERMS OFFSET MAJ:MIN INODE [PATH]"; ok is false for a line that
// maps no regular file (anonymous, pseudo, device, memfd, SysV).
func parseLine(line string) (Mapping, bool, error) {
	rest := line
	var f [5]string
	for i := range f {
		rest = strings.TrimLeft(rest, " ")
		j := strings.IndexByte(rest, ' ')
		if j < 0 {
			j = len(rest)
		}
		f[i], rest = rest[:j], rest[j:]
		if f[i] == "" {
			return Mapping{}, false, fmt.Errorf("%d fields, want at least 5", i)
		}
	}
	if !strings.Contains(f[0], "-") || len(f[1]) != 4 {
		return Mapping{}, false, fmt.Errorf("not an address range and permissions: %q %q", clip(f[0]), clip(f[1]))
	}
	if _, err := strconv.ParseUint(f[2], 16, 64); err != nil {
		return Mapping{}, false, fmt.Errorf("offset %q is not hexadecimal", clip(f[2]))
	}
	maj, min, ok := strings.Cut(f[3], ":")
	if !ok {
		return Mapping{}, false, fmt.Errorf("device %q is not MAJOR:MINOR", clip(f[3]))
	}
	major, err1 := strconv.ParseUint(maj, 16, 32)
	minor, err2 := strconv.ParseUint(min, 16, 32)
	if err1 != nil || err2 != nil {
		return Mapping{}, false, fmt.Errorf("device %q is not hexadecimal MAJOR:MINOR", clip(f[3]))
	}
	ino, err := strconv.ParseUint(f[4], 10, 64)
	if err != nil {
		return Mapping{}, false, fmt.Errorf("inode %q is not a number", clip(f[4]))
	}
	// The path is the rest after the padding; it may hold spaces of its own.
	path := strings.TrimLeft(rest, " ")
	m := Mapping{Major: uint32(major), Minor: uint32(minor), Inode: ino}
	if p, ok := strings.CutSuffix(path, deletedSuffix); ok {
		path, m.Deleted = p, true
	}
	// The kernel escapes a newline in a path as \012.
	m.Path = strings.ReplaceAll(path, `\012`, "\n")
	if ino == 0 || !strings.HasPrefix(m.Path, "/") || sysv.MatchString(m.Path) {
		return Mapping{}, false, nil
	}
	for _, p := range pseudo {
		if strings.HasPrefix(m.Path, p) {
			return Mapping{}, false, nil
		}
	}
	return m, true, nil
}

// clip keeps a quoted piece of a bad line short.
func clip(s string) string {
	if len(s) > 40 {
		return s[:40] + "…"
	}
	return s
}
