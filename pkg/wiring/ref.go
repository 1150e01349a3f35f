package wiring

import (
	"fmt"
	"slices"
	"strings"

	"github.com/richt/services/pkg/nevra"
	"github.com/richt/services/pkg/unitname"
)

// Kind is the kind of part a reference names.
type Kind string

// The kinds of part, as written before the colon of a reference.
const (
	Package Kind = "package"
	Config  Kind = "config"
	Unit    Kind = "unit"
	Dropin  Kind = "dropin"
)

// kinds in the order messages list them.
var kinds = []Kind{Package, Config, Unit, Dropin}

// Ref is a reference to one of the service's own parts. Unit is set for Unit and Dropin
// (normalised, demo → demo.service, when it came from ParseRef); Name for the others.
type Ref struct {
	Kind Kind
	Unit string
	Name string
}

// String is the reference's canonical form: ParseRef reads it back as the same Ref.
func (r Ref) String() string {
	switch r.Kind {
	case Unit:
		return string(r.Kind) + ":" + r.Unit
	case Dropin:
		return string(r.Kind) + ":" + r.Unit + "/" + r.Name
	}
	return string(r.Kind) + ":" + r.Name
}

// canon is r with its unit normalised as ParseRef does, so that a Ref a caller built from
// the unit as the user wrote it (demo) is the one ParseRef returns (demo.service).
func (r Ref) canon() Ref {
	if r.Unit != "" {
		r.Unit = normal(r.Unit)
	}
	return r
}

// normal is a unit normalised as the modules do. One that does not normalise is kept as
// it is: the service refused it before wiring, and it matches nothing ParseRef returns.
func normal(u string) string {
	if n, err := unitname.Normalize(u); err == nil {
		return n
	}
	return u
}

// ParseRef reads a reference: package:NAME, config:NAME, unit:UNIT or dropin:UNIT/NAME.
// A package NAME is checked as an RPM name, a UNIT is normalised as the modules do; a
// config's NAME and a drop-in's NAME only need to be there, since the reference must name
// a declared part ([Parts.Check]) and the declarations are checked as configs and drop-ins.
func ParseRef(s string) (Ref, error) {
	kind, rest, ok := strings.Cut(s, ":")
	if !ok {
		return Ref{}, fmt.Errorf("%q is not a reference to a part of the service: want KIND:NAME with KIND one of %s", s, kindList())
	}
	r := Ref{Kind: Kind(kind)}
	if !known(r.Kind) {
		return Ref{}, fmt.Errorf("unknown kind %q (want %s)", kind, kindList())
	}
	if rest == "" {
		return Ref{}, fmt.Errorf("%q names nothing: want %s", s, usage(r.Kind))
	}
	switch r.Kind {
	case Package:
		if err := nevra.ValidateName(rest); err != nil {
			return Ref{}, fmt.Errorf("%s: %w", r.Kind, err)
		}
		r.Name = rest
	case Config:
		r.Name = rest
	case Unit:
		u, err := unitname.Normalize(rest)
		if err != nil {
			return Ref{}, err // it starts with "unit: "
		}
		r.Unit = u
	case Dropin:
		unit, name, ok := strings.Cut(rest, "/")
		switch {
		case !ok:
			return Ref{}, fmt.Errorf("%q has no drop-in name: want %s", s, usage(r.Kind))
		case name == "":
			return Ref{}, fmt.Errorf("%q has an empty drop-in name: want %s", s, usage(r.Kind))
		case strings.Contains(name, "/"):
			return Ref{}, fmt.Errorf("%q: the drop-in name %q has a /; want %s", s, name, usage(r.Kind))
		}
		// Whether name is a valid drop-in file name (ending in .conf, ...) is not
		// checked here: the reference must name a declared drop-in (Parts.Check), and the
		// declaration is checked by pkg/override's rule.
		u, err := unitname.Normalize(unit)
		if err != nil {
			return Ref{}, fmt.Errorf("%s: %w", r.Kind, err)
		}
		r.Unit, r.Name = u, name
	}
	return r, nil
}

func known(k Kind) bool { return slices.Contains(kinds, k) }

func kindList() string {
	return "package:, config:, unit: or dropin:"
}

func usage(k Kind) string {
	switch k {
	case Unit:
		return "unit:UNIT"
	case Dropin:
		return "dropin:UNIT/NAME"
	}
	return string(k) + ":NAME"
}
