// Package wiring decides which of a service's own changes reach each of its processes, and
// how: it turns a process's restart_on and reload_on into the trigger lists that
// systemd_lifecycle takes. It only builds those lists; what a list means (restart beats
// reload, reloads merge, a start absorbs both, a restart already served) stays in package
// reaction, where systemd_lifecycle applies it.
//
// # References
//
// An item of restart_on or reload_on that is a string is a reference to one of the
// service's own parts ([ParseRef]):
//
//	package:NAME       a package of packages (an RPM name)
//	config:NAME        a config of configs, by its name
//	unit:UNIT          a unit file of units (demo and demo.service are one unit)
//	dropin:UNIT/NAME   a drop-in of dropins (dropin:demo/10-env.conf)
//
// Any other item (a registered result, a boolean, a mapping of names to those) is a
// trigger from outside the service and is passed on to systemd_lifecycle unchanged, which
// reads it as it always has. A reference must name a declared part, and one part may not be
// in both lists ([Parts.Check]); both are refused before the service does anything.
//
// # By name
//
// A process that gives a non-empty restart_on or reload_on reacts to what they name and to
// nothing else: one trigger per referenced part, named by its reference, whose value is that
// part's [Outcome] (whether its step changed it, and the contract.Change the step made, as
// a registered result: nothing else of the step's result), then its outside triggers. An unrelated change gets no reaction, and
// the list a drop-in is named in decides its reaction (its reload: true is for the default
// wiring). An empty list counts as not given, so that a role variable defaulting to []
// keeps the default wiring; a process that must react to nothing says restart_on: [false].
//
// # Default wiring
//
// A process that gives neither list keeps the service's wiring from before references, one
// trigger per part: every package restarts it, its own unit's unit file restarts it, its own
// unit's drop-ins restart it, or reload it when the drop-in says reload: true. Unit files and
// drop-ins of other units do not reach it.
//
// Configs, which that wiring predates, restart every process by default, as packages do.
// The service cannot tell which process reads which file, and a changed config that no
// process picks up leaves the daemon running the old configuration while the task reports
// the change: the user who adds configs to an nginx service and names no reaction expects
// the new configuration to be served, as a package upgrade is. The default cannot be a
// reload: a reload needs the unit to be reload-capable, which a process that asked for no
// reload never promised. A process that should reload, or not react, names its reactions
// (reload_on: [config:site]).
package wiring
