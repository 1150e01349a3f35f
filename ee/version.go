package ee

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// clause is one comparison of a version specifier.
type clause struct {
	op      string
	version []int
	prefix  bool // ==X.Y.*
}

var clausePattern = regexp.MustCompile(`^(~=|==|!=|>=|<=|>|<)\s*(\d+(?:\.\d+)*)(\.\*)?$`)

// parseSpec parses a comma-separated version specifier ("", ">=2.19.0,<2.20.0").
func parseSpec(spec string) ([]clause, error) {
	var out []clause
	if strings.TrimSpace(spec) == "" {
		return nil, nil
	}
	for _, part := range strings.Split(spec, ",") {
		m := clausePattern.FindStringSubmatch(strings.TrimSpace(part))
		if m == nil {
			return nil, fmt.Errorf("version specifier %q: %q is not OP X.Y.Z (ops ~= == != >= <= > <)", spec, part)
		}
		v, err := numbers(m[2])
		if err != nil {
			return nil, fmt.Errorf("version specifier %q: %w", spec, err)
		}
		c := clause{op: m[1], version: v, prefix: m[3] != ""}
		if c.prefix && c.op != "==" && c.op != "!=" {
			return nil, fmt.Errorf("version specifier %q: .* only with == or !=", spec)
		}
		if c.op == "~=" && len(c.version) < 2 {
			return nil, fmt.Errorf("version specifier %q: ~= needs at least X.Y", spec)
		}
		out = append(out, c)
	}
	return out, nil
}

// numbers reads a dotted version ("2.19.0"); a part too large for an int is an error, not
// a silent 0 that would turn >=99999999999999999999 into >=0.
func numbers(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ".") {
		n, err := strconv.Atoi(f)
		if err != nil {
			return nil, fmt.Errorf("%s is out of range", f)
		}
		out = append(out, n)
	}
	return out, nil
}

var upstreamPattern = regexp.MustCompile(`^\d+(?:\.\d+)*`)

// upstreamVersion is the numeric upstream part of a Debian version: "1:2.19.11-1+b1" →
// [2 19 11].
func upstreamVersion(deb string) ([]int, error) {
	v := deb
	if _, after, ok := strings.Cut(v, ":"); ok {
		v = after
	}
	if i := strings.LastIndex(v, "-"); i > 0 {
		v = v[:i]
	}
	m := upstreamPattern.FindString(v)
	if m == "" {
		return nil, fmt.Errorf("Debian version %q has no numeric upstream version", deb)
	}
	n, err := numbers(m)
	if err != nil {
		return nil, fmt.Errorf("Debian version %q: %w", deb, err)
	}
	return n, nil
}

func compare(a, b []int) int {
	for i := 0; i < max(len(a), len(b)); i++ {
		x, y := 0, 0
		if i < len(a) {
			x = a[i]
		}
		if i < len(b) {
			y = b[i]
		}
		if x != y {
			if x < y {
				return -1
			}
			return 1
		}
	}
	return 0
}

func hasPrefix(v, p []int) bool {
	for i, n := range p {
		if i >= len(v) || v[i] != n {
			return false
		}
	}
	return true
}

// Satisfies tells whether a Debian package version meets a version specifier of the
// definition.
func Satisfies(debVersion, spec string) (bool, error) {
	clauses, err := parseSpec(spec)
	if err != nil {
		return false, err
	}
	v, err := upstreamVersion(debVersion)
	if err != nil {
		return false, err
	}
	for _, c := range clauses {
		cmp := compare(v, c.version)
		ok := false
		switch c.op {
		case "==":
			ok = cmp == 0 || (c.prefix && hasPrefix(v, c.version))
		case "!=":
			ok = cmp != 0 && !(c.prefix && hasPrefix(v, c.version))
		case ">=":
			ok = cmp >= 0
		case "<=":
			ok = cmp <= 0
		case ">":
			ok = cmp > 0
		case "<":
			ok = cmp < 0
		case "~=":
			ok = cmp >= 0 && hasPrefix(v, c.version[:len(c.version)-1])
		}
		if !ok {
			return false, nil
		}
	}
	return true, nil
}
