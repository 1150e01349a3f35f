package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/richt/services/pkg/docgen"
)

// The checked-in doc stubs document exactly the parameters each module's Spec declares,
// field by field as a YAML parser reads them, and the stubs and runtime.yml are what
// gendoc writes.
func TestCheckedInFilesAreGenerated(t *testing.T) {
	root := filepath.Join("..", "..")
	files, err := Render(root)
	require.NoError(t, err)
	for _, f := range files {
		t.Run(f.Path, func(t *testing.T) {
			data, err := os.ReadFile(filepath.Join(root, f.Path))
			require.NoError(t, err)
			if f.Spec != nil {
				documented, err := docgen.ParseOptions(string(data))
				require.NoError(t, err)
				assert.Empty(t, docgen.Compare(documented, f.Spec.Options),
					"%s documents other options than modules/%s declares; run %s", f.Path, f.Spec.Module, Regenerate)
			}
			assert.Equal(t, f.Content, string(data), "%s is out of date; run %s", f.Path, Regenerate)
		})
	}
}
