# -*- coding: utf-8 -*-
# Documentation only: the module is the statically linked Go binary `rpm_exact` beside this
# file (a link into the collection's bin/ directory). ansible-doc reads this file; Ansible
# executes the binary.

DOCUMENTATION = r"""
module: rpm_exact
short_description: RPM packages at an exact version, present, or absent, through DNF 4, one or a set at a time
version_added: "0.1.0"
description:
  - Puts one RPM package (I(name)) or a set of packages (I(packages)) into an exact state.
    With a version the exact C(EPOCH:VERSION-RELEASE.ARCH) is installed, upgrading or
    downgrading as needed. Without one the package is installed in any version if it is
    absent; an installed version is left alone. With C(state=absent) every installed build
    of the package is removed.
  - "Each entry is decided on its own, and the entries are carried out together. Every exact
    pin and every unversioned install of the task goes into one DNF transaction:
    C(install-nevra) when all of them are pins, C(install-n) when none is, and plain
    C(install) for a mix (there a pin, written C(NAME-EPOCH:VERSION-RELEASE.ARCH), can only
    match as a full NEVRA, and a bare name is tried as a package name before anything else).
    Removals go into a second transaction, C(remove), which starts only after the first one
    succeeded. A task with I(name) runs at most one of the two."
  - "A transaction that DNF cannot resolve (an entry no enabled repository has, a dependency
    problem) fails before anything is changed, and DNF's message, which names the entry, is in
    the task's error. So a set is installed, upgraded and downgraded as a whole or not at all.
    This is DNF's own behaviour and holds for resolution only: a failing removal does not undo
    the install transaction that ran before it, and a scriptlet that fails while rpm
    installs can leave part of a transaction done (I(moved) then says what moved)."
  - "A converged task, one or a set, runs no DNF: decisions come from the installed RPM
    database only, from one C(rpm -q) query for every name of the task, or from the
    remembered answers (below) when every name has one. Repository metadata is never read to
    decide; a repository file created by an earlier task of the same play is fine."
  - The answer of that query is remembered per name in
    C(/var/cache/richt/rpm-query/NAME.json) while the RPM database (sqlite backend), the rpm
    executable and rpm's configuration are the same files (device, inode, size, mtime,
    ctime). Any transaction, by this module, DNF or rpm, changes the database and the next
    run asks rpm again. An answer is recorded only when every one of those files is older
    than two ticks of the kernel clock file times come from (1-10 ms) at the start of the
    query, or older than 2 s where the files' times are whole seconds. Only a converged run records its answers; check mode reads the memo
    but never writes it; the answer after a transaction always comes from rpm.
  - Before any transaction, and before check mode reports one, C(MANAGER --version) must
    report DNF 4. DNF 5, YUM 3 and anything else are refused with the version found.
  - "A transaction can move more packages than the task names. DNF's solver upgrades or
    downgrades a package that requires a pinned one at its own version (if C(acc-app)
    requires C(acc-lib) at exactly the version of C(acc-app), pinning C(acc-lib) to another
    version moves C(acc-app) as well), installs new dependencies, and removes the packages
    that depend on a removed one. I(moved) lists every package the transactions installed,
    upgraded, downgraded or removed, requested or not, and I(changed) and
    I(package_changed) follow it. The diff lists the requested packages and every other
    package that moved."
  - "To see this, the transaction's supervisor (below) takes a snapshot right before DNF
    starts and another once DNF has ended. A snapshot is every installed build (one
    C(rpm -qa) of the package headers, C(NAME), C(EPOCHNUM), C(VERSION), C(RELEASE),
    C(ARCH)) and a fingerprint (inode, size, mode, mtime, link target) of every entry of
    systemd's system unit directories C(/etc/systemd/system), C(/run/systemd/system),
    C(/usr/local/lib/systemd/system), C(/usr/lib/systemd/system) and
    C(/lib/systemd/system), and of the entries of their subdirectories one level down (such
    as C(NAME.service.d/) and C(multi-user.target.wants/)). What differs between the two is
    reported. When the snapshot before DNF cannot be taken, DNF is not run and the task fails
    without a change."
  - "The listing after DNF is remembered in C(/var/cache/richt/rpm-listing/listing.json),
    keyed like the query answers below, and stands for the next transaction's listing before
    DNF while the RPM database and rpm's files are unchanged (one listing per transaction
    instead of two when nothing else wrote the database in between). The transaction's
    record says which it used (C(before_listed) in C(outcome.json): C(rpm) or
    C(remembered))."
  - "After the transactions the task fails unless the RPM database shows the requested state
    for every entry, whatever DNF's exit code was."
  - "Installonly packages (kernel-like: those DNF's C(installonlypkgs) setting names, for
    example by providing installonlypkg(kernel) or installonlypkg(kernel-module)) are
    installed beside their other builds instead of replacing them. For them an exact pin
    means that this build is installed: the other builds stay, and a pin to a build that is
    one of several installed is converged (no transaction). Installing a new build lets DNF
    remove the oldest builds beyond C(installonly_limit) (3 by default on EL; DNF never
    removes the running kernel); such a removal shows in I(moved) and in I(after).
    C(state=absent) asks DNF to remove every installed build."
  - "Any other package with more than one build of one architecture in the RPM database
    (what an interrupted C(rpm -U) or a killed transaction leaves) is never converged: the
    task fails, in check mode too, naming the builds and the repair (C(dnf remove
    --duplicates NAME), which keeps the newest; a pin to another build is then an ordinary
    downgrade), and changes nothing. Installonly is told by DNF's default
    C(installonlypkgs) (the names kernel and kernel-PAE, a provide installonlypkg(...) or
    multiversion(kernel)); a list changed in C(dnf.conf) is not read. C(state=absent)
    removes every build and goes on."
  - DNF runs under a supervisor, a second copy of the module binary started in a session of
    its own. It is not stopped when the module's wait ends (I(timeout), Ansible's own timeout,
    a closed connection, a killed module); it lets DNF finish, takes the snapshot after it,
    and writes the outcome. Each transaction keeps its records in
    C(/var/lib/richt/transactions/ID/) - C(request.json) (what was run, for which requested
    names), C(stdout), C(stderr) (DNF's output) and C(outcome.json) (exit code, end time,
    whether unit files changed, the requested names' builds afterwards, the packages that
    moved, I(files_placed)). The records of the newest 20 transactions are kept; older ones
    are removed once their outcome has been reported.
  - One transaction runs at a time on a host. Every run, check mode included, first waits
    (within I(timeout)) for a transaction that is still under way; if it is still running when
    the deadline passes, the task fails, names the process that holds the transaction lock
    (DNF's PID while DNF runs) and where its output is kept, and nothing is changed. The first
    run after a transaction whose module stopped waiting for it reports that transaction's
    outcome once, as I(earlier_transaction); only a run whose names overlap the names that
    transaction was requested for reports it. When that transaction changed packages and the
    reporting run has nothing to do itself, the reporting run is C(changed) with
    I(package_changed) (and I(unit_files_changed), I(changed_at), I(files_placed)) as the
    transaction left them and its moves in I(moved), so a C(restart_on) wired to the task
    still fires once. Check mode shows it too but leaves it to be reported by the next real
    run (check mode writes nothing). A transaction that could not be started at all (no
    record directory, the supervisor not started) changes nothing and leaves nothing behind.
  - The supervisor leaves the module's process group and session, and, where systemd is PID
    1, its control group too - it runs in a transient scope of its own
    (C(systemd-run --scope), see I(transaction_scope)), so stopping the unit or session the
    play runs in (a service that runs ansible-pull, a terminated login session with
    KillUserProcesses=yes) leaves DNF running. Stopping that scope itself stops DNF; the
    supervisor then still writes the outcome, saying so. Where systemd is not PID 1 the
    supervisor stays in the caller's cgroup.
  - Before every transaction an entry is added to the host-wide manager-sync record
    C(/var/lib/richt/manager-sync-due). Once DNF has ended, the supervisor takes its second
    snapshot, adds an entry of its own when an entry of systemd's unit directories was added,
    replaced or removed (or when the snapshot could not be taken, so that cannot be ruled
    out), and then removes the entry written ahead. While any entry remains, the next
    richt.services.systemd_lifecycle task on the host reloads systemd's manager, so a
    supervisor that was killed too still leaves the reload due. This module never reloads the
    manager itself.
  - "Check mode decides as a real run does. When a transaction is due it also asks DNF what
    the transaction would move: C(MANAGER --assumeno OP -- SPECS) resolves the transaction
    against the enabled repositories, prints DNF's transaction summary and stops before it
    changes anything. So check mode reads repository metadata whenever a transaction is due
    (a converged run still runs no DNF). The summary is returned as I(would_move), and
    I(check_mode_note) says what the prediction rests on. A transaction DNF says cannot run
    (for example C(Unable to find a match)) fails the check as it would fail the real run. A
    summary that cannot be read leaves the prediction to the RPM database (I(after)), and
    I(check_mode_note) says so. A removal that would follow an install is asked about
    against the host as it is, before that install."
  - The state directories (C(/var/lib/richt), its C(transactions) directory, and the lock
    directory, C(/run/richt/lock) for root) are refused when they are owned by another user
    than the one running the module or are writable by group or others; the error says how to
    fix them.
  - The module is a static binary and needs no Python on the target.
options:
  name:
    description:
      - The RPM package NAME. Letters, digits and C(. _ + -); it must not start with C(-) or
        C(.). Globs, paths and shell characters are refused.
      - One of I(name) and I(packages) is required.
    type: str
  version:
    description:
      - Exact C(EPOCH:VERSION-RELEASE.ARCH), the epoch always written (C(0:) for none), for
        example C(0:1.0-1.noarch).
      - Omitted means any installed version is fine.
      - Cannot be combined with C(state=absent), which removes every installed version.
      - Goes with I(name); not with I(packages).
    type: str
  state:
    description:
      - Whether the package should be installed or removed.
      - Goes with I(name); not with I(packages).
    type: str
    choices: [present, absent]
    default: present
  packages:
    description:
      - A set of packages moved together, each a mapping with I(name) and optionally I(version)
        and I(state), which mean what the options of the same names mean for one package. See
        the description for how the set is carried out.
      - Mutually exclusive with I(name), I(version) and I(state); one of I(name) and I(packages)
        is required.
      - Refused when empty, when a name appears twice, and when an entry has a key other than
        C(name), C(version) and C(state) or a value that is not a string.
      - I(manager) and I(timeout) apply to the whole set.
    type: list
    elements: dict
    version_added: "0.2.0"
    suboptions:
      name:
        description:
          - The RPM package NAME, as for I(name).
        type: str
        required: true
      version:
        description:
          - Exact C(EPOCH:VERSION-RELEASE.ARCH), as for I(version); omitted means any version.
            Cannot be combined with C(state=absent).
        type: str
      state:
        description:
          - Whether this package should be installed or removed.
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
        check, in check mode DNF's C(--assumeno) answers, and waiting for this task's
        transactions to end and be checked.
      - It ends the module's wait, never a DNF transaction. When it passes while DNF is running,
        the task fails with C(changed=true) and C(package_changed=true) and names the
        transaction's record directory (I(transaction_log)); DNF is not stopped and finishes on
        its own, and a removal that was to follow it is not started. The next run of this module
        on the host waits for it and reports its outcome as I(earlier_transaction).
    type: str
    default: 10m
attributes:
  check_mode:
    support: full
    description:
      - Observes for real and changes nothing. When a transaction would run, it checks the
        DNF version and asks DNF (C(--assumeno)) what the transaction would move, which reads
        the enabled repositories.
  diff_mode:
    support: full
    description: Shows the installed NEVRAs of the requested packages, and of every other package that moved, before and after.
notes:
  - Dependencies, signatures, metadata and scriptlets stay DNF's job on the target.
  - In check mode, an install without a version cannot know from the RPM database which
    version DNF would pick; I(after) then names the package followed by "(version chosen by
    the manager)". I(would_move) shows the version DNF picked, when its summary was read.
  - In check mode, I(after) of an installonly package assumes that the pinned build replaces
    the others, because the RPM database cannot tell that a package is installonly;
    I(would_move) shows what DNF would really do.
  - A timed-out task reports C(changed=true) and C(package_changed=true) because DNF may
    have acted or may still act. Read the outcome in I(earlier_transaction) of the next run,
    or in the transaction's directory.
extends_documentation_fragment:
  - richt.services.fast_path
author:
  - richt.services developers (@richt)
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

# acc-app and acc-tool require acc-lib at their own version, so the three can only move
# together: one install-nevra transaction for the pins, then one remove for acc-debug.
- name: The acc packages at 2.0-1, without acc-debug
  richt.services.rpm_exact:
    packages:
      - {name: acc-lib, version: "0:2.0-1.noarch"}
      - {name: acc-app, version: "0:2.0-1.noarch"}
      - {name: acc-tool, version: "0:2.0-1.noarch"}
      - {name: acc-debug, state: absent}
    timeout: 20m
  register: acc_pkgs

- name: Show every package that moved, also those the task did not name
  ansible.builtin.debug:
    msg: "{{ acc_pkgs.moved | map(attribute='name') | list }}"
"""

