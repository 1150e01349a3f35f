// Package safefile holds the rules every module that owns a file root reads follows, in
// one place: how a file and the directories it lives in are observed ([ReadFile], [Lstat],
// [Stat]), which directory someone other than root can change ([Dir.Insecure], for unit
// files) or someone other than root and a config's owner ([Dir.Untrusted]), which
// modes are refused ([CheckMode]), how owner and group are resolved on the target
// ([UID], [GID]), how attributes change without a looser moment ([Chown], [Chmod]) and how
// a change is shown ([Diff], never a sensitive file's bytes). pkg/override (unit files and
// drop-ins) and pkg/configfile (a service's config files) both use them.
package safefile
