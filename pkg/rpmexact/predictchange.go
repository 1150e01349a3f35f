package rpmexact

import (
	"context"
	"fmt"
)

// PredictChange answers, reading only (the remembered rpm query while the database is
// unchanged, else one rpm query; no DNF), whether a run with these arguments would run a
// transaction: the decision a real run makes first. The service module uses it to record
// the reactions a package change will owe before it changes anything.
func (d Deps) PredictChange(ctx context.Context, args map[string]any) (bool, error) {
	_, parsed, err := Spec().ValidateParse(args)
	if err != nil {
		return false, err
	}
	task, ok := parsed.(Task)
	if !ok {
		return false, fmt.Errorf("internal error: rpm_exact's Spec parsed %T, not a Task", parsed)
	}
	w := task.Want
	obs, err := d.observe(ctx, w.Names())
	if err != nil {
		return false, err
	}
	plan, err := Decide(w, obs.have)
	if err != nil {
		return false, err
	}
	return plan.Changes(), nil
}
