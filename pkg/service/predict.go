package service

import (
	"context"

	"github.com/richt/services/pkg/override"
	"github.com/richt/services/pkg/rpmexact"
	"github.com/richt/services/pkg/runner"
)

// Predictor is the Prediction of the target: the modules' own Observe and Decide.
type Predictor struct {
	Runner runner.Runner
	// Root is the filesystem root unit files are read from ("" for /).
	Root string
}

// PackagesChange implements Prediction.
func (p Predictor) PackagesChange(ctx context.Context, packages []any) (bool, error) {
	return rpmexact.PredictChange(ctx, p.Runner, map[string]any{"packages": packages})
}

// FileChanges implements Prediction.
func (p Predictor) FileChanges(_ context.Context, file map[string]any) (bool, error) {
	return override.PredictChange(p.Root, file)
}
