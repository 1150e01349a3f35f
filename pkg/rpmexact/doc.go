// Package rpmexact puts one RPM package into an exact state through DNF 4: an exact
// EPOCH:VERSION-RELEASE.ARCH (upgrading or downgrading), present in any version, or absent.
//
// Decisions come from the installed RPM database only ([Observe]); repository metadata is
// left to DNF when, and only when, a transaction is due. [Decide] is pure, check mode stops
// after it, and [Apply] runs exactly the plan that check mode shows, then reads the RPM
// database again and fails unless the requested state holds.
package rpmexact
