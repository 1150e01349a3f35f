package service

import (
	"context"

	"github.com/richt/services/pkg/rpmexact"
)

// Predictor is the Prediction of the target: rpm_exact's own Plan.
type Predictor struct {
	// Packages plans as rpm_exact does (its query memo, else rpm; its manager check).
	Packages rpmexact.Deps
}

// PlanPackages implements Prediction.
func (p Predictor) PlanPackages(ctx context.Context, w rpmexact.Want) (rpmexact.Plan, error) {
	return p.Packages.Plan(ctx, w)
}
