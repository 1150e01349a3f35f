// Package libmaps finds the processes that still run replaced code: those that map a
// regular file which has been deleted or replaced since they mapped it. It reads
// /proc/PID/maps, never a package database, so it names exactly the files a process holds
// open in memory, whatever replaced them (a package transaction of this run, an earlier
// `dnf upgrade`, another tool).
//
// A mapping is stale when the kernel marks its path " (deleted)" (the file was unlinked:
// rpm renames a new file over the old one), or when the path now names another file than
// the mapped one. Only regular files count: anonymous memory, [heap] and the like (inode
// 0), device files (/dev/…), memfd and SysV shared memory segments (which the kernel also
// shows as deleted files) are left out, since no update replaces them.
//
// # Overlay filesystems
//
// On overlayfs (every container root) the kernel shows a file mapping's device and inode
// as the underlying layer's, while stat through the overlay reports the overlay's device
// with the underlying inode number. So the inode decides, and the device only when both
// name the same one; a different device with the same inode counts as the same file. The
// cost: a file replaced by another with the very same inode number on another filesystem
// mounted over the path goes unseen; rpm never does that.
//
// # Processes of a unit
//
// A unit's processes are those of its control group (systemd's ControlGroup), its
// sub-groups included, so a forking daemon's workers and a process a daemon delegated to a
// sub-group are found, not only the main PID.
package libmaps
