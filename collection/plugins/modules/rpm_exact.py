# -*- coding: utf-8 -*-
# Documentation only: the module is the statically linked Go binary `rpm_exact` beside this
# file (a link into the collection's bin/ directory). ansible-doc reads this file; Ansible
# executes the binary.

DOCUMENTATION = r"""
module: rpm_exact
short_description: One RPM package at an exact version, present, or absent, through DNF 4
version_added: "0.1.0"
description:
  - Puts one RPM package into an exact state. With I(version) the exact
    C(EPOCH:VERSION-RELEASE.ARCH) is installed, upgrading or downgrading as needed
    (C(dnf install-nevra)). Without it the package is installed in any version if absent
    (C(dnf install-n)); an installed older version is left alone. With C(state=absent) the
    package is removed (C(dnf remove)).
  - Decisions come from the installed RPM database only (one C(rpm -q) query); repository
    metadata is never read to decide. A converged run therefore costs at most one rpm query,
    and a repository file created by an earlier task of the same play is fine.
  - The answer of that query is remembered in C(/var/cache/richt/rpm-query/NAME.json) while
    the RPM database (sqlite backend), the rpm executable and rpm's configuration are the
    same files (device, inode, size, mtime, ctime); a converged run then runs no rpm process.
    Any transaction, by this module, DNF or rpm, changes the database and the next run asks
    rpm again. Only a converged run records its answer; check mode reads the memo but never
    writes it; the answer after a transaction always comes from rpm.
  - Before any transaction, and before check mode reports one, C(MANAGER --version) must
    report DNF 4. DNF 5, YUM 3 and anything else are refused with the version found.
  - After a transaction the RPM database is read again; the task fails unless the requested
    state holds, whatever DNF's exit code was.
  - DNF runs under a supervisor, a second copy of the module binary started in a session of
    its own. It is not stopped when the module's wait ends (I(timeout), Ansible's own timeout,
    a closed connection, a killed module); it lets DNF finish, reads the package back from the
    RPM database, and writes the outcome. Each transaction keeps its records in
    C(/var/lib/richt/transactions/ID/) - C(request.json) (what was run), C(stdout),
    C(stderr) (DNF's output) and C(outcome.json) (exit code, end time, whether unit files
    changed). The records of the newest 20 transactions are kept; older ones are removed once
    their outcome has been reported.
  - One transaction runs at a time on a host. Every run, check mode included, first waits
    (within I(timeout)) for a transaction that is still under way; if it is still running when
    the deadline passes, the task fails, names the process that holds the transaction lock
    (DNF's PID while DNF runs) and where its output is kept, and nothing is changed. The first
    run after a transaction whose module stopped waiting for it reports that transaction's
    outcome once, as I(earlier_transaction), and only a run for the same package does. When
    that transaction changed the package, the reporting run is C(changed) with
    I(package_changed) (and I(unit_files_changed), I(changed_at)) as the transaction left it,
    so a C(restart_on) wired to the task still fires once. Check mode shows it too but leaves
    it to be reported by the next real run (check mode writes nothing). A transaction that
    could not be started at all (no record directory, the supervisor not started) changes
    nothing and leaves nothing behind.
  - The supervisor leaves the module's process group and session, not its cgroup - stopping
    the whole control group the play runs in (a service that runs ansible-pull, a
    terminated login session with KillUserProcesses=yes) still ends DNF.
  - Before every transaction an entry is added to the host-wide manager-sync record
    C(/var/lib/richt/manager-sync-due). Once DNF has ended, the supervisor reads the package
    back from the RPM database, adds an entry of its own when files under systemd's unit
    directories were added, replaced or removed (or when that cannot be ruled out), and then
    removes the entry written ahead. While any entry remains, the next
    richt.services.systemd_lifecycle task on the host reloads systemd's manager, so a
    supervisor that was killed too still leaves the reload due. This module never reloads the
    manager itself.
  - The state directories (C(/var/lib/richt), its C(transactions) directory, and the lock
    directory, C(/run/richt/lock) for root) are refused when they are owned by another user
    than the one running the module or are writable by group or others; the error says how to
    fix them.
  - The module is a static binary and needs no Python on the target.
options:
  name:
    description:
      - The RPM package NAME. Letters, digits and C(. _ + -); it must not start with C(-) or C(.).
        Globs, paths and shell characters are refused.
    type: str
    required: true
  version:
    description:
      - Exact C(EPOCH:VERSION-RELEASE.ARCH), the epoch always written (C(0:) for none), for
        example C(0:1.0-1.noarch).
      - Omitted means any installed version is fine.
      - Cannot be combined with C(state=absent), which removes every installed version.
    type: str
  state:
    description: Whether the package should be installed or removed.
    type: str
    choices: [present, absent]
    default: present
  manager:
    description:
      - The DNF 4 command to run. C(yum) is accepted where it is DNF 4's compatibility command.
    type: str
    choices: [dnf, yum]
    default: dnf
  timeout:
    description:
      - How long the module waits, as a positive Go duration (C(30s), C(1m30s), C(10m)). One
        deadline covers waiting for an earlier transaction still under way, the DNF version
        check, and waiting for this task's transaction to end and be checked.
      - It ends the module's wait, never the DNF transaction. When it passes while DNF is
        running, the task fails with C(changed=true) and C(package_changed=true) and names
        the transaction's record directory (I(transaction_log)); DNF is not stopped and
        finishes on its own. The next run of this module on the host waits for it and reports
        its outcome as I(earlier_transaction).
    type: str
    default: 10m
attributes:
  check_mode:
    support: full
    description: Observes for real, checks the DNF version when a transaction would run, and changes nothing.
  diff_mode:
    support: full
    description: Shows the installed NEVRAs before and after.
notes:
  - Dependencies, signatures, metadata and scriptlets stay DNF's job on the target.
  - In check mode, an install without I(version) cannot know which version DNF would pick;
    I(after) then names the package with C((version chosen by the manager)).
  - A timed-out task reports C(changed=true) and C(package_changed=true) because DNF may
    have acted or may still act. Read the outcome in I(earlier_transaction) of the next run,
    or in the transaction's directory.
extends_documentation_fragment:
  - richt.services.fast_path
author:
  - richt.services developers
"""

