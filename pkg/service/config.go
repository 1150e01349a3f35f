package service

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/richt/services/pkg/configfile"
	"github.com/richt/services/pkg/contract"
	"github.com/richt/services/pkg/durable"
	"github.com/richt/services/pkg/safefile"
	"github.com/richt/services/pkg/unitfile"
)

// configTimeout is a config step's deadline when its configs[i].timeout is not given: its
// plan (owner and group resolved through NSS) and its write, the validator included.
const configTimeout = time.Minute

// configPlan is one config's plan in hand, made before the packages step (present) or at
// its turn (absent), and carried out by applyConfig.
type configPlan struct {
	cfg  configfile.Config
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

// movesContent reports whether steps replace or remove the file's content (not only its
// owner or mode): what a manager reload is for.
func movesContent(steps []configfile.Step) bool {
	return slices.Contains(steps, configfile.StepWrite) || slices.Contains(steps, configfile.StepRemove)
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
	if c.unitDir() && movesContent(c.steps()) {
		out = append(out, durable.StepRecordReload)
	}
	for _, s := range c.steps() {
		out = append(out, string(s))
	}
	return out
}

func configStepName(c configfile.Config) string { return "config " + c.Name }

// planConfig plans one config, reading only.
func (r *run) planConfig(ctx context.Context, c configfile.Config) configPlan {
	if r.d.Configs == nil {
		return configPlan{cfg: c, plan: configfile.Plan{Want: configfile.Want{Name: c.Name, Path: c.Path, Present: !c.Absent}},
			err: fmt.Errorf("%s: configs cannot be written here (no Configs)", configStepName(c))}
	}
	cp := configPlan{cfg: c, budget: budget{limit: c.Timeout}}
	if cp.budget.limit == 0 {
		cp.budget.limit = configTimeout
	}
	cp.budget.plan(ctx, func(ctx context.Context) { cp.plan, cp.err = r.d.Configs.Plan(ctx, c) })
	return cp
}

// applyConfig carries out a config's plan (check mode: reports it, running no validator)
// and records its result in the service's. before runs right before the file's content
// moves (configfile.Deps.BeforeReplace): the records of what the change owes. A config
// under a unit directory has the manager reload recorded due there too.
func (r *run) applyConfig(ctx context.Context, c configPlan, before func() error) (map[string]any, error) {
	step := configStepName(c.cfg)
	if c.deferred && !r.req.CheckMode {
		// The packages step ran: the directory is there now, or the plan says why not.
		c = r.planConfig(ctx, c.cfg)
	}
	var res *configfile.Result
	err := c.err
	switch {
	case c.deferred && r.req.CheckMode:
		if c.unknownID() {
			// Predicted on the word of the packages step only: say so.
			r.req.Warn("%s: its owner or group is not known yet, and is expected to be created by the packages step's change (%v)", step, c.err)
		}
		res = c.plan.Result()
		res.Changed, res.Plan, err = true, c.predicted(), nil
		if c.missingDir() {
			// No file can be in a directory that is not there: the real run's diff.
			w := c.plan.Want
			after := safefile.File{Exists: true, Content: w.Content, Mode: w.Mode, UID: w.UID, GID: w.GID}
			res.Diff = safefile.Diff(w.Path, safefile.File{}, after, w.Sensitive)
		}
	case err != nil:
		res = c.plan.Result()
		res.Changed, res.Plan = false, nil
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
			res.Changed, res.Plan = false, nil
		}
	}
	out := map[string]any{}
	if data, merr := json.Marshal(res); merr == nil {
		_ = json.Unmarshal(data, &out)
	}
	if !r.req.Diff {
		// As Ansible's own modules: a diff only in diff mode. The previous content of a
		// config that is not sensitive would otherwise be in every result, and in every
		// event AWX stores of it.
		delete(out, "diff")
	}
	moved := res.Changed && movesContent(res.Plan)
	names := []string{}
	if c.unitDir() && moved {
		out["unit_files_changed"] = true
		out["daemon_reload"] = string(contract.ReloadNeeded)
		names = append(names, durable.StepRecordReload)
	}
	for _, s := range res.Plan {
		names = append(names, string(s))
	}
	out["plan"] = names
	if res.Changed {
		r.res.Changed = true
	}
	if err != nil {
		r.res.FailedStep = step
		out["failed"] = true
		out["msg"] = err.Error()
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
		return c.unitDir() && (c.err != nil || movesContent(c.steps()))
	})
}
