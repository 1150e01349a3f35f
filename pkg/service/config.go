package service

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/richt/services/pkg/configfile"
	"github.com/richt/services/pkg/durable"
	"github.com/richt/services/pkg/safefile"
	"github.com/richt/services/pkg/unitfile"
)

// configTimeout is a config step's deadline when its configs[i].timeout is not given: its
// plan (owner and group resolved through NSS) and its write, the validator included.
const configTimeout = time.Minute

// config is one entry of configs as the service keeps it: configfile's Config, its place
// in configs (configfile's refusals name a parameter as configfile knows it; the service
// names it as its user gave it, configs[2].owner) and its step's deadline.
type config struct {
	configfile.Config
	index int
	// limit is the config step's deadline: its plan and its write, the validator
	// included (configs[i].timeout, or configTimeout).
	limit time.Duration
}

// named is err under the config's parameter name when it refuses one of its parameters
// (configfile.ParamError), else err.
func (c config) named(err error) error {
	var pe *configfile.ParamError
	if errors.As(err, &pe) {
		return fmt.Errorf("configs[%d].%w", c.index, err)
	}
	return err
}

// configPlan is one config's plan in hand, made before the packages step (present) or at
// its turn (absent), and carried out by applyConfig.
type configPlan struct {
	cfg  config
	plan configfile.Plan
	err  error
	// budget is the step's timeout and what the plan spent of it.
	budget budget
	// deferred: the plan stopped at what the packages step, which changes something, may
	// create (waitsForPackages): the config is planned again at its turn, and until then
	// predicted written (check mode reports that prediction).
	deferred bool
}

// waitsForPackages reports whether the plan stopped at something a package's install
// creates: a directory above the path that does not exist (nginx's conf.d), or an owner
// or group no source knows (the user redis's package adds).
func (c configPlan) waitsForPackages() bool {
	return c.missingDir() || c.unknownID()
}

// missingDir reports whether the plan stopped at a directory above the path that does
// not exist.
func (c configPlan) missingDir() bool {
	d := c.plan.File.Dirs
	return c.err != nil && len(d) > 0 && !d[len(d)-1].Exists
}

// unknownID reports whether the plan stopped at an owner or group no source knows.
func (c configPlan) unknownID() bool { return errors.Is(c.err, safefile.ErrUnknownID) }

// predicted is the plan of a deferred config until its turn: written.
func (c configPlan) predicted() []configfile.Step { return []configfile.Step{configfile.StepWrite} }

// unitDirs are the directories systemd loads system units from besides its search path
// (unitfile.SearchPath): the runtime control files systemctl set-property writes, the
// attached portable services, the transient units.
var unitDirs = append(slices.Clone(unitfile.SearchPath),
	"/etc/systemd/system.control", "/run/systemd/system.control",
	"/etc/systemd/system.attached", "/run/systemd/system.attached",
	"/run/systemd/transient")

// unitDir reports whether the config lies under one of systemd's unit directories
// (unitDirs): a change of it is a unit file change, which the manager must be reloaded
// for.
func (c configPlan) unitDir() bool { return inUnitDir(c.cfg.Path) }

// inUnitDir reports whether p lies under one of systemd's unit directories (unitDirs).
func inUnitDir(p string) bool {
	for _, d := range unitDirs {
		if strings.HasPrefix(p, d+"/") {
			return true
		}
	}
	return false
}

// changes reports whether the plan changes the file, or could not be made (owes counts
// it as a change, as a file step's).
func (c configPlan) changes() bool { return c.deferred || c.err != nil || c.plan.Changed() }

// steps are the plan's steps, or a deferred config's prediction.
func (c configPlan) steps() []configfile.Step {
	if c.deferred {
		return c.predicted()
	}
	return c.plan.Steps
}

// names are the plan's entries in the service's plan: the configfile steps, and ahead of
// them, for a config under a unit directory, the manager reload recorded due (as
// unit_override records it before a unit file moves).
func (c configPlan) names() []string {
	var out []string
	if c.unitDir() && configfile.MovesContent(c.steps()) {
		out = append(out, durable.StepRecordReload)
	}
	for _, s := range c.steps() {
		out = append(out, string(s))
	}
	return out
}

