package service

import (
	"context"

	"github.com/richt/services/pkg/override"
	"github.com/richt/services/pkg/rpmexact"
)

// Predictor is the Prediction of the target: the modules' own Observe and Decide.
type Predictor struct {
	// Packages observes as rpm_exact does (its query memo, else rpm).
	Packages rpmexact.Deps
	// Root is the filesystem root unit files are read from ("" for /).
	Root string
}

// PackagesChange implements Prediction.
func (p Predictor) PackagesChange(ctx context.Context, packages []any) (bool, error) {
	return p.Packages.PredictChange(ctx, map[string]any{"packages": packages})
}

// FileChanges implements Prediction.
func (p Predictor) FileChanges(_ context.Context, file map[string]any) (bool, error) {
	return override.PredictChange(p.Root, file)
}
