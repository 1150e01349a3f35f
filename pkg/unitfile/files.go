package unitfile

import (
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/richt/services/pkg/rootpath"
)

// SearchPath is systemd's system unit search path, highest priority first.
var SearchPath = []string{
	"/etc/systemd/system",
	"/run/systemd/system",
	"/usr/local/lib/systemd/system",
	"/usr/lib/systemd/system",
}

// DropInDirs lists the drop-in directory names systemd reads for a unit, least specific
// first: the type directory (service.d), each dash prefix (foo-.service.d for
// foo-bar.service), the template (foo@.service.d) and the unit itself.
func DropInDirs(name string) []string {
	dot := strings.LastIndexByte(name, '.')
	if dot <= 0 {
		return []string{name + ".d"}
	}
	base, suffix := name[:dot], name[dot:]
	dirs := []string{suffix[1:] + ".d"}
	prefixBase := base
	if at := strings.IndexByte(base, '@'); at >= 0 {
		prefixBase = base[:at]
	}
	for i := 0; i < len(prefixBase); i++ {
		if prefixBase[i] == '-' && i > 0 {
			dirs = append(dirs, prefixBase[:i+1]+suffix+".d")
		}
	}
	if at := strings.IndexByte(base, '@'); at >= 0 {
		dirs = append(dirs, base[:at+1]+suffix+".d")
	}
	return append(dirs, name+".d")
}

// Files finds a unit's fragment and drop-ins on disk under root, in the order systemd
// merges them: the fragment from the highest-priority directory that has it (for a
// template instance, the template's file), then the drop-ins sorted by file name across
// all drop-in directories, where a file in a higher-priority directory replaces a
// same-named one in a lower-priority directory. A mask (Mask) is the fragment: the unit
// as it stands.
func Files(root, name string) (fragment string, dropIns []string) {
	return fragmentOf(root, name, false), dropInsOf(root, name)
}

// Unmasked is Files as systemd reads the unit once `systemctl unmask` has removed its
// mask: a mask in /etc/systemd/system or /run/systemd/system (the administrator's and the
// runtime links unmask removes) is passed over, and the fragment is the next one in the
// search path ("" when none). A mask lower down stays the fragment, as it stays a mask.
func Unmasked(root, name string) (fragment string, dropIns []string) {
	return fragmentOf(root, name, true), dropInsOf(root, name)
}

// Mask is the path of the link that masks the unit on disk under root: its fragment
// (Files), when that resolves to /dev/null; "" when the unit is not masked there.
func Mask(root, name string) string {
	if f := fragmentOf(root, name, false); f != "" && isMask(root, f) {
		return f
	}
	return ""
}

// unmaskable are the directories whose masks `systemctl unmask` removes.
var unmaskable = []string{"/etc/systemd/system", "/run/systemd/system"}

// isMask reports whether p under root resolves to a character device: /dev/null, which
// systemd reads as a mask.
func isMask(root, p string) bool {
	fi, err := os.Stat(rootpath.Join(root, p))
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

// fragmentOf is the unit's fragment (Files); pastMask passes over the masks unmask removes
// (Unmasked).
func fragmentOf(root, name string, pastMask bool) string {
	candidates := []string{name}
	if at := strings.IndexByte(name, '@'); at >= 0 {
		if dot := strings.LastIndexByte(name, '.'); dot > at {
			candidates = append(candidates, name[:at+1]+name[dot:])
		}
	}
	for _, c := range candidates {
		for _, dir := range SearchPath {
			p := filepath.Join(dir, c)
			fi, err := os.Stat(rootpath.Join(root, p))
			if err != nil || fi.IsDir() {
				continue
			}
			if pastMask && fi.Mode()&os.ModeCharDevice != 0 && slices.Contains(unmaskable, dir) {
				continue
			}
			return p
		}
	}
	return ""
}

// dropInsOf are the unit's drop-ins (Files).
func dropInsOf(root, name string) (dropIns []string) {
	chosen := map[string]string{} // file name -> path
	// Lowest priority first, so a higher-priority directory overwrites the choice.
	for i := len(SearchPath) - 1; i >= 0; i-- {
		for _, d := range DropInDirs(name) {
			dir := filepath.Join(SearchPath[i], d)
			entries, err := os.ReadDir(rootpath.Join(root, dir))
			if err != nil {
				continue
			}
			for _, e := range entries {
				if e.IsDir() || !strings.HasSuffix(e.Name(), ".conf") {
					continue
				}
				chosen[e.Name()] = filepath.Join(dir, e.Name())
			}
		}
	}
	names := make([]string, 0, len(chosen))
	for n := range chosen {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		dropIns = append(dropIns, chosen[n])
	}
	return dropIns
}
