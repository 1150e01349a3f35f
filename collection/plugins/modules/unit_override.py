# -*- coding: utf-8 -*-
# Documentation only: the module is the statically linked Go binary `unit_override` beside
# this file (a link into the collection's bin/ directory).

DOCUMENTATION = r"""
module: unit_override
short_description: An owned systemd unit file or drop-in, written atomically, manager kept in sync
version_added: "0.1.0"
description:
  - Owns one file in C(/etc/systemd/system), the administrator's unit directory; either the
    full unit file C(/etc/systemd/system/UNIT) or, with I(name), the drop-in
    C(/etc/systemd/system/UNIT.d/NAME).
  - I(content) is parsed as a unit file before anything is written; content that does not
    parse fails the task with the line number (the line itself is never quoted) and the file
    on disk stays as it was.
  - Writes are atomic. A temporary file in the same directory is created private, given the
    final owner, group and mode, written, synced, and renamed over the target, and the
    directory is synced. A crash leaves the old or the new file, never a mix, and the content
    is never readable with looser permissions than I(mode). A temporary file that a killed
    run left behind for the same path is removed on the next run.
  - When the content changed (created, updated or removed) and I(daemon_reload) is true, the
    module runs C(systemctl daemon-reload) exactly once. With I(daemon_reload=false) it returns
    C(daemon_reload=needed) and adds an entry saying a sync is due to the host-wide record
    C(/var/lib/richt/manager-sync-due); the next richt.services.systemd_lifecycle task on the
    host performs it even without triggers. If the daemon-reload fails, the file stays
    written, the entry is added the same way, and the task fails with C(daemon_reload=needed).
    A change of mode, owner or group alone needs no daemon-reload.
  - The manager-sync record keeps a separate entry for each writer (each run of this module or
    of richt.services.rpm_exact that records a due sync). A daemon-reload by this module
    clears only the entries that were recorded before it started; an entry added while it ran
    stays due.
  - Runs for one unit are serialized, with each other and with
    richt.services.systemd_lifecycle runs for the same unit, by a lock file in the lock
    directory (C(/run/richt/lock) when run as root). The lock is waited for within I(timeout);
    a run that cannot get it in time fails, names the PID of the run holding it, and changes
    nothing.
  - The state directories (C(/var/lib/richt) and the lock directory) are refused when they are
    owned by another user than the one running the module or are writable by group or others;
    the error says how to fix them.
  - Reports whether the merged unit (fragment plus drop-ins in systemd's order) can reload.
  - Needs no Python on the target.
options:
  unit:
    description:
      - The unit, for example C(demo.service); without a type suffix C(.service) is added.
    type: str
    required: true
  name:
    description:
      - The drop-in file name, ending in C(.conf), for example C(10-limits.conf). Omitted means
        the full unit file.
    type: str
  content:
    description:
      - The file's content, in unit file syntax. Required for I(state=present).
    type: str
  path:
    description:
      - The file's path. Only the default location is allowed; the option exists so a playbook
        can state the path it expects, and the task fails if it differs.
    type: path
  mode:
    description:
      - The file mode, as an octal string such as C("0644") or C("0600").
      - A mode that lets group or others write the file, or that sets the setuid, setgid or
        sticky bit, is refused before anything is read or written; use C(0644) or stricter.
      - When I(owner) is not root and the mode lets the owner write, the task warns that this
        user can change what systemd runs as root (it is not refused).
    type: raw
    default: "0644"
  owner:
    description:
      - The file's owner, a name or a numeric uid. It must exist on the target, also when given
        as a number; an unknown owner fails the task before anything is written.
    type: str
    default: root
  group:
    description:
      - The file's group, a name or a numeric gid. It must exist on the target, also when given
        as a number; an unknown group fails the task before anything is written.
    type: str
    default: root
  sensitive:
    description:
      - Keep I(content) out of the result, the diff and C(invocation) (masked as
        C(VALUE_SPECIFIED_IN_NO_LOG_PARAMETER)). Changes still count (changed, daemon-reload,
        reactions). It does not change the file's mode; set I(mode=0600) for that.
    type: bool
    default: false
  state:
    description:
      - Whether the file should exist. C(absent) also removes an emptied C(UNIT.d) directory.
    type: str
    choices: [present, absent]
    default: present
  daemon_reload:
    description:
      - Reload systemd's manager when the file's content changed.
    type: bool
    default: true
  timeout:
    description:
      - One deadline, a positive Go duration, for waiting for the unit's lock, the
        daemon-reload, and updating the manager-sync record.
    type: str
    default: 30s
attributes:
  check_mode:
    support: full
    description: Reports the operation, the daemon-reload it would run and the predicted reload capability.
  diff_mode:
    support: full
    description: The file before and after (with a line for mode and owner); for sensitive files only that line and a note.
notes:
  - Drop-in order as systemd applies it, which this module uses for I(reload_capable) - all
    C(*.conf) files from C(service.d), the dash-prefix directories, the template's C(NAME@.service.d)
    and C(UNIT.d) under C(/etc/systemd/system), C(/run/systemd/system),
    C(/usr/local/lib/systemd/system) and C(/usr/lib/systemd/system), sorted by file name; a
    same-named file in a higher-priority directory replaces the lower one.
extends_documentation_fragment:
  - richt.services.fast_path
author:
  - richt.services developers (@richt)
"""

