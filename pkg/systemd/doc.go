// Package systemd is the collection's systemd client, shared by the modules that talk to a
// manager: observations of a unit (Props) and jobs, enablement, masks and manager reloads,
// over D-Bus (Bus: a minimal synchronous client on the manager's private socket for
// observations, go-systemd for jobs) or through systemctl (Systemctl), in the system or a
// user's scope (Scope). ReloadManager is the one way a reload settles the durable
// manager-sync records.
package systemd
