// Package unitfile reads systemd unit files the way the manager merges them, to answer one
// question before anything acts on a unit: can it reload?
//
// Content is parsed with the coreos/go-systemd unit parser. That parser reports no line
// numbers, so [Parse] finds the failing line itself and names it without quoting it (the
// content may be secret). [Files] finds a unit's fragment and drop-ins on disk in
// systemd's order; [Reloadable] merges them.
package unitfile
