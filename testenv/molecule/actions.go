package molecule

import (
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/richt/services/testenv"
	"github.com/richt/services/testenv/ansibleout"
)

// Container labels of a scenario's targets: the state directory names the scenario of
// one project, so destroy finds its targets even when state.json was lost.
const (
	labelState    = "org.richt.molecule.state"
	labelScenario = "org.richt.molecule.scenario"
	labelInstance = "org.richt.molecule.instance"
)

// cursorFile keeps, in each target, the journal position the last action ended at.
const cursorFile = "/var/tmp/richt-molecule.cursor"

func (s *scenario) action(ctx context.Context, action string) error {
	began := time.Now()
	var err error
	switch action {
	case "dependency":
		err = s.dependency()
	case "cleanup":
		err = s.optionalPlaybook(ctx, "cleanup", s.state.Created)
	case "destroy":
		err = s.destroy(ctx)
	case "syntax":
		err = s.syntax(ctx)
	case "create":
		err = s.create(ctx)
	case "prepare":
		if s.state.Prepared {
			s.logf("prepare: Skipping, instances already prepared.")
			return nil
		}
		if err = s.optionalPlaybook(ctx, "prepare", true); err == nil && s.state.Created {
			s.state.Prepared = true
			err = saveState(s.stateDir, s.state)
		}
	case "converge":
		err = s.converge(ctx)
	case "idempotence":
		err = s.idempotence(ctx)
	case "side_effect":
		err = s.optionalPlaybook(ctx, "side_effect", true)
	case "verify":
		err = s.verify(ctx)
	case "check":
		if err = s.needCreated("check"); err == nil {
			err = s.playbook(ctx, "check", s.playbookPath("converge"), []string{"--check"}, s.convergeVars())
		}
	case "upgrade":
		err = s.upgrade(ctx)
	default:
		err = failf("%s: not an action this runner runs", action)
	}
	if err == nil {
		s.logf("%s: completed in %s", action, time.Since(began).Round(time.Millisecond))
	}
	return err
}

func (s *scenario) dependency() error {
	if s.cfg.Dependency.Name == "" {
		s.logf("dependency: Skipping, dependency is disabled.")
		return nil
	}
	for _, f := range []string{"requirements.yml", "collections.yml"} {
		if _, err := os.Stat(filepath.Join(s.dir, f)); err == nil {
			return failf("dependency: %s would need ansible-galaxy and the network; install what it lists into ANSIBLE_COLLECTIONS_PATH or ANSIBLE_ROLES_PATH and set dependency.enabled: false", filepath.Join(s.dir, f))
		}
	}
	s.logf("dependency: Skipping, missing the requirements file.")
	return nil
}

// playbookPath is the action's playbook: provisioner.playbooks' entry, else ACTION.yml in
// the scenario directory.
func (s *scenario) playbookPath(action string) string {
	if p, ok := s.cfg.Provisioner.Playbooks[action]; ok {
		if !filepath.IsAbs(p) {
			p = filepath.Join(s.dir, p)
		}
		return p
	}
	return filepath.Join(s.dir, action+".yml")
}

// optionalPlaybook runs ACTION.yml when the scenario has one (and when), else says it
// skipped, as Molecule does.
func (s *scenario) optionalPlaybook(ctx context.Context, action string, when bool) error {
	path := s.playbookPath(action)
	if _, err := os.Stat(path); err != nil {
		s.logf("%s: Skipping, %s playbook not configured.", action, action)
		return nil
	}
	if !when {
		s.logf("%s: Skipping, instances not created.", action)
		return nil
	}
	if err := s.needCreated(action); err != nil {
		return err
	}
	return s.playbook(ctx, action, path, nil, s.convergeVars())
}

func (s *scenario) needCreated(action string) error {
	if !s.state.Created {
		return failf("%s: Instances not created. Please create instances first (richt-molecule create -s %s).", action, s.name)
	}
	return nil
}

func (s *scenario) syntax(ctx context.Context) error {
	if err := s.writeInventoryAt(filepath.Join(s.stateDir, syntaxInventory)); err != nil {
		return err
	}
	return s.playbook(ctx, "syntax", s.playbookPath("converge"), []string{"--syntax-check"}, s.convergeVars())
}

