// Package modules_test checks properties every module binary must have: statically
// linked, under 4 MiB, and free of test-only dependencies.
package modules_test

import (
	"debug/elf"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/richt/services/modules"
	"github.com/richt/services/testenv"
)

const maxSize = 4 << 20

func TestBinariesAreStaticAndSmall(t *testing.T) {
	require.NotEmpty(t, modules.Names(), "no modules/*/main.go found")
	for _, m := range modules.Names() {
		t.Run(m, func(t *testing.T) {
			bin := testenv.BuildModule(t, modules.Package(m))
			fi, err := os.Stat(bin)
			require.NoError(t, err)
			assert.Less(t, fi.Size(), int64(maxSize), "%s is %d bytes", m, fi.Size())
			f, err := elf.Open(bin)
			require.NoError(t, err)
			defer f.Close()
			for _, p := range f.Progs {
				assert.NotEqual(t, elf.PT_INTERP, p.Type, "%s has a dynamic loader: not statically linked", m)
			}
			libs, _ := f.ImportedLibraries()
			assert.Empty(t, libs, "%s links shared libraries", m)
			t.Logf("%s: %d bytes, static", m, fi.Size())
		})
	}
}

// TestBinariesImportNoTestCode keeps the test framework, its container stack and large
// optional libraries out of what runs on targets.
func TestBinariesImportNoTestCode(t *testing.T) {
	forbidden := []string{"github.com/richt/services/testenv", "github.com/testcontainers/", "github.com/stretchr/", "github.com/goccy/go-json",
		// net/http (and crypto/tls behind it) would double systemd_lifecycle: pkg/health speaks
		// its one HTTP request by hand.
		"net/http", "crypto/tls"}
	for _, m := range modules.Names() {
		out, err := exec.Command("go", "list", "-deps", "./"+m).Output()
		require.NoError(t, err)
		for _, dep := range strings.Fields(string(out)) {
			for _, f := range forbidden {
				assert.False(t, strings.HasPrefix(dep, f), "%s imports %s", m, dep)
			}
		}
	}
}
