package unitfile

import (
	"fmt"
	"os"
	"strings"

	"github.com/richt/services/pkg/rootpath"
)

// Source is one unit file (fragment or drop-in) with its content.
type Source struct {
	Path    string
	Content []byte
}

// Capability is whether a unit can reload, and why, naming the file that decided it.
type Capability struct {
	Capable bool   `json:"capable"`
	Reason  string `json:"reason"`
	// NotifyReload: the unit is Type=notify-reload, so systemd's reload job ends only once
	// the service reported the reload done; any other reload (an ExecReload= that signals
	// the daemon and returns) ends before the daemon acted on it. Not reported in results.
	NotifyReload bool `json:"-"`
}

// Reloadable merges a fragment and its drop-ins in the order given (systemd's: fragment
// first, then drop-ins sorted by file name) and reports whether the result can reload: a
// non-empty ExecReload= list (an empty assignment resets the list) or Type=notify-reload.
func Reloadable(sources []Source) (Capability, error) {
	var execReload []string
	var execFrom, typ, typeFrom, resetFrom string
	for _, s := range sources {
		opts, err := Parse(s.Content)
		if err != nil {
			return Capability{}, fmt.Errorf("parse %s: %w", s.Path, err)
		}
		for _, o := range opts {
			if o.Section != "Service" {
				continue
			}
			switch o.Name {
			case "ExecReload":
				if strings.TrimSpace(o.Value) == "" {
					execReload, resetFrom = nil, s.Path
					continue
				}
				execReload = append(execReload, o.Value)
				execFrom = s.Path
			case "Type":
				typ, typeFrom = strings.TrimSpace(o.Value), s.Path
			}
		}
	}
	switch {
	case typ == "notify-reload":
		return Capability{Capable: true, Reason: "Type=notify-reload in " + typeFrom, NotifyReload: true}, nil
	case len(execReload) > 0:
		return Capability{Capable: true, Reason: "ExecReload= in " + execFrom}, nil
	case resetFrom != "":
		return Capability{Capable: false, Reason: "ExecReload= is reset (empty assignment) by " + resetFrom + " and not set again after it"}, nil
	case len(sources) == 0:
		return Capability{Capable: false, Reason: "no unit file found"}, nil
	}
	return Capability{Capable: false, Reason: "no ExecReload= and no Type=notify-reload in " + paths(sources)}, nil
}

func paths(s []Source) string {
	p := make([]string, len(s))
	for i := range s {
		p[i] = s[i].Path
	}
	return strings.Join(p, ", ")
}

// ReadSources reads a fragment and drop-ins from the filesystem under root ("" or "/" for
// the real one), keeping the order given.
func ReadSources(root, fragment string, dropIns []string) ([]Source, error) {
	var out []Source
	for _, p := range append([]string{fragment}, dropIns...) {
		if p == "" {
			continue
		}
		data, err := os.ReadFile(rootpath.Join(root, p))
		if err != nil {
			return nil, fmt.Errorf("read unit file: %w", err)
		}
		out = append(out, Source{Path: p, Content: data})
	}
	return out, nil
}

// Replace returns sources as they would be after p gets content (present) or is removed:
// a full unit file becomes the fragment; a drop-in takes its place in file-name order,
// replacing a same-named drop-in of lower priority.
func Replace(sources []Source, p string, content []byte, present, fullUnit bool) []Source {
	var out []Source
	for _, s := range sources {
		if s.Path == p {
			continue
		}
		if present && !fullUnit && isDropIn(s.Path) && pathBase(s.Path) == pathBase(p) {
			continue // same name: the administrator's directory wins
		}
		out = append(out, s)
	}
	if !present {
		return out
	}
	n := Source{Path: p, Content: content}
	if fullUnit {
		if len(out) > 0 && !isDropIn(out[0].Path) {
			out[0] = n
			return out
		}
		return append([]Source{n}, out...)
	}
	i := 0
	if len(out) > 0 && !isDropIn(out[0].Path) {
		i = 1
	}
	for i < len(out) && pathBase(out[i].Path) < pathBase(p) {
		i++
	}
	return append(out[:i], append([]Source{n}, out[i:]...)...)
}

func pathBase(p string) string { return p[strings.LastIndexByte(p, '/')+1:] }

func isDropIn(p string) bool {
	dir := p[:max(strings.LastIndexByte(p, '/'), 0)]
	return strings.HasSuffix(dir, ".d")
}
