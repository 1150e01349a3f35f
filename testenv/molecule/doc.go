// Package molecule runs Molecule scenarios — molecule/<scenario>/molecule.yml with its
// converge.yml, verify.yml and friends — on testenv's systemd targets, for role authors
// who write Molecule scenarios rather than Go. Command richt-molecule is its front end.
//
// The platforms' images name EL generations; testenv's Debian-built targets of the
// matching generation stand in for them (EL 9 → bookworm, EL 10 → trixie), and the run
// says so. What cannot be honoured (another driver, an image of no EL generation, a key
// this runner does not implement) is refused by name when molecule.yml is read.
//
// Beyond Molecule: the idempotence action says what each changed task changed; every
// action prints the starts, restarts, reloads and stops of systemd units it caused on each
// instance (read from the target's journal); scenarios keep their state in a directory of
// their own, so several run at once; and an upgrade-path scenario kind (molecule.yml's
// richt.upgrade) converges at one version and then another and asserts what the second
// converge did to each unit. docs/testenv.md describes it all.
package molecule