// create boots one target per platform, at once, each of its platform's generation,
// with the scenario's fixture repository; then it marks the journal so the first action
// reports only what it caused.
func (s *scenario) create(ctx context.Context) error {
	if s.state.Created {
		s.logf("create: Skipping, instances already created.")
		return nil
	}
	// Leftovers of an earlier run of this scenario (a killed process) go first.
	if n, err := s.r.Docker.Remove(ctx, labelState, s.stateDir); err != nil {
		return failf("create: remove leftovers: %v", err)
	} else if n > 0 {
		s.logf("create: removed %d leftover target(s) of an earlier run", n)
	}
	repo := ""
	if len(s.cfg.Richt.Packages) > 0 {
		repo = filepath.Join(s.stateDir, "repo")
		_ = os.RemoveAll(repo)
		pkgs, err := s.cfg.Richt.TestenvPackages()
		if err != nil {
			return failf("create: %v", err)
		}
		if err := testenv.BuildRepoDir(repo, pkgs...); err != nil {
			return failf("create: fixture packages: %v", err)
		}
	}
	insts := make([]Instance, len(s.cfg.Platforms))
	errs := make([]error, len(s.cfg.Platforms))
	var wg sync.WaitGroup
	for i, p := range s.cfg.Platforms {
		g := s.gens[i]
		s.logf("create: %s (%s) ← %s", p.Name, p.Image, g)
		if len(p.Subsumed) > 0 {
			s.logf("create: %s: %s: testenv's target boots systemd its own way (docs/testenv.md); not applied as written", p.Name, strings.Join(p.Subsumed, ", "))
		}
		opts := []testenv.Option{
			testenv.WithLabel(labelState, s.stateDir),
			testenv.WithLabel(labelScenario, s.name),
			testenv.WithLabel(labelInstance, p.Name),
			testenv.WithReadyTimeout(3 * time.Minute),
		}
		if g.Image != "" {
			opts = append(opts, testenv.WithImage(g.Image))
		} else {
			opts = append(opts, testenv.WithSuite(g.Suite))
		}
		if len(p.Env) > 0 {
			opts = append(opts, testenv.WithEnv(p.Env))
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			t, err := s.r.Start(ctx, opts...)
			if t != nil {
				insts[i] = Instance{Name: p.Name, ContainerID: t.ID(), Image: t.Image, StandsIn: p.Image}
			}
			if err == nil && repo != "" {
				err = t.AddRepo(ctx, s.cfg.Richt.Repository, repo)
			}
			errs[i] = err
		}()
	}
	wg.Wait()
	s.state = State{Instances: insts, Created: true}
	for i, err := range errs {
		if err != nil {
			_ = s.destroy(ctx)
			return failf("create: %s: %v", s.cfg.Platforms[i].Name, err)
		}
	}
	for _, in := range insts {
		if _, code, err := s.r.Docker.Exec(ctx, in.ContainerID, "journalctl", "--cursor-file="+cursorFile, "-n", "0", "-q"); err != nil || code != 0 {
			_ = s.destroy(ctx)
			return failf("create: %s: mark the journal: exit %d %v", in.Name, code, err)
		}
	}
	if err := saveState(s.stateDir, s.state); err != nil {
		return err
	}
	return s.writeInventory()
}

// destroy removes every target of the scenario (found by label, so also those a lost
// state file no longer names) and resets the state.
func (s *scenario) destroy(ctx context.Context) error {
	n, err := s.r.Docker.Remove(ctx, labelState, s.stateDir)
	if err != nil {
		return failf("destroy: %v", err)
	}
	if n == 0 {
		s.logf("destroy: no targets")
	} else {
		s.logf("destroy: removed %d target(s)", n)
	}
	s.state = State{}
	return saveState(s.stateDir, s.state)
}

// convergeVars are the extra variables of converge-like runs: an upgrade scenario's
// variable at From, or at To once the upgrade ran.
func (s *scenario) convergeVars() map[string]any {
	u := s.cfg.Richt.Upgrade
	if u == nil {
		return nil
	}
	if s.state.Upgraded {
		return map[string]any{u.Var: u.To}
	}
	return map[string]any{u.Var: u.From}
}

func (s *scenario) converge(ctx context.Context) error {
	if err := s.needCreated("converge"); err != nil {
		return err
	}
	path := s.playbookPath("converge")
	if _, err := os.Stat(path); err != nil {
		return failf("converge: %s is missing", path)
	}
	if err := s.playbook(ctx, "converge", path, nil, s.convergeVars()); err != nil {
		return err
	}
	s.state.Converged = true
	return saveState(s.stateDir, s.state)
}

// idempotence converges again, verbose enough for each changed result to say what the
// module changed; any change fails with Molecule's message and the changes.
func (s *scenario) idempotence(ctx context.Context) error {
	if err := s.needCreated("idempotence"); err != nil {
		return err
	}
	if !s.state.Converged {
		return failf("idempotence: Instances not converged. Please converge instances first.")
	}
	var args []string
	if !verbose(s.cfg.Provisioner.Options, s.r.PlaybookArgs) {
		args = []string{"-v"}
	}
	out, err := s.playbookOutput(ctx, "idempotence", s.playbookPath("converge"), args, s.convergeVars())
	if err != nil {
		return err
	}
	changes := ansibleout.Parse(out).Changes
	if len(changes) == 0 {
		s.logf("idempotence: Idempotence completed successfully.")
		return nil
	}
	lines := make([]string, len(changes))
	for i, c := range changes {
		lines[i] = idempotenceLine(c)
	}
	return failf("Idempotence test failed because of the following tasks:\n%s", strings.Join(lines, "\n"))
}

