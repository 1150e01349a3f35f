// Package override owns one systemd unit file or drop-in: written atomically with its
// final mode and owner from the start, parsed before it is written, never shown when it
// is sensitive, and followed by exactly one daemon-reload when it changed (or a durable
// record that one is due, for a later systemd_lifecycle task).
//
// A run is [Deps.Plan] (the owner and group resolved, [Observe] of the file and a killed
// run's leftovers, then the pure [Decide]; reads only) → [Deps.Apply] (the steps in order),
// or [Deps.Check] in check mode. The reload a content change owes is recorded durably
// before the file moves, so a failure after the move keeps it due; a write that never
// happened withdraws it.
//
// A plan can be held before it is applied (the service module plans all its steps first).
// Apply takes the unit's lock and reads the file again under it; when another run changed
// it since the plan, Apply decides again under the lock and carries out that plan, which
// its result reports. Failing instead would turn a race two runs settle today into an
// error, and holding the lock from plan to apply would hold every unit's lock across the
// service's other steps (its package transaction among them).
package override