RETURN = r"""
name:
  description: The package name.
  returned: with name
  type: str
  sample: demo
before:
  description: Installed builds of the package before the task, as C(NAME-EPOCH:VERSION-RELEASE.ARCH).
  returned: with name
  type: list
  elements: str
  sample: ["demo-0:1.0-1.noarch"]
after:
  description:
    - Installed builds of the package after the task, as the RPM database showed them once
      DNF had ended (in check mode, the predicted ones).
  returned: with name
  type: list
  elements: str
  sample: ["demo-0:2.0-1.noarch"]
plan:
  description:
    - The run's plan, decided from the installed RPM database before anything changes; check
      mode reports the same list that a real run then carries out.
    - Each transaction as its operation and package specs, in order (for example
      C(install-nevra demo-0:2.0-1.noarch), then C(remove old)), and last C(record-reload-due)
      when the transactions change unit files as far as the installed builds show (see
      I(unit_files_changed)) - the manager reload they leave due, recorded on the target.
    - Empty when nothing is due.
  returned: always
  type: list
  elements: str
  sample: [install-nevra demo-0:2.0-1.noarch, record-reload-due]
operation:
  description: What the task did or would do to the package.
  returned: with name
  type: str
  choices: [install-nevra, install-n, remove, none]
  sample: install-nevra
command:
  description: The DNF command as an argument vector; empty when nothing was due.
  returned: with name
  type: list
  elements: str
  sample: ["dnf", "-y", "install-nevra", "--", "demo-0:2.0-1.noarch"]
packages:
  description:
    - One item per entry of I(packages), in the task's order.
  returned: with packages
  type: list
  elements: dict
  contains:
    name:
      description: The package name.
      type: str
      sample: acc-lib
    before:
      description: Installed builds before the task, as C(NAME-EPOCH:VERSION-RELEASE.ARCH).
      type: list
      elements: str
      sample: ["acc-lib-0:1.0-1.noarch"]
    after:
      description: Installed builds after the task (in check mode, the predicted ones).
      type: list
      elements: str
      sample: ["acc-lib-0:2.0-1.noarch"]
    operation:
      description:
        - What was decided for this entry. An entry that goes into a mixed transaction still
          reports its own operation; I(commands) shows the transaction's C(install).
      type: str
      choices: [install-nevra, install-n, remove, none]
      sample: install-nevra
commands:
  description:
    - The DNF commands as argument vectors, in the order they ran (the install transaction,
      then the removal); in check mode, the ones that would run. Empty when nothing was due.
    - When the install transaction failed or timed out, the removal was not started and is
      not listed.
  returned: with packages
  type: list
  elements: list
  sample: [["dnf", "-y", "install-nevra", "--", "acc-lib-0:2.0-1.noarch", "acc-app-0:2.0-1.noarch"], ["dnf", "-y", "remove", "--", "acc-debug"]]
moved:
  description:
    - Every package the task's transactions installed, upgraded, downgraded or removed,
      requested or not, sorted by name; read from the snapshots before and after each
      transaction. A package moved by both transactions of a set keeps its first I(before)
      and its last I(after).
    - Also when a transaction failed, if it moved anything. Empty when nothing moved; in
      check mode nothing the task would move is listed here (see I(would_move)).
    - A run that has nothing to do itself and reports an I(earlier_transaction) lists that
      transaction's moves here.
  returned: always
  type: list
  elements: dict
  contains:
    name:
      description: The package name.
      type: str
    before:
      description: Its installed builds before the transaction; empty when it was installed new.
      type: list
      elements: str
    after:
      description: Its installed builds after the transaction; empty when it was removed.
      type: list
      elements: str
    requested:
      description: Whether the task named this package; false for what DNF moved on its own.
      type: bool
  sample: [{name: acc-app, before: ["acc-app-0:1.0-1.noarch"], after: ["acc-app-0:2.0-1.noarch"], requested: false},
           {name: acc-lib, before: ["acc-lib-0:1.0-1.noarch"], after: ["acc-lib-0:2.0-1.noarch"], requested: true}]
would_move:
  description:
    - Check mode only. DNF's transaction summary of the transactions that would run (from
      C(MANAGER --assumeno)), one item per package, requested or not.
    - Absent when DNF's summary could not be read (I(check_mode_note) then says why), and when
      it lists no package.
  returned: in check mode, when a transaction would run and DNF's summary was read
  type: list
  elements: dict
  contains:
    name:
      description: The package name.
      type: str
      sample: acc-app
    action:
      description:
        - What the transaction would do to the package; C(obsolete) is an installed package
          that a package of the transaction replaces.
      type: str
      choices: [install, upgrade, downgrade, remove, reinstall, obsolete]
      sample: upgrade
    version:
      description:
        - The build it would install, or remove, as DNF prints it,
          C([EPOCH:]VERSION-RELEASE.ARCH), with the epoch only when it is not 0.
      type: str
      sample: 2.0-1.noarch
    repo:
      description:
        - The repository DNF would take it from; for a removal, C(@) and the repository it was
          installed from (C(@System) when unknown). Absent for C(obsolete).
      type: str
      sample: acc
    requested:
      description: Whether the task named this package.
      type: bool
      sample: false
check_mode_note:
  description:
    - What check mode's prediction rests on - DNF's transaction summary (I(would_move)), or
      the RPM database only, with the reason DNF's summary could not be had.
  returned: in check mode, when a transaction would run
  type: str
  sample: "would_move is DNF's transaction summary (dnf --assumeno): every package the transaction would move, asked for or not; nothing was changed"
package_changed:
  description:
    - Whether the task changed installed packages; one of the keys a later task's
      I(restart_on) or I(reload_on) reads.
    - Follows I(changed). True when the task's transactions moved any package (I(moved)),
      requested or not, and whenever a change cannot be ruled out (the RPM database could
      not be read after a transaction, the task timed out while DNF was running, or the
      transaction could not be followed to its end). In check mode, true when a transaction
      would run.
  returned: always
  type: bool
  sample: true
unit_files_changed:
  description:
    - Whether any entry of systemd's system unit directories (C(/etc/systemd/system),
      C(/run/systemd/system), C(/usr/local/lib/systemd/system), C(/usr/lib/systemd/system),
      C(/lib/systemd/system)) or of their subdirectories one level down was added, replaced
      or removed between the snapshot taken before DNF started and the one taken after it
      ended. This covers the unit files of every package the transaction moved, requested
      or not, and the enablement symlinks that scriptlets create.
    - An entry counts as replaced when its inode, size, mode, mtime or link target differs, so
      a file replaced with identical content counts too (a spare daemon-reload is harmless, a
      missed one is not).
    - The directories are compared rather than the RPM database's file lists because the
      files of a package that the transaction removed are no longer listed there afterwards.
    - False whenever the transaction's outcome was not read (for example after a timeout) or
      the snapshot after it could not be taken; the manager-sync record on the target covers
      those cases.
    - In check mode, the prediction of I(plan) - true when an installed build that the
      transactions would replace or remove owns a file in those directories (read from the
      installed RPM database's file lists), or when those files could not be listed. A
      package that is not installed yet, a unit file that only the new build ships, and
      packages DNF would move without being asked are not predicted; the real run reports
      them.
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
  returned: when a transaction ended and changed a package
  type: str
  sample: "2026-11-30T13:58:01.123456789Z"
files_placed:
  description:
    - When every file of the builds the task's transactions installed (requested or not) was
      in place, in systemd's clock; one of the keys a later task's I(restart_on) reads. A
      unit that became active after this moment already runs with those files, and
      richt.services.systemd_lifecycle then reports the restart as already done
      (C(reaction=served)) instead of restarting again.
    - It is the newest inode change time (ctime) among the regular files and symlinks of
      those builds, read after DNF ended, carried from the wall clock to the monotonic clock.
      Directories are left out, since a later package adding a file to a shared directory
      would move them; C(%ghost) files that do not exist are skipped.
    - Absent when the transactions installed no build (removals only), when the installed
      builds have no files, when their files could not be listed, in check mode, and when
      the transaction could not be followed to its end.
  returned: when a transaction installed builds and their files could be listed
  type: dict
  contains:
    boot_id:
      description: The boot the moment belongs to (C(/proc/sys/kernel/random/boot_id)).
      type: str
      sample: 5c2e4d0a-7b1f-4e9a-8c3d-2f6b1a9e0d47
    monotonic_us:
      description:
        - C(CLOCK_MONOTONIC) in microseconds, the clock of systemd's
          C(ActiveEnterTimestampMonotonic).
      type: int
      sample: 8123456789
transaction_scope:
  description:
    - The transient systemd scope the transaction ran in, C(richt-rpm-transaction-N.scope);
      stopping the unit, session or cgroup that ran the module (a oneshot unit of
      ansible-pull, a closed SSH session under logind's KillUserProcesses) does not reach
      DNF. Where systemd is not PID 1, a sentence saying that the transaction ran in the
      caller's cgroup.
  returned: when a transaction ran
  type: str
  sample: richt-rpm-transaction-000000000042.scope
transaction_log:
  description:
    - The directory that keeps the task's transaction records (C(request.json),
      C(stdout), C(stderr), C(outcome.json)); for a set that installed and then removed,
      the removal's.
  returned: when a transaction was started
  type: str
  sample: /var/lib/richt/transactions/20261130T135800.000000000Z-4242
earlier_transaction:
  description:
    - A transaction that an earlier run started and stopped waiting for (its deadline
      passed, or the module was killed), reported once by the first run after it ended
      whose names overlap the names that transaction was requested for.
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
    moves:
      description:
        - The packages it moved, requested or not, in the form of I(moved); absent when it
          moved none or left no outcome.
      type: list
      elements: dict
observed:
  description: Where the first look at the RPM database came from, C(rpm-query) or C(memo)
    (the remembered answers of earlier queries, for every name of the task, the database
    unchanged since).
  returned: always
  type: str
  sample: memo
manager_version:
  description: The DNF version reported by C(MANAGER --version), when a transaction was due.
  returned: when a transaction was due
  type: str
  sample: 4.23.0
stdout:
  description: DNF's standard output of the task's last transaction (also kept in I(transaction_log)).
  returned: when DNF ran to its end while the module waited, and wrote something
  type: str
stderr:
  description: DNF's standard error of the task's last transaction (also kept in I(transaction_log)).
  returned: when DNF ran to its end while the module waited, and wrote something
  type: str
diff:
  description:
    - Installed NEVRAs before and after, one per line - those of the requested packages, then
      those of every other package that moved.
  returned: in diff mode, when something changed
  type: dict
"""
