package unit_override_test

import (
	"os"
	"testing"

	"github.com/richt/services/testenv"
)

// TestMain gives the package's tests a pool of pre-booted targets (docs/testenv.md).
func TestMain(m *testing.M) { os.Exit(testenv.RunWithPool(m)) }
