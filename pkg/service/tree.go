package service

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/richt/services/pkg/configfile"
	"github.com/richt/services/pkg/mountns"
	"github.com/richt/services/pkg/runner"
)

// TreeRunner runs a tree validator with the run's new configs at their paths, changing
// nothing on the host (mountns.Runner: a private mount namespace).
type TreeRunner interface {
	Run(ctx context.Context, files []mountns.File, argv ...string) (runner.Result, error)
}

// treeStep is the plan's entry of a config's tree validator.
const treeStep = "validate-tree"

// treeValidators are the configs with a tree validator, when any config of the plans
// changes (the validators' rule: none runs otherwise).
func treeValidators(plans []configPlan) []configPlan {
	changes := false
	for _, cp := range plans {
		changes = changes || cp.changes()
	}
	if !changes {
		return nil
	}
	var out []configPlan
	for _, cp := range plans {
		if len(cp.cfg.Tree()) > 0 {
			out = append(out, cp)
		}
	}
	return out
}

// treeNames are the plan's entries of the tree validators, ahead of the configs' own.
func treeNames(plans []configPlan) []string {
	var out []string
	for _, cp := range treeValidators(plans) {
		out = append(out, configStepName(cp.cfg)+": "+treeStep)
	}
	return out
}

// validateTree runs every tree validator of the service (treeValidators), each with every
// config the run writes at its path with its new content, mode and owner, before any
// config is written: the daemon's own checker judges the whole new tree (a main file and
// its snippets), and the host changes only once every one passed. A config whose plan
// could not be made fails here, before any write, since the tree cannot be complete
// without it. In check mode a config still waiting for the packages step's change
// (deferred) leaves the validators unrun, with a warning: neither its directory nor its
// checker is there yet.
func (r *run) validateTree(ctx context.Context, plans []configPlan) error {
	validators := treeValidators(plans)
	if len(validators) == 0 {
		return nil
	}
	var files []mountns.File
	var changed []string
	sensitive := false
	for _, cp := range plans {
		if cp.deferred {
			r.req.Warn("%s: the tree validators did not run: the config waits for the packages step's change (%v)", configStepName(cp.cfg), cp.err)
			return nil
		}
		// The validator reads every config of the tree, changed or not: any sensitive one
		// may be quoted.
		sensitive = sensitive || cp.cfg.Sensitive
		if cp.err != nil {
			r.res.FailedStep = configStepName(cp.cfg)
			return fmt.Errorf("%s: %w; the tree validators did not run and nothing was written", configStepName(cp.cfg), cp.err)
		}
		if !cp.plan.Changed() {
			continue
		}
		w := cp.plan.Want
		changed = append(changed, fmt.Sprintf("%s (%s)", cp.cfg.Name, cp.cfg.Path))
		if w.Present {
			files = append(files, mountns.File{Path: w.Path, Content: w.Content, Mode: w.Mode, UID: w.UID, GID: w.GID})
		}
	}
	if r.d.Tree == nil {
		r.res.FailedStep = configStepName(validators[0].cfg)
		return fmt.Errorf("%s: its tree validator cannot run here (no Tree); nothing was written", configStepName(validators[0].cfg))
	}
	for _, v := range validators {
		if err := r.runTree(ctx, v, files, changed, sensitive); err != nil {
			r.res.FailedStep = configStepName(v.cfg)
			return fmt.Errorf("%s: %w", configStepName(v.cfg), err)
		}
	}
	return nil
}

// runTree runs one tree validator under its config's timeout. Its output is the user's
// best hint, but it may quote a content it read: with a sensitive config in the service's
// tree (changed or not) it is withheld.
func (r *run) runTree(ctx context.Context, v configPlan, files []mountns.File, changed []string, sensitive bool) error {
	limit := v.cfg.limit
	if limit == 0 {
		limit = configTimeout
	}
	ctx, cancel := budget{limit: limit}.run(ctx)
	defer cancel()
	argv := v.cfg.Tree()
	what := fmt.Sprintf("the tree validator %q, with the new %s in place,", strings.Join(argv, " "), strings.Join(changed, ", "))
	res, err := r.d.Tree.Run(ctx, files, argv...)
	if errors.Is(err, mountns.ErrSetup) {
		return fmt.Errorf("%w: %s could not run: %w; nothing was written", configfile.ErrValidation, what, err)
	}
	if err != nil {
		return fmt.Errorf("%w: %s did not finish: %w; nothing was written", configfile.ErrValidation, what, err)
	}
	if res.ExitCode == 0 {
		return nil
	}
	out := res.Output()
	switch {
	case sensitive:
		out = "output hidden: sensitive"
	case out == "":
		out = "no output"
	}
	return fmt.Errorf("%w: %s refused them: exited %d: %s; nothing was written", configfile.ErrValidation, what, res.ExitCode, out)
}
