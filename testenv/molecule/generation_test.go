package molecule

import (
	"strings"
	"testing"
)

func TestGenerationOf(t *testing.T) {
	for _, tc := range []struct {
		image string
		suite string
		el    int
	}{
		{"almalinux:9", "bookworm", 9},
		{"almalinux:10", "trixie", 10},
		{"docker.io/almalinux/9-init", "bookworm", 9},
		{"quay.io/almalinuxorg/almalinux:10", "trixie", 10},
		{"rockylinux/rockylinux:9-ubi-init", "bookworm", 9},
		{"rockylinux:9.3", "bookworm", 9},
		{"docker.io/geerlingguy/docker-rockylinux9-ansible:latest", "bookworm", 9},
		{"geerlingguy/docker-rockylinux10-ansible", "trixie", 10},
		{"registry.access.redhat.com/ubi9/ubi-init", "bookworm", 9},
		{"registry.access.redhat.com/ubi10-init:latest", "trixie", 10},
		{"quay.io/centos/centos:stream9", "bookworm", 9},
		{"quay.io/centos/centos:stream10", "trixie", 10},
		{"oraclelinux:9", "bookworm", 9},
		{"registry.example.com:5000/rhel9/rhel-init", "bookworm", 9},
	} {
		g, err := GenerationOf(tc.image, "")
		if err != nil || g.Suite != tc.suite || g.EL != tc.el || g.Image != "" {
			t.Errorf("GenerationOf(%q) = %+v, %v; want EL %d on %s", tc.image, g, err, tc.el, tc.suite)
		}
		if !strings.Contains(g.String(), tc.suite) {
			t.Errorf("%q: String() = %q does not name %s", tc.image, g.String(), tc.suite)
		}
	}
}

func TestGenerationOfTestenvImage(t *testing.T) {
	g, err := GenerationOf("almalinux:9", "my/systemd:1")
	if err != nil || g.Image != "my/systemd:1" || g.EL != 9 || g.Suite != "" {
		t.Fatalf("TESTENV_IMAGE: %+v %v", g, err)
	}
	if !strings.Contains(g.String(), "TESTENV_IMAGE") {
		t.Errorf("String() = %q", g.String())
	}
	g, err = GenerationOf("richt-testenv:trixie-abc", "")
	if err != nil || g.Image != "richt-testenv:trixie-abc" {
		t.Fatalf("a testenv image is used as it is: %+v %v", g, err)
	}
}

func TestGenerationOfRefuses(t *testing.T) {
	for image, want := range map[string]string{
		"ubuntu:24.04":                  "names no EL generation",
		"debian:bookworm":               "names no EL generation",
		"geerlingguy/docker-ubuntu2404": "names no EL generation",
		"almalinux:8":                   "EL 8 has no testenv target",
		"centos:7":                      "EL 7 has no testenv target",
		"almalinux":                     "names no EL generation",
	} {
		if _, err := GenerationOf(image, ""); err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), image) {
			t.Errorf("GenerationOf(%q) = %v, want %q naming the image", image, err, want)
		}
	}
	if _, err := GenerationOf("ubuntu:24.04", "my/systemd:1"); err == nil {
		t.Error("TESTENV_IMAGE does not make a non-EL image acceptable")
	}
}
