package molecule

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// Usage is richt-molecule's help.
const Usage = `usage: richt-molecule COMMAND [-s SCENARIO | --all] [--parallel [N]] [--destroy always|never] [--host NAME] [-- ANSIBLE-PLAYBOOK ARGS]

Runs Molecule scenarios (molecule/<scenario>/molecule.yml) of the role or collection in the
current directory on testenv's systemd targets.

commands:
  test         the test sequence: dependency, cleanup, destroy, syntax, create, prepare,
               converge, idempotence, side_effect, verify, cleanup, destroy
  create       create the instances (and prepare them)
  converge     create and prepare if needed, then converge
  idempotence  converge again; fails naming each changed task and what it changed
  verify       run verify.yml (or testinfra's tests/)
  destroy      remove the instances
  check, prepare, side_effect, cleanup, syntax, dependency   one action (sequence)
  login        open a shell in an instance (--host NAME when there are several)
  list         the instances, and which target stands in for which image

Exit codes are Molecule's: 0 success; ansible-playbook's own code when a playbook fails;
1 for a failed idempotence or upgrade check, a refused molecule.yml or a missing scenario;
2 for a usage error.
`

// commands are the sub-commands richt-molecule knows.
var commands = map[string]bool{
	"test": true, "create": true, "converge": true, "idempotence": true, "verify": true,
	"destroy": true, "check": true, "prepare": true, "side_effect": true, "cleanup": true,
	"syntax": true, "dependency": true, "login": true, "list": true, "help": true,
}

// Command is a parsed command line.
type Command struct {
	Name      string
	Scenarios []string
	All       bool
	Parallel  int
	Destroy   string
	Host      string
	Args      []string
}

// ParseArgs reads richt-molecule's command line.
func ParseArgs(args []string) (Command, error) {
	c := Command{Destroy: "always", Parallel: 1}
	for i := 0; i < len(args); i++ {
		a := args[i]
		val := func(flag string) (string, error) {
			if v, ok := strings.CutPrefix(a, flag+"="); ok {
				return v, nil
			}
			if i+1 >= len(args) {
				return "", fmt.Errorf("%s needs a value", flag)
			}
			i++
			return args[i], nil
		}
		var err error
		switch {
		case a == "--":
			c.Args = append(c.Args, args[i+1:]...)
			i = len(args)
		case a == "-s" || a == "--scenario-name" || strings.HasPrefix(a, "--scenario-name="):
			flag := "--scenario-name"
			if a == "-s" {
				flag = "-s"
			}
			var v string
			if v, err = val(flag); err == nil {
				c.Scenarios = append(c.Scenarios, v)
			}
		case a == "--all":
			c.All = true
		case a == "--parallel" || strings.HasPrefix(a, "--parallel="):
			c.Parallel = 0 // every scenario at once, unless N follows
			if v, ok := strings.CutPrefix(a, "--parallel="); ok {
				c.Parallel, err = positive("--parallel", v)
			} else if i+1 < len(args) {
				if n, perr := strconv.Atoi(args[i+1]); perr == nil {
					c.Parallel, err = positive("--parallel", strconv.Itoa(n))
					i++
				}
			}
		case a == "--destroy" || strings.HasPrefix(a, "--destroy="):
			c.Destroy, err = val("--destroy")
			if err == nil && c.Destroy != "always" && c.Destroy != "never" {
				err = fmt.Errorf("--destroy %q: want always or never", c.Destroy)
			}
		case a == "--host" || a == "-h" || strings.HasPrefix(a, "--host="):
			c.Host, err = val("--host")
		case strings.HasPrefix(a, "-"):
			err = fmt.Errorf("unknown option %s", a)
		case c.Name == "":
			c.Name = a
		default:
			err = fmt.Errorf("unexpected argument %q", a)
		}
		if err != nil {
			return Command{}, err
		}
	}
	if c.Name == "" {
		return Command{}, fmt.Errorf("no command")
	}
	if !commands[c.Name] {
		return Command{}, fmt.Errorf("no such command %q", c.Name)
	}
	if c.All && len(c.Scenarios) > 0 {
		return Command{}, fmt.Errorf("--all and -s exclude each other")
	}
	if len(c.Scenarios) == 0 && !c.All {
		c.Scenarios = []string{"default"}
	}
	return c, nil
}

func positive(flag, v string) (int, error) {
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		return 0, fmt.Errorf("%s %q: want a whole number of at least 1", flag, v)
	}
	return n, nil
}

// Main runs richt-molecule with args from dir and returns its exit code; login's shell is
// left to the caller (exec argv), since it replaces the process.
func Main(ctx context.Context, dir string, args []string, stdout, stderr io.Writer) (code int, exec []string) {
	c, err := ParseArgs(args)
	if err != nil {
		fmt.Fprintf(stderr, "richt-molecule: %v\n\n%s", err, Usage)
		return 2, nil
	}
	if c.Name == "help" {
		fmt.Fprint(stdout, Usage)
		return 0, nil
	}
	r := &Runner{ProjectDir: dir, Out: stdout, PlaybookArgs: c.Args, DestroyNever: c.Destroy == "never",
		Parallel: c.Parallel, Host: c.Host}
	if c.All {
		if c.Scenarios, err = r.Scenarios(); err == nil && len(c.Scenarios) == 0 {
			err = failf("no scenarios under %s", dir+"/molecule")
		}
	}
	if err == nil && r.Parallel == 0 {
		r.Parallel = max(1, len(c.Scenarios))
	}
	if err == nil {
		switch c.Name {
		case "list":
			err = r.List(c.Scenarios)
		case "login":
			if len(c.Scenarios) != 1 {
				err = failf("login: name one scenario")
			} else if exec, err = r.LoginArgv(c.Scenarios[0]); err == nil {
				return 0, exec
			}
		default:
			err = r.Run(ctx, c.Name, c.Scenarios)
		}
	}
	if err != nil {
		var ee *ExitError
		if errors.As(err, &ee) {
			fmt.Fprintf(stderr, "CRITICAL %s\n", ee.Msg)
			return ee.Code, nil
		}
		fmt.Fprintf(stderr, "CRITICAL %v\n", err)
		return 1, nil
	}
	return 0, nil
}
