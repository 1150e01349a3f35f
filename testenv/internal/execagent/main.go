// Command testenv-agent runs commands and writes files inside a testenv target for the
// test process on the host, over TCP, in place of Docker's exec and copy API: each of those
// costs dockerd, containerd, the shim and runc CPU time that a suite of thousands of execs
// spends again and again (docs/testenv.md, "How commands reach a target").
//
// testenv starts it with one docker exec, the token in TESTENV_AGENT_TOKEN. Without
// arguments it is the launcher: it listens on a free TCP port of every address, starts
// itself as the server ("serve", the listener as file 3) in a session of its own, prints
// the port and exits, so the docker exec returns at once and the server lives on in the
// container's cgroup. Every request must carry the token.
package main

import (
	"fmt"
	"os"
)

func main() {
	var err error
	if len(os.Args) == 2 && os.Args[1] == "serve" {
		err = serve()
	} else if len(os.Args) == 1 {
		err = launch()
	} else {
		err = fmt.Errorf("usage: %s [serve]", os.Args[0])
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "testenv-agent: %v\n", err)
		os.Exit(1)
	}
}
