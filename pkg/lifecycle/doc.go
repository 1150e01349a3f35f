// Package lifecycle puts one systemd unit's run state (running / stopped) and boot state
// (enabled / disabled / left alone) into the requested state, independently, and reacts to
// other tasks' changes with at most one restart or reload.
//
// A run is [Deps.Plan], then [Deps.Apply] unless check mode, both under the unit's lock:
// [Deps.Hold] takes the lock and plans, [Held.Finish] applies exactly the held plan and
// gives the lock back, so no other run can change the unit's records between the two. The
// Spec parses the arguments once into a [Task]. Plan reads and decides; it
// changes nothing. It observes (observe.go) the durable records, the unit, systemd's clock
// when a reaction's timing matters and the reload capability of the unit's files; then
// [Prepare] (pure) plans what comes before the run state: record-pending (the due
// reaction of a running unit, on disk before anything can fail; a unit that does not run
// has nothing to restart, and its start is stamped before the job), an enable or disable ahead of a manager sync
// (so one reload serves both), and daemon-reload with its reasons; then [Decide] (pure)
// plans the run state: mask, unmask, enable/disable, the run-state action, settle and
// probe. Decide sees the unit as those steps leave it, predicted the same way in check
// mode and in a real run: the boot state the enable gives, the unit a sync loads (a unit a
// package change installs: loaded, stopped, disabled), its boot state as the files on
// disk give it (systemd.FileStater; the loaded unit's own is cached until the sync), the
// unit an unmask loads, and the reload capability of the files on disk.
//
// Apply carries out exactly the plan's steps and decides nothing. After a daemon-reload or
// an unmask it observes the unit and fails, in Decide's words, when the prediction does
// not hold. After an unmask the boot state cannot be read beforehand, so a wanted one is
// a step, carried out even when the unit turns out to be so already. The result's plan and
// actions are the applied plan's, and check mode reports the same ones
// (TestPlanEqualsApplied, TestPlanEqualsAppliedAcrossSyncAndUnmask).
//
// The run state is decided from the state Plan observed, not again after the steps ahead
// of it: an enable, a disable, a daemon-reload and an unmask change what the manager knows
// of the unit, never whether it runs, so that observation is the one immediately before
// acting. (A start job on a unit something else started meanwhile finds it running.)
// Check mode cannot perform the sync it plans, so a unit the manager does not find and
// no file on disk names is refused there (Plan.Unseen) rather than planned for.
// A reaction is cleared only after it was verified, so a failed run leaves it for the next
// one.
//
// A reload whose end systemd cannot see (any unit but Type=notify-reload: its ExecReload=
// signals the daemon and returns) is proven, when the unit has a health probe, only once it
// took effect (proof.go): its processes from before the reload quiet for QuietAfterReload,
// then every probe attempt passing for the settle (DefaultSignalledReloadSettle unless the
// task gives one). A verified reload is recorded (durable.Reloaded), and a reload owed for
// files placed before it is served (Prepare): a run that waited for another run of the
// unit does not repeat the reload that run did.
package lifecycle
