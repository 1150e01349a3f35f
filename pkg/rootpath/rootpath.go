// Package rootpath places a target's absolute path under the directory that stands for the
// target's root: "" or "/" on a real host, a temporary directory in a test. Every module
// that reads or writes systemd's files takes such a root, and they must all agree on it.
package rootpath

import "path/filepath"

// Join returns p, an absolute path on the target, as it is found below root. With root ""
// or "/" it is p itself, unchanged; otherwise root and p joined (and cleaned).
func Join(root, p string) string {
	if root == "" || root == "/" {
		return p
	}
	return filepath.Join(root, p)
}