EXAMPLES = r"""
- name: A reload command for a packaged unit that lacks one
  richt.services.unit_override:
    unit: demo.service
    name: 10-reload.conf
    content: |
      [Service]
      ExecReload=/bin/kill -HUP $MAINPID
  register: demo_reload

- name: A secret in the environment, private file, hidden from output
  richt.services.unit_override:
    unit: demo.service
    name: 20-token.conf
    mode: "0600"
    sensitive: true
    content: |
      [Service]
      Environment=TOKEN={{ vault_token }}

- name: Leave the reload to the lifecycle task that follows
  richt.services.unit_override:
    unit: demo.service
    name: 30-limits.conf
    daemon_reload: false
    content: |
      [Service]
      LimitNOFILE=65536
"""

RETURN = r"""
unit:
  description: The normalised unit name.
  returned: always
  type: str
path:
  description: The file's path.
  returned: always
  type: str
  sample: /etc/systemd/system/demo.service.d/10-reload.conf
state:
  description: The requested state.
  returned: always
  type: str
operation:
  description: What was (or would be) done to the file.
  returned: always
  type: str
  choices: [create, update, attributes, remove, none]
plan:
  description:
    - The steps of the run, in order, as the module decided them before acting; check mode
      reports the same steps a real run then carries out.
    - C(secure-directory) (a drop-in directory that someone other than root owns or can
      write is made root's and not writable by group or others first; a drop-in directory
      that links out of /etc/systemd/system, or a unit directory others can write, fails
      the task and nothing is written), C(remove-stale) (temporary files a killed run left),
      C(record-reload-due) (the manager reload the change owes, recorded on the target
      before the file moves), C(write), C(set-attributes), C(remove), C(daemon-reload).
  returned: always
  type: list
  elements: str
  sample: [record-reload-due, write, daemon-reload]
package_changed:
  description: Always false; this module changes no package. Present so that every module's result can be read the same way.
  returned: always
  type: bool
  sample: false
unit_files_changed:
  description:
    - Whether the file's content changed (created, updated or removed); a change of mode,
      owner or group alone does not count. In check mode, the predicted value.
    - One of the keys a later task's I(restart_on) or I(reload_on) reads.
  returned: always
  type: bool
  sample: true
daemon_reload:
  description:
    - C(performed) when the module reloaded the manager after the content changed.
    - C(needed) when it left the reload to a later task (I(daemon_reload=false), or the
      daemon-reload failed); an entry in the manager-sync record on the target says so too.
    - C(none) when the content did not change.
    - In check mode, what the real run would report, but C(planned) for C(performed) - nothing
      was reloaded.
  returned: always
  type: str
  choices: [performed, planned, needed, none]
  sample: performed
changed_at:
  description:
    - When the change was made, on the target's clock, as RFC 3339 in UTC with nanoseconds.
    - Set whenever the task changed the file, a mode, owner or group change included; absent
      in check mode.
  returned: when the task changed the file, outside check mode
  type: str
  sample: "2026-11-30T13:58:01.123456789Z"
files_placed:
  description:
    - When the file's new content was in place (or the file gone), in systemd's clock (boot ID
      and CLOCK_MONOTONIC microseconds), read under the unit's lock right after the move. A
      systemd_lifecycle run whose unit was reloaded (a verified reload) or became active after
      it takes the reaction this change asks for as served.
  returned: when the task replaced or removed the file, outside check mode
  type: dict
  version_added: "0.2.0"
  sample: {boot_id: "3f1c0a9e6c1d4d2e9b1f7f0c2a4e5d6b", monotonic_us: 123456789}
reload_capable:
  description: Whether the merged unit can reload after the change, and which file decided it; null when it could not be determined (a warning says why).
  returned: always
  type: dict
  sample: {capable: true, reason: "ExecReload= in /etc/systemd/system/demo.service.d/10-reload.conf"}
"""
