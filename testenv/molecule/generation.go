package molecule

import (
	"fmt"
	"regexp"
	"strings"
)

// Generation is the testenv target standing in for a platform's image.
type Generation struct {
	// EL is the Enterprise Linux major version the image names (9, 10), 0 when the target
	// is TESTENV_IMAGE's or an image given as it is.
	EL int
	// Suite is the Debian suite of testenv's built image; empty when Image is used as it is.
	Suite string
	// Image is an image used as it is (TESTENV_IMAGE, or a richt-testenv image named in
	// molecule.yml).
	Image string
}

// String says which target stands in for what, for the run's log.
func (g Generation) String() string {
	switch {
	case g.Image != "" && g.EL != 0:
		return fmt.Sprintf("%s (TESTENV_IMAGE) for EL %d", g.Image, g.EL)
	case g.Image != "":
		return g.Image + " as it is"
	}
	return fmt.Sprintf("testenv's Debian %s target (systemd %s, DNF %s) for EL %d", g.Suite, suiteSystemd[g.Suite], suiteDNF[g.Suite], g.EL)
}

var (
	suiteSystemd = map[string]string{"bookworm": "252", "trixie": "257"}
	suiteDNF     = map[string]string{"bookworm": "4.14", "trixie": "4.23"}
	// elSuite is the Debian suite whose systemd and DNF match an EL major version
	// (docs/testenv.md: bookworm's systemd 252 and DNF 4.14 are EL 9's; trixie's 257 and
	// 4.23 are EL 10's).
	elSuite = map[int]string{9: "bookworm", 10: "trixie"}
)

// elImage finds an EL family name and the major version after it: almalinux:9,
// rockylinux/rockylinux:10-ubi-init, geerlingguy/docker-rockylinux9-ansible,
// registry.access.redhat.com/ubi9/ubi-init, quay.io/centos/centos:stream9,
// oraclelinux:9.
var elImage = regexp.MustCompile(`(?:almalinux|alma|rockylinux|rocky|rhel|redhat|ubi|centos-stream|centos|stream|oraclelinux|oracle|el)[-_:/.]?(?:stream)?[-_:]?(\d{1,2})(?:\b|[^0-9])`)

// elFamily says whether the image's name is of the EL family at all.
var elFamily = regexp.MustCompile(`almalinux|alma|rocky|rhel|redhat|ubi\d|centos|oraclelinux|oracle`)

// GenerationOf maps a platform's image to the target standing in for it. testenvImage is
// TESTENV_IMAGE (used for every platform when set, for an EL image of any generation).
// An image naming no EL generation, or one with no target, is refused by name.
func GenerationOf(image, testenvImage string) (Generation, error) {
	low := strings.ToLower(image)
	if strings.HasPrefix(low, "richt-testenv:") {
		return Generation{Image: image}, nil
	}
	el := 0
	if elFamily.MatchString(low) {
		// The version is the first one after a family name, in the image's last path
		// components (the registry host may carry digits of its own).
		for _, m := range elImage.FindAllStringSubmatch(low+" ", -1) {
			if v := atoi(m[1]); v > 0 {
				el = v
				break
			}
		}
	}
	if el == 0 {
		return Generation{}, fmt.Errorf("image %q: names no EL generation (AlmaLinux, Rocky Linux, RHEL/UBI, CentOS Stream or Oracle Linux 9 or 10), so no testenv target can stand in for it", image)
	}
	if testenvImage != "" {
		return Generation{EL: el, Image: testenvImage}, nil
	}
	suite, ok := elSuite[el]
	if !ok {
		return Generation{}, fmt.Errorf("image %q: EL %d has no testenv target (EL 9 → Debian bookworm, EL 10 → Debian trixie; or set TESTENV_IMAGE)", image, el)
	}
	return Generation{EL: el, Suite: suite}, nil
}

func atoi(s string) int {
	n := 0
	for _, r := range s {
		n = n*10 + int(r-'0')
	}
	return n
}
