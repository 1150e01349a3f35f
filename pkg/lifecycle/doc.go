// Package lifecycle puts one systemd unit's run state (running / stopped) and boot state
// (enabled / disabled / left alone) into the requested state, independently, and reacts to
// other tasks' changes with at most one restart or reload.
//
// A run is Observe → Prepare → Decide → Apply. Observe (observe, prepare.go) reads the
// durable records, the unit, systemd's clock when a reaction's timing matters, and the reload
// capability of the unit's files, and changes nothing. Prepare (pure) decides what comes
// before the run state, as steps: record-pending (the due reaction, on disk before anything
// can fail), an enable or disable ahead of a manager sync (so one reload serves both), and
// daemon-reload with its reasons (systemd or the durable store says the manager is stale, a
// trigger changed a unit file, a package change left the unit not found, or the files' reload
// capability is not the manager's). Decide (pure, plan.go) takes the facts after those steps
// and plans the run state: mask, enable/disable (verified), the run-state action (verified
// under the same deadline), settle and probe. Check mode reports the same steps in the same
// order (result key plan, the pending record, settle and probe named too) and carries out
// none. A reaction is cleared only after it was verified, so a failed run leaves it for
// the next one.
package lifecycle
