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
  - When a transaction added, replaced or removed files under systemd's unit directories, the
    result says I(unit_files_changed) and a host-wide record under C(/var/lib/richt) tells the
    next richt.services.systemd_lifecycle task to reload systemd's manager.
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
      - One deadline for the version check, the transaction and its verification, as a
        positive Go duration (C(30s), C(1m30s), C(10m)). A timed-out task fails, is not
        retried, and reports that DNF may still complete the transaction.
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
  - A timed-out transaction reports C(changed=true) because DNF may have acted.
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
unit_files_changed:
  description: Whether the transaction added, replaced or removed files under systemd's unit directories.
  returned: always
  type: bool
  sample: true
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
  description: DNF's standard output.
  returned: when DNF ran
  type: str
stderr:
  description: DNF's standard error.
  returned: when DNF ran
  type: str
diff:
  description: Installed NEVRAs before and after, one per line.
  returned: in diff mode, when something changed
  type: dict
"""
