package service

import (
	"fmt"
	"strings"
)

// Order puts processes after the units their after lists name (declared order
// otherwise); reversed for removal. An after that names no process of the service, a
// unit declared twice and a cycle are errors naming them.
func Order(ps []Process, reverse bool) ([]Process, error) {
	by := map[string]Process{}
	var names []string
	for i, p := range ps {
		u := unitOf(p.Unit)
		if _, dup := by[u]; dup {
			return nil, fmt.Errorf("processes[%d]: %s is declared twice", i, u)
		}
		by[u] = p
		names = append(names, u)
	}
	done, visiting := map[string]bool{}, map[string]bool{}
	var out []Process
	var visit func(u string, trail []string) error
	visit = func(u string, trail []string) error {
		if done[u] {
			return nil
		}
		if visiting[u] {
			return fmt.Errorf("processes: after forms a cycle: %s", strings.Join(append(trail, u), " -> "))
		}
		visiting[u] = true
		for _, a := range by[u].After {
			d := unitOf(fmt.Sprint(a))
			if _, ok := by[d]; !ok {
				return fmt.Errorf("processes: %s is after %s, which is not a process of this service", u, d)
			}
			if err := visit(d, append(trail, u)); err != nil {
				return err
			}
		}
		visiting[u] = false
		done[u] = true
		out = append(out, by[u])
		return nil
	}
	for _, u := range names {
		if err := visit(u, nil); err != nil {
			return nil, err
		}
	}
	if reverse {
		for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
			out[i], out[j] = out[j], out[i]
		}
	}
	return out, nil
}
