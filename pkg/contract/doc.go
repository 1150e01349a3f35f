// Package contract is the part of a module's result that another module reads.
//
// A registered result is passed to a later task (systemd_lifecycle's restart_on and
// reload_on), and what that task concludes from it decides whether systemd's manager is
// reloaded. That is a contract between modules, not a convention: a key two modules both
// happen to return (each meaning its own thing) must never be read as the other's. So
// every key one module's result gives another is declared here, once, typed ([Change]),
// and systemd_lifecycle reads a registered result only through [Read], which looks at
// these keys and no others. rpm_exact, unit_override and systemd_lifecycle write the keys
// by embedding Change in their Result (encoding/json inlines the fields of an embedded
// struct), and so does package configfile's Result, the service's configs. Inside the
// service a step's outcome travels typed (wiring.Outcome: changed and a Change); a
// process's trigger is built from it by [Registered], and a step's result is read by
// [Changed] and [Read]; no other package spells a key (a test in cmd/gendoc holds that).
// The rule "what needs a daemon-reload" is written once, as [Change.NeedsManagerSync].
//
// Which module says what:
//
//   - rpm_exact: package_changed when the transaction changed what rpm reports (or what it
//     changed could not be read back); unit_files_changed when an entry of systemd's
//     system unit directories, or of a directory one level below them, was added,
//     replaced or removed while DNF ran. That is not read from the RPM database: every
//     entry is fingerprinted (inode, size, mode, mtime, link target) before and after the
//     transaction, so the unit files of packages the task did not name and the links
//     scriptlets make count too, and a file replaced with the same content counts. Then
//     daemon_reload: needed, as also when the state after DNF could not be read (a change
//     could not be ruled out). rpm_exact never reloads the manager itself; it records that
//     a reload is due.
//   - unit_override: unit_files_changed when the file's content changed (created,
//     updated, removed; not a mode or owner change), and daemon_reload: performed, or
//     needed with daemon_reload: false or when the reload failed.
//   - systemd_lifecycle: package_changed and unit_files_changed are always false, and
//     daemon_reload is performed when the run reloaded the manager. Lifecycle embeds the
//     whole Change rather than only the changed_at stamp: two keys that are always false
//     are the price of a contract without exceptions (every module's result can be read
//     the same way, and "false" is said rather than inferred from a missing key), and
//     daemon_reload: performed is a fact the reader of a lifecycle result can use. None
//     of the keys collides with lifecycle's own (daemon_reload_reasons is another key).
//   - service: its steps' results (packages, files, configs, processes) carry their
//     modules' keys; a config under a unit directory whose content moved says
//     unit_files_changed and daemon_reload: needed, as unit_override does. The service's
//     own result carries none of them: manager_reload says whether it reloaded the
//     manager at its end.
//
// changed_at is carried for a later use (telling whether a unit's current process
// started after the change); every module stamps it when it changed something outside
// check mode.
package contract
