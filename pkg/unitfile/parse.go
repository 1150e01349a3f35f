package unitfile

import (
	"bytes"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/coreos/go-systemd/v22/unit"
)

// ParseError is unparsable unit file content. Its message names the line and the kind
// of problem, never the line's text.
type ParseError struct {
	Line   int
	Reason string
}

// Error names the line and the problem, never the line's text.
func (e *ParseError) Error() string { return fmt.Sprintf("line %d: %s", e.Line, e.Reason) }

// Parse returns the options of a unit file in file order, or a *ParseError.
func Parse(content []byte) ([]*unit.UnitOption, error) {
	opts, err := unit.DeserializeOptions(bytes.NewReader(content))
	if err == nil {
		if line, ok := optionBeforeSection(content); ok {
			return nil, &ParseError{Line: line, Reason: "an assignment before the first [Section] header"}
		}
		return opts, nil
	}
	lines := strings.SplitAfter(string(content), "\n")
	// The smallest failing prefix ends at the failing line: a prefix that fails keeps
	// failing as lines are added.
	i := sort.Search(len(lines), func(i int) bool {
		_, e := unit.DeserializeOptions(strings.NewReader(strings.Join(lines[:i+1], "")))
		return e != nil
	})
	line := i + 1
	if i >= len(lines) {
		line = len(lines)
	}
	return nil, &ParseError{Line: line, Reason: reason(err)}
}

// reason describes the parser's error without its quoted text.
func reason(err error) string {
	msg := err.Error()
	switch {
	case errors.Is(err, unit.ErrLineTooLong):
		return fmt.Sprintf("longer than systemd's limit of %d bytes", unit.SYSTEMD_LINE_MAX)
	case strings.Contains(msg, "garbage after section name"):
		return "text after a [Section] header"
	case strings.Contains(msg, "end of section"):
		return "a [Section] header without its closing ]"
	case strings.Contains(msg, "newline encountered while parsing option name"):
		return "neither a [Section] header, a Key=value assignment nor a comment"
	case strings.Contains(msg, "option before section"):
		return "an assignment before the first [Section] header"
	}
	return "not valid unit file syntax"
}

// optionBeforeSection finds an assignment above the first section header, which the
// parser silently skips but systemd rejects.
func optionBeforeSection(content []byte) (int, bool) {
	for n, l := range strings.Split(string(content), "\n") {
		t := strings.TrimSpace(l)
		switch {
		case t == "" || t[0] == '#' || t[0] == ';':
		case t[0] == '[':
			return 0, false
		default:
			return n + 1, true
		}
	}
	return 0, false
}
