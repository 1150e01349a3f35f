// Package modules names the collection's module commands: every directory here with a
// main.go is one module, built into a binary of the same name (the Makefile's MODULES is
// the same list, from the same directories). Nothing else lists the modules.
package modules

import (
	"embed"
	"io/fs"
	"path"
)

// The main.go files are embedded only to list their directories at build time, so Names
// is right in any working directory, in tests, tools and other binaries alike.
//
//go:embed */main.go
var mains embed.FS

// Names returns the module names (their directories under modules/), sorted.
func Names() []string {
	files, _ := fs.Glob(mains, "*/main.go") // the only error is a malformed pattern
	names := make([]string, len(files))
	for i, f := range files {
		names[i] = path.Dir(f)
	}
	return names
}

// Package returns a module's package path relative to the repository root, as `go build`
// and testenv.BuildModule take it: "./modules/NAME".
func Package(name string) string { return "./modules/" + name }