// idempotenceLine is Molecule's line for a changed task, "* [host] => task", and under it
// what the module said it changed.
func idempotenceLine(c ansibleout.Change) string {
	s := fmt.Sprintf("* [%s] => %s", c.Host, c.Task)
	if c.Item != "" {
		s += " (item=" + c.Item + ")"
	}
	if c.What != "" {
		s += "\n    changed: " + c.What
	}
	return s
}

func verbose(options map[string]any, args []string) bool {
	for k := range options {
		if strings.Trim(k, "v") == "" || k == "verbose" {
			return true
		}
	}
	for _, a := range args {
		if strings.HasPrefix(a, "-v") || a == "--verbose" {
			return true
		}
	}
	return false
}

func (s *scenario) verify(ctx context.Context) error {
	if s.cfg.Verifier.Name == "testinfra" {
		if err := s.needCreated("verify"); err != nil {
			return err
		}
		return s.testinfra(ctx)
	}
	return s.optionalPlaybook(ctx, "verify", true)
}

// upgrade converges at To and holds each named unit's events on every instance to its
// expectation: exactly one restart, one reload, one start or one stop, or nothing.
func (s *scenario) upgrade(ctx context.Context) error {
	u := s.cfg.Richt.Upgrade
	if u == nil {
		return failf("upgrade: molecule.yml has no richt.upgrade")
	}
	if err := s.needCreated("upgrade"); err != nil {
		return err
	}
	s.state.Upgraded = true
	s.logf("upgrade: converge with %s=%v (was %v)", u.Var, u.To, u.From)
	events, err := s.playbookEvents(ctx, "upgrade", s.playbookPath("converge"), nil, s.convergeVars())
	if err != nil {
		return err
	}
	if err := saveState(s.stateDir, s.state); err != nil {
		return err
	}
	var bad []string
	for _, in := range s.state.Instances {
		for _, unit := range slices.Sorted(maps.Keys(u.Expect)) {
			want := u.Expect[unit]
			got := events[in.Name][unit]
			if !expectationMet(want, got) {
				bad = append(bad, fmt.Sprintf("* [%s] %s: want %s once, got %s", in.Name, unit, want, got.Outcome()))
			} else {
				s.logf("upgrade: [%s] %s %s, as expected", in.Name, unit, got.Outcome())
			}
		}
	}
	if len(bad) > 0 {
		sort.Strings(bad)
		return failf("Upgrade test failed: %v → %v did not do what richt.upgrade.expect says:\n%s", u.From, u.To, strings.Join(bad, "\n"))
	}
	return nil
}

func expectationMet(want string, got UnitEvents) bool {
	switch want {
	case "untouched":
		return got.None()
	case "restarted":
		return got == UnitEvents{Restarted: 1}
	case "reloaded":
		return got == UnitEvents{Reloaded: 1}
	case "started":
		return got == UnitEvents{Started: 1}
	case "stopped":
		return got == UnitEvents{Stopped: 1}
	}
	return false
}

// unitEvents reads each instance's journal since the last action and counts its unit
// jobs, advancing the mark.
func (s *scenario) unitEvents(ctx context.Context) (map[string]map[string]UnitEvents, error) {
	all := map[string]map[string]UnitEvents{}
	for _, in := range s.state.Instances {
		out, code, err := s.r.Docker.Exec(ctx, in.ContainerID, "/bin/sh", "-c",
			`journalctl --sync 2>/dev/null; exec journalctl --cursor-file="$0" -o json -q _PID=1`, cursorFile)
		if err != nil || code != 0 {
			return nil, fmt.Errorf("read the journal of %s: exit %d %v", in.Name, code, err)
		}
		all[in.Name] = ParseJournal(out)
	}
	return all, nil
}

// TestenvPackages turns richt.packages into testenv's package descriptions.
func (r Richt) TestenvPackages() ([]testenv.Package, error) {
	var out []testenv.Package
	for _, p := range r.Packages {
		tp := testenv.Package{Name: p.Name, Version: p.Version, Release: p.Release, Epoch: p.Epoch,
			Requires: p.Requires, Provides: p.Provides, SystemdUnits: p.SystemdUnits, Files: map[string]testenv.File{}}
		for path, f := range p.Files {
			mode := os.FileMode(0o644)
			if f.Mode != "" {
				var m uint32
				if _, err := fmt.Sscanf(f.Mode, "%o", &m); err != nil || m > 0o7777 {
					return nil, fmt.Errorf("richt.packages %s: files.%s.mode %q: want octal, such as \"0755\"", p.Name, path, f.Mode)
				}
				mode = os.FileMode(m)
			}
			tp.Files[path] = testenv.File{Content: f.Content, Mode: mode, Config: f.Config}
		}
		out = append(out, tp)
	}
	return out, nil
}
