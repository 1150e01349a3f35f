// Package modules_test checks properties the shipped binary must have on every
// architecture: statically linked, for the right machine, of bounded size, free of
// test-only dependencies, and able to run each module by the names Ansible gives it.
package modules_test

import (
	"debug/elf"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/richt/services/modules"
	"github.com/richt/services/testenv"
)

// maxSize bounds one architecture's multi-call binary: four of them, compressed, must stay
// well inside Galaxy's 20 MB collection limit (docs/fastpath.md has the figures).
const maxSize = 6 << 20

// machines are the architectures EL ships, with the ELF machine each build must declare.
var machines = map[string]elf.Machine{
	"amd64": elf.EM_X86_64, "arm64": elf.EM_AARCH64, "ppc64le": elf.EM_PPC64, "s390x": elf.EM_S390,
}

func TestBinariesAreStaticAndSmall(t *testing.T) {
	require.NotEmpty(t, modules.Names(), "no modules/*/module.go found")
	for goarch, machine := range machines {
		t.Run(goarch, func(t *testing.T) {
			bin := testenv.BuildModule(t, modules.Command, testenv.Arch(goarch))
			fi, err := os.Stat(bin)
			require.NoError(t, err)
			assert.Less(t, fi.Size(), int64(maxSize), "%s build is %d bytes", goarch, fi.Size())
			f, err := elf.Open(bin)
			require.NoError(t, err)
			defer f.Close()
			assert.Equal(t, machine, f.Machine)
			for _, p := range f.Progs {
				assert.NotEqual(t, elf.PT_INTERP, p.Type, "%s build has a dynamic loader: not statically linked", goarch)
			}
			libs, _ := f.ImportedLibraries()
			assert.Empty(t, libs, "%s build links shared libraries", goarch)
			t.Logf("%s: %d bytes, static", goarch, fi.Size())
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
	cmd := exec.Command("go", "list", "-deps", modules.Command)
	cmd.Dir = ".."
	out, err := cmd.Output()
	require.NoError(t, err)
	for _, dep := range strings.Fields(string(out)) {
		for _, f := range forbidden {
			assert.False(t, strings.HasPrefix(dep, f), "%s imports %s", modules.Command, dep)
		}
	}
}

// Every module answers under each name a path gives the binary: its own (a link), Ansible's
// upload name, Mitogen's, and as the first argument (the fast path's cache); anything else
// is a failed result that names the modules.
func TestMultiCallRunsEveryModuleByItsNames(t *testing.T) {
	bin := testenv.BuildModule(t, modules.Command)
	dir := t.TempDir()
	for _, name := range modules.Names() {
		for _, file := range []string{name, "AnsiballZ_" + name, "ansible_module_" + name} {
			link := filepath.Join(dir, file)
			require.NoError(t, os.Symlink(bin, link))
			out, err := exec.Command(link, "--doc").Output()
			require.NoError(t, err, file)
			var doc struct{ Module string }
			require.NoError(t, json.Unmarshal(out, &doc), file)
			assert.Equal(t, name, doc.Module, file)
		}
		out, err := exec.Command(bin, name, "--version").Output()
		require.NoError(t, err)
		assert.Equal(t, name+" dev\n", string(out))
	}
	out, err := exec.Command(bin, "--version").Output()
	require.NoError(t, err)
	assert.Contains(t, string(out), strings.Join(modules.Names(), " "))

	out, _ = exec.Command(bin, "no_such_module", "args.json").Output()
	var res map[string]any
	require.NoError(t, json.Unmarshal(out, &res), string(out))
	assert.Equal(t, true, res["failed"])
	assert.Contains(t, res["msg"], strings.Join(modules.Names(), ", "))
}
