// Command richt-bench measures the collection against Ansible's built-in modules in one run
// (`make bench`): the same targets, SSH with pipelining on, the sides alternating round by
// round after a warm-up round: ours and the built-ins under Ansible's default strategy, and
// both again under Mitogen's mitogen_linear strategy when Debian's ansible-mitogen is
// installed. Then the demo role on 1, 8 and 24 targets at once (time per host), the cold
// (first) task cost, and direct on-target runs of each module and its built-in counterpart
// (time and peak RSS). It prints Markdown tables with the ratios (ours ÷ built-in) and the
// targets they are held to, and writes them, the raw figures (JSON) and a plot (PNG) to
// -out. docs/benchmarks.md explains the rows and holds the latest recorded run.
//
//	richt-bench [-only libraries] [-rounds 5] [-scale 1,8,24] [-scale-rounds 2] [-bulk 2000] [-direct 100] [-out build/bench]
package main

import (
	"flag"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"

	"github.com/richt/services/testenv"
)

type config struct {
	rounds, scaleRounds, bulk, direct int
	elPackages, elFiles               int
	scale                             []int
	keep, mitogen                     bool
	ansiblePlaybook, only, out        string
}

func main() {
	var c config
	flag.IntVar(&c.rounds, "rounds", 5, "measured rounds per row (after one warm-up round)")
	flag.IntVar(&c.scaleRounds, "scale-rounds", 2, "measured rounds per scale row (the set-up converge is their warm-up)")
	scale := flag.String("scale", "1,8,24", "target counts of the scale rows (forks = targets)")
	flag.IntVar(&c.bulk, "bulk", 2000, "packages in the generated large repository")
	flag.IntVar(&c.direct, "direct", 100, "direct on-target runs per module")
	flag.IntVar(&c.elPackages, "el", 1000, "packages registered (rpm --justdb) in the first target's RPM database for the EL-sized rows; 0: no such rows")
	flag.IntVar(&c.elFiles, "el-files", 100, "files in each of those packages")
	flag.BoolVar(&c.keep, "keep", false, "keep the work directory and the targets")
	flag.StringVar(&c.ansiblePlaybook, "ansible-playbook", "ansible-playbook", "the controller to measure with (for example /opt/richt/ansible-core-2.19/bin/ansible-playbook)")
	flag.StringVar(&c.only, "only", "", "comma-separated plays to run (for work on the bench itself; the report then has gaps); \"ee\" is AWX's job path through the execution environment, \"direct\" the direct runs on the target (left out otherwise)")
	flag.StringVar(&c.out, "out", "build/bench", "directory for the report (bench.md), the raw figures (bench.json) and the plot (benchmarks.png)")
	flag.BoolVar(&c.mitogen, "mitogen", true, "also measure under Mitogen's mitogen_linear strategy (when "+testenv.MitogenStrategyPlugins+" exists)")
	flag.Parse()
	for _, f := range strings.Split(*scale, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			fmt.Fprintf(os.Stderr, "richt-bench: -scale: %q is not a positive number of targets\n", f)
			os.Exit(2)
		}
		c.scale = append(c.scale, n)
	}
	sort.Ints(c.scale)
	if _, err := os.Stat(testenv.MitogenStrategyPlugins); c.mitogen && err != nil {
		fmt.Fprintf(os.Stderr, "richt-bench: no Mitogen rows: %v (bash .ci/setup-host installs ansible-mitogen)\n", err)
		c.mitogen = false
	}
	if err := run(c); err != nil {
		fmt.Fprintln(os.Stderr, "richt-bench:", err)
		os.Exit(1)
	}
}
