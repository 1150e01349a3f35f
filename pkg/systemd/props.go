package systemd

import (
	"fmt"
	"strconv"
	"strings"
)

// Props is what one observation of a unit returns.
type Props struct {
	ID               string
	LoadState        string
	ActiveState      string
	SubState         string
	UnitFileState    string
	NeedDaemonReload bool
	FragmentPath     string
	DropInPaths      []string
	MainPID          int
	InvocationID     string
	// ActiveEnterMono is when the unit last became active (CLOCK_MONOTONIC, µs; 0 never):
	// a reaction recorded before it has already been served by that (re)start.
	ActiveEnterMono uint64
	// CanReload is the manager's own view of reload capability; it disagrees with the
	// files on disk when the manager has not loaded a change.
	CanReload bool
}

// Properties are asked for by name, every one of them every time.
var Properties = []string{"Id", "LoadState", "ActiveState", "SubState", "UnitFileState", "NeedDaemonReload", "FragmentPath", "DropInPaths", "MainPID", "InvocationID", "CanReload", "ActiveEnterTimestampMonotonic"}

var (
	loadStates   = set("loaded", "not-found", "bad-setting", "error", "masked", "stub", "merged")
	activeStates = set("active", "reloading", "inactive", "failed", "activating", "deactivating", "maintenance", "refreshing")
)

func set(v ...string) map[string]bool {
	m := map[string]bool{}
	for _, s := range v {
		m[s] = true
	}
	return m
}

// ParseShow reads `systemctl show --property=...` output strictly: every property in
// Properties exactly once, nothing else, each value well-formed. A missing, duplicated,
// malformed or truncated answer is an error, never a default.
func ParseShow(out string) (Props, error) {
	if !strings.HasSuffix(out, "\n") {
		return Props{}, fmt.Errorf("systemctl show: truncated answer (no final newline)")
	}
	seen := map[string]string{}
	for _, line := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
		k, v, ok := strings.Cut(line, "=")
		if !ok {
			return Props{}, fmt.Errorf("systemctl show: malformed line %q", line)
		}
		if _, dup := seen[k]; dup {
			return Props{}, fmt.Errorf("systemctl show: property %s twice", k)
		}
		seen[k] = v
	}
	return propsFrom(seen)
}

func propsFrom(m map[string]string) (Props, error) {
	for _, k := range Properties {
		if _, ok := m[k]; !ok {
			return Props{}, fmt.Errorf("systemd did not report property %s", k)
		}
	}
	if len(m) != len(Properties) {
		for k := range m {
			if !contains(Properties, k) {
				return Props{}, fmt.Errorf("systemd reported unrequested property %q", k)
			}
		}
	}
	p := Props{
		ID: m["Id"], LoadState: m["LoadState"], ActiveState: m["ActiveState"], SubState: m["SubState"],
		UnitFileState: m["UnitFileState"], FragmentPath: m["FragmentPath"], InvocationID: m["InvocationID"],
	}
	if p.ID == "" {
		return Props{}, fmt.Errorf("systemd reported an empty Id")
	}
	if !loadStates[p.LoadState] {
		return Props{}, fmt.Errorf("systemd reported unknown LoadState %q", p.LoadState)
	}
	if !activeStates[p.ActiveState] {
		return Props{}, fmt.Errorf("systemd reported unknown ActiveState %q", p.ActiveState)
	}
	if p.SubState == "" {
		return Props{}, fmt.Errorf("systemd reported an empty SubState")
	}
	for _, b := range []struct {
		key string
		dst *bool
	}{{"NeedDaemonReload", &p.NeedDaemonReload}, {"CanReload", &p.CanReload}} {
		switch m[b.key] {
		case "yes":
			*b.dst = true
		case "no":
		default:
			return Props{}, fmt.Errorf("systemd reported %s=%q, expected yes or no", b.key, m[b.key])
		}
	}
	pid, err := strconv.Atoi(m["MainPID"])
	if err != nil || pid < 0 {
		return Props{}, fmt.Errorf("systemd reported MainPID=%q, expected a number", m["MainPID"])
	}
	p.MainPID = pid
	if p.ActiveEnterMono, err = strconv.ParseUint(m["ActiveEnterTimestampMonotonic"], 10, 64); err != nil {
		return Props{}, fmt.Errorf("systemd reported ActiveEnterTimestampMonotonic=%q, expected a number", m["ActiveEnterTimestampMonotonic"])
	}
	if d := strings.TrimSpace(m["DropInPaths"]); d != "" {
		p.DropInPaths = strings.Fields(d)
		for _, x := range p.DropInPaths {
			if !strings.HasPrefix(x, "/") {
				return Props{}, fmt.Errorf("systemd reported a relative drop-in path %q", x)
			}
		}
	}
	if p.FragmentPath != "" && !strings.HasPrefix(p.FragmentPath, "/") {
		return Props{}, fmt.Errorf("systemd reported a relative FragmentPath %q", p.FragmentPath)
	}
	return p, nil
}

func contains(l []string, s string) bool {
	for _, x := range l {
		if x == s {
			return true
		}
	}
	return false
}

// Running reports whether the unit counts as running for the decision: reloading and
// refreshing units are running; activating ones are not yet (start joins their job).
func (p Props) Running() bool {
	return p.ActiveState == "active" || p.ActiveState == "reloading" || p.ActiveState == "refreshing"
}

// Enabled interprets UnitFileState: true or false where enablement is observable, nil
// where it is not (static, indirect, generated, transient, alias, masked, unknown).
func (p Props) Enabled() *bool {
	t, f := true, false
	switch p.UnitFileState {
	case "enabled", "enabled-runtime":
		return &t
	case "disabled", "linked", "linked-runtime":
		return &f
	}
	return nil
}