func configStepName(c config) string { return "config " + c.Name }

// planConfig plans one config, reading only.
func (r *run) planConfig(ctx context.Context, c config) configPlan {
	if r.d.Configs == nil {
		return configPlan{cfg: c, plan: configfile.Plan{Want: configfile.Want{Name: c.Name, Path: c.Path, Present: !c.Absent}},
			err: fmt.Errorf("%s: configs cannot be written here (no Configs)", configStepName(c))}
	}
	cp := configPlan{cfg: c, budget: budget{limit: c.limit}}
	cp.budget.plan(ctx, func(ctx context.Context) { cp.plan, cp.err = r.d.Configs.Plan(ctx, c.Config) })
	cp.err = c.named(cp.err)
	return cp
}

// applyConfig carries out a config's plan (check mode: reports it, running no validator)
// and records its result in the service's. A real run hands it no deferred plan: present
// plans those again once the packages step ran. before runs right before the file's content
// moves (configfile.Deps.BeforeReplace): the records of what the change owes. A config
// under a unit directory has the manager reload recorded due there too.
func (r *run) applyConfig(ctx context.Context, c configPlan, before func() error) (stepResult, error) {
	step := configStepName(c.cfg)
	var res *configfile.Result
	err := c.err
	switch {
	case c.deferred && r.req.CheckMode:
		if c.unknownID() {
			// Predicted on the word of the packages step only: say so.
			r.req.Warn("%s: its owner or group is not known yet, and is expected to be created by the packages step's change (%v)", step, c.err)
		}
		res, err = c.plan.Result(), nil
		res.Reset(true, c.predicted())
		if c.missingDir() {
			// No file can be in a directory that is not there: the real run's diff.
			w := c.plan.Want
			after := safefile.File{Exists: true, Content: w.Content, Mode: w.Mode, UID: w.UID, GID: w.GID}
			res.Diff = safefile.Diff(w.Path, safefile.File{}, after, w.Sensitive)
		}
	case err != nil:
		res = c.plan.Result()
		res.Reset(false, nil)
	case r.req.CheckMode:
		res = c.plan.Result()
	default:
		ctx, cancel := c.budget.run(ctx)
		defer cancel()
		hook := func() error {
			if c.unitDir() && r.d.MarkSync != nil {
				if err := r.d.MarkSync(ctx, "service "+r.p.Name+" "+step+" ("+c.cfg.Path+") changed"); err != nil {
					return fmt.Errorf("record the manager reload due: %w", err)
				}
			}
			if before != nil {
				return before()
			}
			return nil
		}
		res, err = r.d.Configs.Apply(ctx, c.plan, hook)
		if res == nil {
			res = c.plan.Result()
			res.Reset(false, nil)
		}
	}
	names := []string{}
	if res.UnitFilesChanged {
		// Recorded due before the content moved, as unit_override records it.
		names = append(names, durable.StepRecordReload)
	}
	for _, s := range res.Plan {
		names = append(names, string(s))
	}
	if res.Changed {
		r.res.Changed = true
	}
	out := r.configReport(res, names, err)
	if err != nil {
		r.res.FailedStep = step
		return out, fmt.Errorf("%s: %w", step, err)
	}
	return out, nil
}

// configsPlanned are the configs' outcomes as their plans predict them.
func configsPlanned(plans []configPlan) outcomes {
	out := outcomes{}
	for _, c := range plans {
		out[configRef(c.cfg.Name)] = planned(c.changes(), false)
	}
	return out
}

// configUnitFiles reports whether a config plan changes a file under a unit directory.
func configUnitFiles(plans []configPlan) bool {
	return slices.ContainsFunc(plans, func(c configPlan) bool {
		return c.unitDir() && (c.err != nil || configfile.MovesContent(c.steps()))
	})
}
