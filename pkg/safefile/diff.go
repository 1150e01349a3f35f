package safefile

import (
	"bytes"
	"fmt"
	"os"

	"github.com/richt/services/pkg/diffmode"
	"github.com/richt/services/pkg/filemode"
)

// Diff shows the file at path before and after, with its attributes; a sensitive file's
// content is never shown, not even a hash of it, only that it changed.
func Diff(path string, before, after File, sensitive bool) *diffmode.Diff {
	attrs := func(m os.FileMode, u, g int) string {
		return fmt.Sprintf("# mode %04o, owner %d, group %d\n", filemode.Unix(m), u, g)
	}
	b, a := "", ""
	if before.Exists {
		b = attrs(before.Mode, before.UID, before.GID) + string(before.Content)
	}
	if after.Exists {
		a = attrs(after.Mode, after.UID, after.GID) + string(after.Content)
	}
	if sensitive {
		hidden := "# content hidden: sensitive\n"
		if before.Exists {
			b = attrs(before.Mode, before.UID, before.GID) + hidden
		}
		if after.Exists {
			a = attrs(after.Mode, after.UID, after.GID) + hidden
			if before.Exists && !bytes.Equal(before.Content, after.Content) {
				a += "# (content changed)\n"
			}
		}
	}
	return &diffmode.Diff{Before: b, After: a, BeforeHeader: path + " (before)", AfterHeader: path + " (after)"}
}
