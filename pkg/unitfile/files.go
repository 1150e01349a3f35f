package unitfile

import (
	"os"
	"path/filepath"
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
// same-named one in a lower-priority directory.
func Files(root, name string) (fragment string, dropIns []string) {
	candidates := []string{name}
	if at := strings.IndexByte(name, '@'); at >= 0 {
		if dot := strings.LastIndexByte(name, '.'); dot > at {
			candidates = append(candidates, name[:at+1]+name[dot:])
		}
	}
	for _, c := range candidates {
		for _, dir := range SearchPath {
			p := filepath.Join(dir, c)
			if fi, err := os.Stat(rootpath.Join(root, p)); err == nil && !fi.IsDir() {
				fragment = p
				break
			}
		}
		if fragment != "" {
			break
		}
	}
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
	return fragment, dropIns
}
