package molecule

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/richt/services/testenv"
)

// ExitError is a failed run with Molecule's exit code for it: ansible-playbook's own code
// for a failed playbook, 1 for everything the runner itself judged (an idempotence or
// upgrade failure, a refused molecule.yml, a missing scenario).
type ExitError struct {
	Code int
	Msg  string
}

func (e *ExitError) Error() string { return e.Msg }

func failf(format string, args ...any) error {
	return &ExitError{Code: 1, Msg: fmt.Sprintf(format, args...)}
}

// Runner runs a project's scenarios. The zero value of each field but ProjectDir is a
// working default.
type Runner struct {
	// ProjectDir is the role's or collection's directory, which holds molecule/.
	ProjectDir string
	// StateRoot holds the scenarios' state directories (default DefaultStateRoot).
	StateRoot string
	// Out receives the run's log and ansible-playbook's output.
	Out io.Writer
	// Getenv reads the environment (default os.Getenv).
	Getenv func(string) string
	// Docker reaches created targets (default: the docker command).
	Docker Docker
	// Start boots a target (default testenv.StartContext).
	Start func(ctx context.Context, opts ...testenv.Option) (*testenv.Target, error)
	// AnsiblePlaybook is the command (default "ansible-playbook").
	AnsiblePlaybook string
	// Env are extra KEY=VALUE variables of every ansible-playbook run, over the process's
	// own (a test gives the built collection's ANSIBLE_COLLECTIONS_PATH this way).
	Env []string
	// PlaybookArgs go to every ansible-playbook run (the command line's arguments after --).
	PlaybookArgs []string
	// DestroyNever keeps the targets when test fails or ends (Molecule's --destroy=never).
	DestroyNever bool
	// Parallel is how many scenarios run at once (default 1).
	Parallel int
	// Host picks the instance for login.
	Host string
	// Pythons are the interpreters tried, in order, for a testinfra verifier: the first
	// that imports testinfra and pytest runs the tests (default python3 on PATH, then
	// /usr/bin/python3).
	Pythons []string
}

func (r *Runner) defaults() {
	if r.Out == nil {
		r.Out = os.Stdout
	}
	if r.Getenv == nil {
		r.Getenv = os.Getenv
	}
	if r.StateRoot == "" {
		r.StateRoot = DefaultStateRoot(r.Getenv)
	}
	if r.Docker == nil {
		r.Docker = DockerCLI{}
	}
	if r.Start == nil {
		r.Start = testenv.StartContext
	}
	if r.AnsiblePlaybook == "" {
		r.AnsiblePlaybook = "ansible-playbook"
	}
	if r.Parallel < 1 {
		r.Parallel = 1
	}
	if r.Pythons == nil {
		r.Pythons = defaultPythons
	}
}

// Scenarios lists the project's scenarios: the directories of molecule/ that hold a
// molecule.yml, sorted.
func (r *Runner) Scenarios() ([]string, error) {
	entries, err := os.ReadDir(filepath.Join(r.ProjectDir, "molecule"))
	if err != nil {
		return nil, failf("no molecule directory in %s: %v", r.ProjectDir, err)
	}
	var names []string
	for _, e := range entries {
		if _, err := os.Stat(filepath.Join(r.ProjectDir, "molecule", e.Name(), "molecule.yml")); e.IsDir() && err == nil {
			names = append(names, e.Name())
		}
	}
	sort.Strings(names)
	return names, nil
}

// Run runs a sub-command (test, create, converge, idempotence, verify, destroy, check,
// prepare, side_effect, cleanup, syntax, dependency) on the named scenarios, Parallel at
// a time. It returns the first failing scenario's error (an *ExitError) after all ran.
func (r *Runner) Run(ctx context.Context, command string, scenarios []string) error {
	for _, err := range r.RunAll(ctx, command, scenarios) {
		if err != nil {
			return err
		}
	}
	return nil
}

// RunAll is Run, returning each scenario's own outcome, in the order given. A scenario
// that cannot be loaded fails alone, before any scenario starts.
func (r *Runner) RunAll(ctx context.Context, command string, scenarios []string) []error {
	r.defaults()
	errs := make([]error, len(scenarios))
	cfgs := make([]*scenario, len(scenarios))
	for i, name := range scenarios {
		s, err := r.load(name)
		if err == nil && s.cfg.Sequence(command) == nil {
			err = failf("%s: not a sub-command this runner runs", command)
		}
		if err == nil {
			err = s.needVerifier(command)
		}
		if err != nil {
			errs[i] = err
			return errs
		}
		cfgs[i] = s
	}
	sem := make(chan struct{}, r.Parallel)
	var wg sync.WaitGroup
	for i, s := range cfgs {
		if len(cfgs) > 1 && r.Parallel > 1 {
			s.out = prefixWriter(r.Out, "["+s.name+"] ", &outMu)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			errs[i] = s.run(ctx, command)
		}()
	}
	wg.Wait()
	return errs
}

var outMu sync.Mutex

