// Package override owns one systemd unit file or drop-in: written atomically with its
// final mode and owner from the start, parsed before it is written, never shown when it
// is sensitive, and followed by exactly one daemon-reload when it changed (or a durable
// record that one is due, for a later systemd_lifecycle task).
//
// A run is Observe (the file and a killed run's leftovers; reads only) → Decide (pure: the
// operation and its steps, plan.go) → Apply (the steps in order). The reload a content
// change owes is recorded durably before the file moves, so a failure after the move keeps
// it due; a write that never happened withdraws it.
package override
