// Package configfile owns one config file a service reads (the service module's
// configs): written atomically, at its path never with looser attributes than its final
// ones, checked by an optional validator (on a copy in a directory root's alone,
// ValidateDir) before it replaces the old content, never through a link, never in a
// directory someone other than root and the config's owner can write (a daemon's own
// directory, as Debian's /etc/redis redis:redis 2770, is trusted; root's directory
// writable by the config's group, or one others can write, never is; under systemd's unit
// directories only root's, Config.UnitFile), never into a directory it would have to
// invent, and removed (state absent) as exactly its path and nothing beside it.
//
// Since the config's owner may write its directory (and nothing that user does may make
// root read, write or install what it should not), Apply changes the file only
// through the directory opened from the root without following a link and checked again
// on what it opened, creates the temporary file exclusively there, root's alone (0600),
// hands the validator a copy in ValidateDir (a name in the config's directory could be
// swapped under the validator), reads the temporary file back through its descriptor and
// renames it only while its name still holds it (device and inode), checks that the path
// then holds it, and only then gives it its owner and mode through the descriptor: the
// content validated is the content installed, and a swap is a loud failure.
//
// A run is [Deps.Plan] (the parameters checked, owner and group resolved through NSS,
// [Observe] of the file and every directory above it, then the pure [Decide]; reads only)
// → [Deps.Apply] (the plan's steps in order), or the plan alone in check mode. The rules it
// shares with unit_override (which directory is trusted, which mode is refused, how the
// owner is resolved, how the diff hides a sensitive file) live in package safefile, the
// temporary file's name and the rename in package atomicfile.
//
// As in unit_override, Apply reads the file again before it acts (under Deps.Lock when
// given) and, when another run changed it since the plan, decides again from the file as
// it is and carries that plan out; the result reports the plan carried out.
//
// The Result embeds contract.Change, as every module's does: a config under systemd's unit
// directories (Config.UnitFile) whose content moved says unit_files_changed and
// daemon_reload needed, and files_placed says when the content was in place. A refusal of
// a parameter is a ParamError whose message begins with configfile's name of the
// parameter (path, mode, owner, group, validate); configfile does not know what its
// caller's users called the entry, and the caller names it (the service: configs[2].).
// The deadline of a config's plan and write is the caller's: configfile runs under the
// context it is given.
package configfile
