package rpmexact

import (
	"bytes"
	"io"

	"github.com/richt/services/pkg/runner/runnertest"
)

func bytesReader(b []byte) io.Reader { return bytes.NewReader(b) }

// owns is the query for the files the installed builds of names own (Plan's unit-file
// decision), answered with files, one a line.
func owns(names []string, files ...string) runnertest.Call {
	out := ""
	for _, f := range files {
		out += f + "\n"
	}
	return runnertest.Call{Argv: append([]string{"rpm", "-q", "--qf", "[%{FILENAMES}\n]", "--"}, names...), Stdout: out}
}

// ownsDemo is that query for demo, whose installed build owns no unit file.
var ownsDemo = owns([]string{"demo"}, "/usr/bin/demo")
