// Package nevra validates RPM package names, EPOCH:VERSION-RELEASE.ARCH and whole
// NAME-EPOCH:VERSION-RELEASE.ARCH strings as single command-line arguments. Everything a
// shell, a glob or an option parser could read as more than one plain name is refused, so
// a value can never become a pattern or a flag.
package nevra

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// EVRA is an exact package build: epoch, version, release and architecture.
type EVRA struct {
	Epoch   uint64
	Version string
	Release string
	Arch    string
}

// String is the canonical form, epoch always written: 0:1.0-1.noarch.
func (e EVRA) String() string {
	return fmt.Sprintf("%d:%s-%s.%s", e.Epoch, e.Version, e.Release, e.Arch)
}

// NEVRA is NAME-EPOCH:VERSION-RELEASE.ARCH, the form DNF's install-nevra takes.
func (e EVRA) NEVRA(name string) string { return name + "-" + e.String() }

// ErrInvalid is wrapped by every validation error.
var ErrInvalid = errors.New("invalid")

// ValidateName accepts an RPM NAME: letters, digits and . _ + -, not starting with - or .
func ValidateName(name string) error {
	if name == "" {
		return fmt.Errorf("%w: empty package name", ErrInvalid)
	}
	if len(name) > 255 {
		return fmt.Errorf("%w: package name longer than 255 characters", ErrInvalid)
	}
	if name[0] == '-' || name[0] == '.' {
		return fmt.Errorf("%w: package name %q starts with %q", ErrInvalid, name, name[:1])
	}
	for i, r := range name {
		if !isNameRune(r) {
			return fmt.Errorf("%w: package name %q has %s at position %d; allowed are letters, digits and . _ + -",
				ErrInvalid, printable(name), describeRune(r), i+1)
		}
	}
	return nil
}

func isNameRune(r rune) bool {
	return r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' ||
		r == '.' || r == '_' || r == '+' || r == '-'
}

// isVersionRune is the character set of RPM versions and releases (rpm also sorts ~ and ^).
func isVersionRune(r rune) bool {
	return r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' ||
		r == '.' || r == '_' || r == '+' || r == '~' || r == '^'
}

func isArchRune(r rune) bool {
	return r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_'
}

// ParseEVRA reads EPOCH:VERSION-RELEASE.ARCH with the epoch always written (0: for none).
func ParseEVRA(s string) (EVRA, error) {
	const form = "EPOCH:VERSION-RELEASE.ARCH such as 0:1.0-1.noarch"
	fail := func(why string) (EVRA, error) {
		return EVRA{}, fmt.Errorf("%w: %q is not %s: %s", ErrInvalid, printable(s), form, why)
	}
	ep, rest, ok := strings.Cut(s, ":")
	if !ok {
		return fail("the epoch is missing (write 0: for none)")
	}
	if ep == "" || strings.TrimLeft(ep, "0123456789") != "" {
		return fail("the epoch must be digits")
	}
	epoch, err := strconv.ParseUint(ep, 10, 32)
	if err != nil {
		return fail("the epoch is out of range")
	}
	ver, relArch, ok := strings.Cut(rest, "-")
	if !ok {
		return fail("the release is missing")
	}
	dot := strings.LastIndexByte(relArch, '.')
	if dot < 0 {
		return fail("the architecture is missing")
	}
	rel, arch := relArch[:dot], relArch[dot+1:]
	for _, part := range []struct {
		what, v string
		ok      func(rune) bool
	}{{"version", ver, isVersionRune}, {"release", rel, isVersionRune}, {"architecture", arch, isArchRune}} {
		if part.v == "" {
			return fail("the " + part.what + " is empty")
		}
		for _, r := range part.v {
			if !part.ok(r) {
				return fail(fmt.Sprintf("the %s has %s", part.what, describeRune(r)))
			}
		}
	}
	return EVRA{Epoch: epoch, Version: ver, Release: rel, Arch: arch}, nil
}

func describeRune(r rune) string {
	switch {
	case r == ' ' || r == '\t':
		return "whitespace"
	case r < 0x20 || r == 0x7f:
		return fmt.Sprintf("a control character (0x%02x)", r)
	case r > 0x7e:
		return fmt.Sprintf("a non-ASCII character (%U)", r)
	}
	return fmt.Sprintf("%q", r)
}

// printable keeps control characters out of messages.
func printable(s string) string {
	q := strconv.QuoteToASCII(s)
	return q[1 : len(q)-1]
}

// NEVRA is an exact package build with its name: NAME-EPOCH:VERSION-RELEASE.ARCH.
type NEVRA struct {
	Name string
	EVRA EVRA
}

// String is the canonical form: nginx-2:1.26.3-1.el10.x86_64.
func (n NEVRA) String() string { return n.EVRA.NEVRA(n.Name) }

// ParseNEVRA reads NAME-EPOCH:VERSION-RELEASE.ARCH with the epoch always written. A name
// may contain '-' but never ':', and an epoch is digits, so the name ends at the last '-'
// before the only ':'. Only the canonical form is accepted (no leading zeros in the epoch):
// one build has one spelling, so it can key a record or name a file.
func ParseNEVRA(s string) (NEVRA, error) {
	const form = "NAME-EPOCH:VERSION-RELEASE.ARCH"
	colon := strings.IndexByte(s, ':')
	if colon < 0 {
		return NEVRA{}, fmt.Errorf("%w: build %+q is not %s: the epoch is missing", ErrInvalid, s, form)
	}
	dash := strings.LastIndexByte(s[:colon], '-')
	if dash < 0 {
		return NEVRA{}, fmt.Errorf("%w: build %+q is not %s: no '-' before the epoch", ErrInvalid, s, form)
	}
	name := s[:dash]
	if err := ValidateName(name); err != nil {
		return NEVRA{}, fmt.Errorf("build %+q: %w", s, err)
	}
	evra, err := ParseEVRA(s[dash+1:])
	if err != nil {
		return NEVRA{}, fmt.Errorf("build %+q: %w", s, err)
	}
	n := NEVRA{Name: name, EVRA: evra}
	if n.String() != s {
		return NEVRA{}, fmt.Errorf("%w: build %+q is not in canonical form %+q", ErrInvalid, s, n.String())
	}
	return n, nil
}
