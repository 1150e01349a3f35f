// Package safefile holds the rules for the files root reads and writes where someone else
// may act: how a file and the directories it lives in are observed without following a
// link ([ReadFile], [Lstat], [Stat], [DirOf]), which directory someone other than root can
// change ([Dir.Insecure], for unit files) or someone other than root and a config's owner
// ([Dir.Untrusted]), which modes are refused ([CheckMode]), how owner and group are
// resolved on the target ([UID], [GID]), how attributes change by path without a looser
// moment ([Chown], [Chmod]) and how a change is shown ([Diff], never a sensitive file's
// bytes).
//
// pkg/override (unit files and drop-ins) uses all of them. pkg/configfile (a service's
// config files) uses them to observe, judge and show a config, but changes one only
// through directories it holds open beneath the root, never by path: it sets attributes
// through descriptors of its own, in the order Chown keeps. pkg/service draws with [Diff]
// the check-mode diff of a config whose directory is not there yet.
package safefile
