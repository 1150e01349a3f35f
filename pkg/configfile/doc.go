// Package configfile owns one config file a service reads (the service module's configs,
// issue 31): written atomically with its final mode and owner from creation, checked by an
// optional validator before it replaces the old content, never through a link, never in a
// directory someone other than root can write, never into a directory it would have to
// invent, and removed (state absent) as exactly its path and nothing beside it.
//
// A run is [Deps.Plan] (the parameters checked, owner and group resolved through NSS,
// [Observe] of the file and every directory above it, then the pure [Decide]; reads only)
// → [Deps.Apply] (the plan's steps in order), or the plan alone in check mode. The rules it
// shares with unit_override (which directory is insecure, which mode is refused, how the
// owner is resolved, how the diff hides a sensitive file) live in package safefile, the
// temporary file's name and the rename in package atomicfile.
//
// As in unit_override, Apply reads the file again before it acts (under Deps.Lock when
// given) and, when another run changed it since the plan, decides again from the file as
// it is and carries that plan out; the result reports the plan carried out.
package configfile
