// Package systemd is the collection's systemd client, shared by the modules that talk to a
// manager: observations of a unit ([Props]) and jobs, enablement, masks and manager
// reloads, over D-Bus ([Bus]) or through systemctl ([Systemctl]), in the system or a
// user's scope ([Scope]).
//
// On the manager's private socket (the system manager's as root, or a user's own manager)
// [Bus] is one connection of a minimal synchronous client of its own (peer.go): every
// observation, the manager reload ([Bus.DaemonReload]) and the start, stop, restart and
// reload jobs ([Bus.Job], which waits for the Manager's JobRemoved signal that a direct
// connection receives without subscribing). go-systemd's connection is opened only to
// enable, disable, mask or unmask unit files ([Bus.EnableFiles], [Bus.SetMasked]), and
// for jobs when the manager is reached over the system bus instead (not root, no private
// socket). [Connect] picks the transport; the caller falls back to [Systemctl] when
// neither answers.
//
// [ReloadManager] is the one way a reload settles the durable manager-sync records.
package systemd
