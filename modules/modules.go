// Package modules names the collection's modules: every directory here with a module.go is
// one module, a package whose Main runs it (the Makefile's MODULES is the same list, from
// the same directories). Nothing else lists the modules by hand: `go run ./cmd/gendoc`
// generates from this list the multi-call binary's table (cmd/richt-modules/modules.go),
// the doc stubs' options, the plugin routing (collection/meta/runtime.yml) and the module
// lists of README.md, collection/README.md and galaxy.yml; `go run ./cmd/gendoc -check`
// and its test fail while any of them is out of date. A module's own documentation stub
// (collection/plugins/modules/NAME.py) is written by hand around its generated options.
package modules

import (
	"embed"
	"io/fs"
	"path"
)

// The module.go files are embedded only to list their directories at build time, so Names
// is right in any working directory, in tests, tools and other binaries alike.
//
//go:embed */module.go
var mains embed.FS

// Names returns the module names (their directories under modules/), sorted.
func Names() []string {
	files, _ := fs.Glob(mains, "*/module.go") // the only error is a malformed pattern
	names := make([]string, len(files))
	for i, f := range files {
		names[i] = path.Dir(f)
	}
	return names
}

// Command is the multi-call binary that holds every module, as `go build` and
// testenv.BuildModule take it (relative to the repository root). Which module it runs
// comes from its file name or its first argument (ansible.Dispatch).
const Command = "./cmd/richt-modules"

// MultiCallTable is the generated file that lists the modules for Command.
const MultiCallTable = "cmd/richt-modules/modules.go"

// ImportPath is a module's Go package.
func ImportPath(name string) string { return "github.com/richt/services/modules/" + name }
