// Package rpmexact puts one RPM package, or a set moved together, into an exact state
// through DNF 4: an exact EPOCH:VERSION-RELEASE.ARCH (upgrading or downgrading), present in
// any version, or absent.
//
// A run is [Deps.Plan], then, unless in check mode, [Deps.Apply] of that same [Plan].
// [Deps.Hold] makes the plan under the transaction lock (after waiting for a transaction an
// earlier run left under way) and keeps the lock until [Held.Finish] carries the plan out:
// a plan held across other work, as the service module holds its packages step's, cannot
// go stale, because no other run's transaction can move the RPM database in between. The
// handler is Hold, then Finish.
// Plan reads only: the installed builds of every requested name (one rpm query,
// [ObserveAll], or the remembered answers of [QueryMemo]), the pure [Decide], and, when a
// transaction is due, the files the builds it replaces or removes own ([OwnedFiles],
// [UnitFilesAmong]) and the manager's version ([CheckManager]). Repository metadata is
// never read to decide; it is left to DNF when, and only when, a transaction is due (and to
// check mode's DNF --assumeno summary, which is reported, not decided on). Apply starts
// exactly the plan's transactions, then fails unless the requested state holds ([Holds]).
//
// Check mode reports the plan's `plan` and predicts the package contract a real run
// reports: package_changed, and unit_files_changed with daemon_reload "needed" when
// [Plan.UnitFilesChange]. That prediction sees what the installed database shows; see
// [UnitFilesAmong] for its limits. A real run reports what its transactions' snapshots saw.
//
// A transaction runs under a supervisor in a systemd scope of its own ([Detached],
// [Supervise]), which lists every installed package before DNF and after it to report
// everything DNF moved; the listing after is remembered for the next transaction's listing
// before while the RPM database files are unchanged ([QueryMemo.LookupListing]). DNF 4's
// interpreter starts while the listing before is taken, held at a gate the supervisor opens
// only once it is, and leaves without Python's teardown (launcher.go).
package rpmexact
