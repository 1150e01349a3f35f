// Package unitname validates systemd unit names as single command-line arguments.
package unitname

import (
	"fmt"
	"strings"
)

var unitSuffixes = []string{".service", ".socket", ".timer", ".target", ".path", ".mount", ".automount", ".swap", ".slice", ".scope", ".device"}

// Normalize validates a unit name as one argument and adds ".service" when no unit
// type is given, as systemctl does.
func Normalize(name string) (string, error) {
	if name == "" {
		return "", fmt.Errorf("unit: empty name")
	}
	if name[0] == '-' || name[0] == '.' {
		return "", fmt.Errorf("unit: %q starts with %q", name, name[:1])
	}
	for i, r := range name {
		ok := r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune(":_.\\-@", r)
		if !ok {
			return "", fmt.Errorf("unit: %q has a character systemd does not allow in unit names at position %d (allowed: letters, digits and : _ . \\ - @)", strings.ToValidUTF8(name, "?"), i+1)
		}
	}
	hasSuffix := false
	for _, s := range unitSuffixes {
		if strings.HasSuffix(name, s) && len(name) > len(s) {
			hasSuffix = true
		}
	}
	if !hasSuffix {
		name += ".service"
	}
	if len(name) > 255 {
		return "", fmt.Errorf("unit: name longer than 255 characters")
	}
	if at := strings.IndexByte(name, '@'); at >= 0 {
		if at == 0 {
			return "", fmt.Errorf("unit: %q has no name before @", name)
		}
		if name[at+1] == '.' {
			return "", fmt.Errorf("unit: %q is a template; give an instance such as %s", name, name[:at+1]+"NAME"+name[at+1:])
		}
	}
	return name, nil
}
