package contract

import (
	"encoding/json"
	"time"

	"github.com/richt/services/pkg/stamp"
)

// The contract's keys, as they appear in a result. They are the json tags of [Change];
// the round-trip test holds the two together.
const (
	// keyChanged is Ansible's own key of every module result: not the contract's, but
	// read with it (Changed, Registered), so it too is spelled once.
	keyChanged          = "changed"
	keyPackageChanged   = "package_changed"
	keyUnitFilesChanged = "unit_files_changed"
	keyDaemonReload     = "daemon_reload"
	keyChangedAt        = "changed_at"
	keyFilesPlaced      = "files_placed"
)

// Reload says whether systemd's manager was reloaded after a change (`daemon_reload`).
type Reload string

// daemon_reload values.
const (
	// ReloadPerformed: the task reloaded the manager after its change.
	ReloadPerformed Reload = "performed"
	// ReloadNeeded: the task changed unit files and did not reload the manager; a later
	// systemd_lifecycle task must (the task also recorded that on the target).
	ReloadNeeded Reload = "needed"
	// ReloadNone: nothing the task did needs a reload.
	ReloadNone Reload = "none"
	// ReloadPlanned: check mode; the task would reload the manager after its change. A
	// check-mode result never says "performed" for what it did not do; later tasks of the
	// same check run read it as the reload done (their plans follow the real run's).
	ReloadPlanned Reload = "planned"
)

// Reloaded reports whether the manager was reloaded after the change: performed, or in
// check mode planned.
func (r Reload) Reloaded() bool { return r == ReloadPerformed || r == ReloadPlanned }

// Planned is r as check mode reports it: a reload performed becomes planned.
func (r Reload) Planned() Reload {
	if r == ReloadPerformed {
		return ReloadPlanned
	}
	return r
}

// MarshalText writes the zero value as "none": a module that does not touch the manager
// need not say so, and a result never carries an empty daemon_reload.
func (r Reload) MarshalText() ([]byte, error) {
	if r == "" {
		return []byte(ReloadNone), nil
	}
	return []byte(r), nil
}

// Change is what a module's result tells later tasks about the change it made. Embed it
// in the module's Result.
type Change struct {
	// PackageChanged: the task changed an installed package.
	PackageChanged bool `json:"package_changed"`
	// UnitFilesChanged: the task added, replaced or removed a unit file or drop-in.
	UnitFilesChanged bool `json:"unit_files_changed"`
	// DaemonReload: whether the manager was reloaded after the change. "" is not
	// reported (when read) and is written as none.
	DaemonReload Reload `json:"daemon_reload"`
	// ChangedAt is when the change was made, on the target's clock (see Stamp); empty
	// when nothing changed.
	ChangedAt string `json:"changed_at,omitempty"`
	// FilesPlaced is when every file the change put on the host was in place, in
	// systemd's clock (boot id and CLOCK_MONOTONIC µs): a unit that became active later
	// already runs with them, so a restart asked for because of this change was done
	// (by a package scriptlet, say). Absent when the module cannot say.
	FilesPlaced *stamp.Stamp `json:"files_placed,omitempty"`
}

// Placed records s as FilesPlaced; a zero stamp leaves it unset, and of two stamps of
// one boot the later is kept (every file of both changes was in place by then).
func (c *Change) Placed(s stamp.Stamp) {
	switch {
	case s.IsZero():
	case c.FilesPlaced == nil || c.FilesPlaced.BootID != s.BootID || s.Mono > c.FilesPlaced.Mono:
		c.FilesPlaced = &s
	}
}

// stampLayout is RFC 3339 with all nine digits of the nanoseconds, so that stamps sort
// as text too.
const stampLayout = "2006-01-02T15:04:05.000000000Z07:00"

// Stamp records t as the moment of the change: RFC 3339 with nanoseconds, in UTC.
func (c *Change) Stamp(t time.Time) { c.ChangedAt = t.UTC().Format(stampLayout) }

// When is ChangedAt as a time; ok is false when the change carries no (valid) stamp.
func (c Change) When() (t time.Time, ok bool) {
	if c.ChangedAt == "" {
		return time.Time{}, false
	}
	t, err := time.Parse(time.RFC3339Nano, c.ChangedAt)
	if err != nil {
		return time.Time{}, false
	}
	return t.UTC(), true
}

// NeedsManagerSync reports whether the change leaves systemd's manager behind the unit
// files: the task says a reload is needed, or it changed unit files and does not say it
// reloaded the manager after them. A unit_override that changed a drop-in and reloaded
// (performed) needs nothing more; an rpm_exact that changed unit files does.
func (c Change) NeedsManagerSync() bool {
	return c.DaemonReload == ReloadNeeded || c.UnitFilesChanged && !c.DaemonReload.Reloaded()
}

// Read reads the contract from a registered result as Ansible passes it to a later task
// (JSON decoded into map[string]any). Only the contract's keys are read. A key that is
// missing, of the wrong type, or not one of the values the contract allows is not
// reported: its zero value, never a guess and never a panic. A nil map reads as nothing
// reported.
func Read(result map[string]any) Change {
	var c Change
	c.PackageChanged, _ = result[keyPackageChanged].(bool)
	c.UnitFilesChanged, _ = result[keyUnitFilesChanged].(bool)
	if s, ok := result[keyDaemonReload].(string); ok {
		switch r := Reload(s); r {
		case ReloadPerformed, ReloadNeeded, ReloadNone, ReloadPlanned:
			c.DaemonReload = r
		}
	}
	if s, ok := result[keyChangedAt].(string); ok {
		if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
			c.Stamp(t)
		}
	}
	if m, ok := result[keyFilesPlaced].(map[string]any); ok {
		// Through JSON again, so the stamp's own field names and types are the rule.
		var s stamp.Stamp
		if data, err := json.Marshal(m); err == nil && json.Unmarshal(data, &s) == nil && s.Mono > 0 {
			c.Placed(s)
		}
	}
	return c
}

// Changed reads a result's `changed` (Ansible's key every module's result carries): false
// when it is missing or not a boolean.
func Changed(result map[string]any) bool {
	c, _ := result[keyChanged].(bool)
	return c
}

// Registered is a registered result that says changed and carries c, as a later task
// reads it (Read reads c back): the keys of c that say something, and no others, so a
// trigger built from it carries nothing beyond what the contract reads.
func Registered(changed bool, c Change) map[string]any {
	out := map[string]any{keyChanged: changed}
	if c.PackageChanged {
		out[keyPackageChanged] = true
	}
	if c.UnitFilesChanged {
		out[keyUnitFilesChanged] = true
	}
	if c.DaemonReload != "" {
		out[keyDaemonReload] = string(c.DaemonReload)
	}
	if c.ChangedAt != "" {
		out[keyChangedAt] = c.ChangedAt
	}
	if c.FilesPlaced != nil {
		// As JSON decodes it, the form Read takes.
		var m map[string]any
		if data, err := json.Marshal(c.FilesPlaced); err == nil && json.Unmarshal(data, &m) == nil {
			out[keyFilesPlaced] = m
		}
	}
	return out
}
