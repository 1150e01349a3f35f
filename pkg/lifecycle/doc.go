// Package lifecycle puts one systemd unit's run state (running / stopped) and boot state
// (enabled / disabled / left alone) into the requested state, independently, and reacts to
// other tasks' changes with at most one restart or reload.
//
// The order of a run is fixed: parameters → manager sync (daemon-reload when systemd or the
// durable store says the manager is stale, or a trigger changed a unit file) → observation
// → reload capability → decision → enable/disable (verified) → run-state action (verified
// under the same deadline). A reaction is recorded on the target before it is attempted and
// cleared only after it was verified, so a failed run leaves it for the next one.
package lifecycle
