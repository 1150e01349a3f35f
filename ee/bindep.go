package ee

import (
	"fmt"
	"strings"
	"unicode"
)

// addBindep adds the packages of bindep lines that apply to the image; field names line i
// in errors.
func (r *Requirements) addBindep(lines []string, field func(i int) string) error {
	for i, l := range lines {
		pkg, ok, err := bindepDpkg(l)
		if err != nil {
			return fmt.Errorf("%s: %w", field(i), err)
		}
		if ok {
			if err := r.add(field(i), pkg, ""); err != nil {
				return err
			}
		}
	}
	return nil
}

// bindepDpkg reads one bindep line and returns the package when the line applies to the
// image, as `bindep` decides it with no profile requested (ansible-builder's final stage):
// a dpkg platform (no platform selector, or one naming dpkg or debian and none excluding
// it) and the default profile (no profile selector, or one naming default and none
// excluding it). A line for another profile (test, compile, doc) is left out.
func bindepDpkg(line string) (string, bool, error) {
	// bindep splits on any whitespace, tabs included.
	name, rest := strings.TrimSpace(line), ""
	if i := strings.IndexFunc(name, unicode.IsSpace); i >= 0 {
		name, rest = name[:i], strings.TrimSpace(name[i:])
	}
	if name == "" {
		return "", false, fmt.Errorf("%q: no package name", line)
	}
	if rest == "" {
		return name, true, nil
	}
	if !strings.HasPrefix(rest, "[") || !strings.HasSuffix(rest, "]") {
		return "", false, fmt.Errorf("%q: only a [selector] list may follow the name here (no version constraints)", line)
	}
	platforms, dpkg := 0, false
	profiles, defaultProfile := 0, false
	for _, sel := range strings.Fields(strings.Trim(rest, "[]")) {
		neg := strings.HasPrefix(sel, "!")
		sel = strings.TrimPrefix(sel, "!")
		p, isPlatform := strings.CutPrefix(sel, "platform:")
		switch {
		case isPlatform && neg:
			if p == "dpkg" || p == "debian" {
				return "", false, nil
			}
		case isPlatform:
			platforms++
			dpkg = dpkg || p == "dpkg" || p == "debian"
		case neg:
			if sel == "default" {
				return "", false, nil
			}
		default:
			profiles++
			defaultProfile = defaultProfile || sel == "default"
		}
	}
	return name, (platforms == 0 || dpkg) && (profiles == 0 || defaultProfile), nil
}
