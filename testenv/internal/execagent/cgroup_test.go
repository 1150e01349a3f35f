package main

import (
	"os"
	"path/filepath"
	"testing"
)

func TestUnifiedCgroup(t *testing.T) {
	for _, c := range []struct{ name, content, want string }{
		{"hybrid", "9:name=systemd:/docker/abc\n1:cpu:/docker/abc\n0::/docker/abc/init.scope\n", "/docker/abc/init.scope"},
		{"unified only", "0::/\n", "/"},
		{"legacy only", "2:cpu:/x\n1:name=systemd:/x\n", ""},
		{"empty", "", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := filepath.Join(t.TempDir(), "cgroup")
			if err := os.WriteFile(f, []byte(c.content), 0o644); err != nil {
				t.Fatal(err)
			}
			got, err := unifiedCgroup(f)
			if err != nil || got != c.want {
				t.Fatalf("unifiedCgroup = %q, %v; want %q", got, err, c.want)
			}
		})
	}
}