// load reads a scenario's molecule.yml (with $VAR and ${VAR} expanded, MOLECULE_*
// variables included) and prepares its state directory's paths.
func (r *Runner) load(name string) (*scenario, error) {
	if name == "" || strings.ContainsAny(name, "/\\") || name == "." || name == ".." {
		return nil, failf("Scenario %q is not a scenario name.", name)
	}
	dir := filepath.Join(r.ProjectDir, "molecule", name)
	data, err := os.ReadFile(filepath.Join(dir, "molecule.yml"))
	if err != nil {
		return nil, failf("Scenario '%s' not found. Exiting.", name)
	}
	stateDir, err := StateDir(r.StateRoot, r.ProjectDir, name)
	if err != nil {
		return nil, failf("%v", err)
	}
	project, _ := filepath.Abs(r.ProjectDir)
	scenarioDir, _ := filepath.Abs(dir)
	mvars := map[string]string{
		"MOLECULE_PROJECT_DIRECTORY":   project,
		"MOLECULE_SCENARIO_DIRECTORY":  scenarioDir,
		"MOLECULE_SCENARIO_NAME":       name,
		"MOLECULE_EPHEMERAL_DIRECTORY": stateDir,
		"MOLECULE_INVENTORY_FILE":      filepath.Join(stateDir, "inventory.yml"),
		"MOLECULE_DRIVER_NAME":         "docker",
		"MOLECULE_FILE":                filepath.Join(scenarioDir, "molecule.yml"),
	}
	getenv := func(k string) string {
		if v, ok := mvars[k]; ok {
			return v
		}
		return r.Getenv(k)
	}
	cfg, err := Parse(strings.NewReader(ExpandEnv(string(data), getenv)))
	if err != nil {
		return nil, failf("%s: %v", filepath.Join(dir, "molecule.yml"), err)
	}
	gens := make([]Generation, len(cfg.Platforms))
	for i, p := range cfg.Platforms {
		if gens[i], err = GenerationOf(p.Image, r.Getenv("TESTENV_IMAGE")); err != nil {
			return nil, failf("%s: platforms[%d] %s: %v", filepath.Join(dir, "molecule.yml"), i, p.Name, err)
		}
	}
	return &scenario{r: r, name: name, dir: scenarioDir, project: project, stateDir: stateDir,
		cfg: cfg, gens: gens, mvars: mvars, out: r.Out}, nil
}

// needVerifier finds the testinfra verifier's interpreter when the sub-command verifies,
// so a machine without testinfra is refused before anything is created, not after the
// converge (and destroy or list still work there).
func (s *scenario) needVerifier(command string) error {
	if s.cfg.Verifier.Name != "testinfra" || !slices.Contains(s.cfg.Sequence(command), "verify") {
		return nil
	}
	py, err := testinfraPython(s.r.Pythons)
	if err != nil {
		return failf("%s: %v", filepath.Join(s.dir, "molecule.yml"), err)
	}
	s.python = py
	return nil
}

// syntaxWhileCreating runs the syntax check beside create instead of before it: the
// check needs no target and the boot needs no controller, so the check's second or so
// hides in the boot. The outcome is the sequence's: a failed check fails the run with its
// own exit code and message (and the new targets go, as after any failure), a failed
// create fails it as create. The check's output is printed when both are done, whole.
func (s *scenario) syntaxWhileCreating(ctx context.Context) (failed string, err error) {
	var buf bytes.Buffer
	syn := *s
	syn.out = &buf
	done := make(chan error, 1)
	go func() { done <- syn.action(ctx, "syntax") }()
	createErr := s.action(ctx, "create")
	syntaxErr := <-done
	_, _ = s.out.Write(buf.Bytes())
	if syntaxErr != nil {
		return "syntax", syntaxErr
	}
	return "create", createErr
}

// scenario is one scenario's run.
type scenario struct {
	r        *Runner
	name     string
	dir      string
	project  string
	stateDir string
	cfg      Config
	gens     []Generation
	mvars    map[string]string
	out      io.Writer
	state    State
	// python runs the testinfra verifier's pytest.
	python string
}

func (s *scenario) logf(format string, args ...any) {
	fmt.Fprintf(s.out, "INFO     %s ➜ %s\n", s.name, fmt.Sprintf(format, args...))
}

// run takes the state directory, then runs the sub-command's sequence. A failing test
// sequence still destroys its targets (Molecule's --destroy=always), unless DestroyNever.
func (s *scenario) run(ctx context.Context, command string) error {
	unlock, err := lockState(s.stateDir)
	if err != nil {
		return failf("%s: %v", s.name, err)
	}
	defer unlock()
	if s.state, err = loadState(s.stateDir); err != nil {
		return failf("%s: %v", s.name, err)
	}
	seq := s.cfg.Sequence(command)
	s.logf("%s: sequence %s", command, strings.Join(seq, ", "))
	for i := 0; i < len(seq); i++ {
		action := seq[i]
		if command == "test" && action == "destroy" && i == len(seq)-1 && s.r.DestroyNever {
			s.logf("destroy: skipped (--destroy=never)")
			continue
		}
		var err error
		if action == "syntax" && i+1 < len(seq) && seq[i+1] == "create" && !s.state.Created {
			action, err = s.syntaxWhileCreating(ctx)
			i++
		} else {
			err = s.action(ctx, action)
		}
		if err != nil {
			var ee *ExitError
			if !errors.As(err, &ee) {
				err = &ExitError{Code: 1, Msg: err.Error()}
			}
			fmt.Fprintf(s.out, "CRITICAL %s ➜ %s: %s\n", s.name, action, err)
			if command == "test" && !s.r.DestroyNever && action != "destroy" {
				// Also after an interrupt: the targets go even when ctx ended.
				if derr := s.destroy(context.WithoutCancel(ctx)); derr != nil {
					fmt.Fprintf(s.out, "ERROR    %s ➜ destroy after failure: %v\n", s.name, derr)
				}
			}
			return err
		}
	}
	return nil
}