EXAMPLES = r"""
- name: Exactly demo 2.0-1 (upgrades or downgrades as needed)
  richt.services.rpm_exact:
    name: demo
    version: "0:2.0-1.noarch"
  register: demo_pkg

- name: Any version of jq, installed only if missing
  richt.services.rpm_exact:
    name: jq

- name: No telnet
  richt.services.rpm_exact:
    name: telnet
    state: absent

- name: Restart the service when its package changed
  richt.services.systemd_lifecycle:
    unit: demo.service
    restart_on:
      - "{{ demo_pkg }}"
"""

RETURN = r"""
name:
  description: The package name.
  returned: always
  type: str
  sample: demo
before:
  description: Installed builds before the task, as C(NAME-EPOCH:VERSION-RELEASE.ARCH).
  returned: always
  type: list
  elements: str
  sample: ["demo-0:1.0-1.noarch"]
after:
  description: Installed builds after the task (in check mode, the predicted ones).
  returned: always
  type: list
  elements: str
  sample: ["demo-0:2.0-1.noarch"]
operation:
  description: What the task did or would do.
  returned: always
  type: str
  choices: [install-nevra, install-n, remove, none]
  sample: install-nevra
command:
  description: The DNF command as an argument vector; empty when nothing was due.
  returned: always
  type: list
  elements: str
  sample: ["dnf", "-y", "install-nevra", "--", "demo-0:2.0-1.noarch"]
package_changed:
  description:
    - Whether the task changed the installed package; one of the keys a later task's
      I(restart_on) or I(reload_on) reads.
    - Follows I(changed). True when the RPM database shows other builds after the
      transaction, and whenever a change cannot be ruled out (the builds could not be read
      back, the task timed out while DNF was running, or the transaction could not be
      followed to its end). In check mode, true when a transaction would run.
  returned: always
  type: bool
  sample: true
unit_files_changed:
  description:
    - Whether the transaction added, replaced or removed files under systemd's unit
      directories (compared from the RPM database's file lists before and after).
    - False in check mode, and whenever the transaction's outcome was not read (for example
      after a timeout) or the package could not be read back; the manager-sync record on the
      target covers those cases.
  returned: always
  type: bool
  sample: true
daemon_reload:
  description:
    - C(needed) when I(unit_files_changed) is true, and when the task failed before the
      transaction's outcome was read (a timeout), since a changed unit file cannot be ruled out
      then. The manager-sync record on the target says so too. Otherwise C(none). This
      module never reloads systemd's manager.
  returned: always
  type: str
  choices: [needed, none]
  sample: needed
changed_at:
  description:
    - When the change was made, on the target's clock, as RFC 3339 in UTC with nanoseconds.
    - Set when the module saw its transaction end and the task reports a change; absent
      when nothing changed, in check mode, and when the transaction could not be followed to
      its end (for example after a timeout).
  returned: when a transaction ended and changed the package
  type: str
  sample: "2026-11-30T13:58:01.123456789Z"
transaction_log:
  description:
    - The directory that keeps this task's transaction records (C(request.json),
      C(stdout), C(stderr), C(outcome.json)).
  returned: when a transaction was started
  type: str
  sample: /var/lib/richt/transactions/20261130T135800.000000000Z-4242
earlier_transaction:
  description:
    - A transaction that an earlier run started and stopped waiting for (its deadline
      passed, or the module was killed), reported once by the first run after it ended.
  returned: when such a transaction's outcome has not been reported yet
  type: dict
  contains:
    command:
      description: The DNF command it ran, as an argument vector.
      type: list
      elements: str
      sample: ["dnf", "-y", "install-nevra", "--", "demo-0:2.0-1.noarch"]
    outcome:
      description:
        - "C(succeeded); C(failed (exit N)); C(not started: REASON) when DNF could not be
          started; or C(unknown: ...) when the transaction left no outcome (its supervisor was
          killed), in which case read its output and the RPM database."
      type: str
      sample: succeeded
    log:
      description: The transaction's record directory.
      type: str
      sample: /var/lib/richt/transactions/20261130T135800.000000000Z-4242
    ended:
      description: When the transaction ended, RFC 3339 in UTC; absent when it left no outcome.
      type: str
      sample: "2026-11-30T13:58:01Z"
observed:
  description: Where the first look at the RPM database came from, C(rpm-query) or C(memo)
    (the remembered answer of an earlier query, the database unchanged since).
  returned: always
  type: str
  sample: memo
manager_version:
  description: The DNF version reported by C(MANAGER --version), when a transaction was due.
  returned: when a transaction was due
  type: str
  sample: 4.23.0
stdout:
  description: DNF's standard output (also kept in I(transaction_log)).
  returned: when DNF ran to its end while the module waited, and wrote something
  type: str
stderr:
  description: DNF's standard error (also kept in I(transaction_log)).
  returned: when DNF ran to its end while the module waited, and wrote something
  type: str
diff:
  description: Installed NEVRAs before and after, one per line.
  returned: in diff mode, when something changed
  type: dict
"""
