package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// buildBulk makes n tiny noarch packages with one rpmbuild run (one spec, n subpackages).
func buildBulk(dir string, n int) error {
	var spec strings.Builder
	spec.WriteString("Name: bulk\nVersion: 1.0\nRelease: 1\nSummary: generated\nLicense: MIT\nBuildArch: noarch\n%description\ngenerated\n%files\n")
	for i := 0; i < n-1; i++ {
		fmt.Fprintf(&spec, "%%package -n bulk%04d\nSummary: generated %d\n%%description -n bulk%04d\ngenerated\n%%files -n bulk%04d\n", i, i, i, i)
	}
	if err := rpmbuildSpec(dir, "bulk", spec.String()); err != nil {
		return err
	}
	if out, err := exec.Command("createrepo_c", "-q", dir).CombinedOutput(); err != nil {
		return fmt.Errorf("createrepo_c bulk: %w\n%s", err, out)
	}
	return nil
}

// rpmbuildSpec builds the binary packages of spec (named name.spec) into dir/ARCH, with
// each "MACRO VALUE" of defines, in a build tree beside dir that it removes afterwards.
func rpmbuildSpec(dir, name, spec string, defines ...string) error {
	top := dir + ".top"
	if err := os.MkdirAll(top, 0o755); err != nil {
		return err
	}
	defer os.RemoveAll(top)
	specPath := filepath.Join(top, name+".spec")
	if err := os.WriteFile(specPath, []byte(spec), 0o644); err != nil {
		return err
	}
	args := []string{"-bb", "--define", "_topdir " + top, "--define", "_rpmdir " + dir}
	for _, d := range defines {
		args = append(args, "--define", d)
	}
	if out, err := exec.Command("rpmbuild", append(args, specPath)...).CombinedOutput(); err != nil {
		return fmt.Errorf("rpmbuild %s: %w\n%s", name, err, tailLines(string(out), 20))
	}
	return nil
}
