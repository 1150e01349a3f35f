// Package rpmexact puts one RPM package into an exact state through DNF 4: an exact
// EPOCH:VERSION-RELEASE.ARCH (upgrading or downgrading), present in any version, or absent.
//
// Decisions come from the installed RPM database only ([Observe]); repository metadata is
// left to DNF when, and only when, a transaction is due. [Decide] is pure, check mode stops
// after it, and [Apply] runs exactly the plan that check mode shows, then reads the RPM
// database again and fails unless the requested state holds.
//
// A transaction runs under a supervisor in a systemd scope of its own ([Supervise]), which
// lists every installed package before DNF and after it to report everything DNF moved;
// the listing after is remembered for the next transaction's listing before while the RPM
// database files are unchanged ([QueryMemo.LookupListing]).
package rpmexact
