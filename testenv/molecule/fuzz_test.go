package molecule

import (
	"strings"
	"testing"
)

// FuzzParse: molecule.yml is outside input. Parse never panics, and what it accepts has
// platforms with names and images and only known actions in its sequences.
func FuzzParse(f *testing.F) {
	f.Add(docsScenario)
	f.Add("platforms: [{name: a, image: almalinux:10}]\nricht: {upgrade: {var: v, from: 1, to: 2, expect: {a: restarted}}}\n")
	f.Add("platforms: [{name: a, image: x}]\nscenario: {test_sequence: [create, destroy]}\n")
	f.Add("richt: {packages: [{name: p, version: '1', files: {/a: {content: x, mode: '0755'}}}]}\nplatforms: [{name: a, image: b}]\n")
	f.Add("platforms: &a [{name: a, image: b}]\nx: *a\n")
	f.Add("")
	f.Fuzz(func(t *testing.T, text string) {
		c, err := Parse(strings.NewReader(ExpandEnv(text, func(string) string { return "9" })))
		if err != nil {
			return
		}
		if len(c.Platforms) == 0 {
			t.Fatal("accepted without platforms")
		}
		for _, p := range c.Platforms {
			if !validHostName(p.Name) || p.Image == "" {
				t.Fatalf("accepted platform %+v", p)
			}
		}
		for _, cmd := range []string{"test", "create", "converge", "destroy", "check"} {
			for _, a := range c.Sequence(cmd) {
				if !knownActions[a] {
					t.Fatalf("accepted action %q", a)
				}
			}
		}
		if _, err := c.Richt.TestenvPackages(); err != nil {
			return
		}
	})
}

// FuzzPytestSummary: pytest's output is read back into a failure's message. What it
// picks is lines of the output (or the closing count cut out of one), never more of them
// than the output has.
func FuzzPytestSummary(f *testing.F) {
	f.Add(pytestFailure)
	f.Add("=== 1 error in 0.10s ===\nERROR x\n")
	f.Add("FAILED \r\n== in failed ==")
	f.Fuzz(func(t *testing.T, out string) {
		sum := pytestSummary(out)
		if sum == "" {
			return
		}
		lines := strings.Split(sum, "\n")
		if len(lines) > strings.Count(out, "\n")+1 {
			t.Fatalf("%d summary lines from %q", len(lines), out)
		}
		for _, l := range lines {
			if !strings.Contains(out, l) {
				t.Fatalf("summary line %q is not in the output", l)
			}
		}
	})
}
