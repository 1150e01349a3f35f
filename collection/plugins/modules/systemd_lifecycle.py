# -*- coding: utf-8 -*-
# Documentation only: the module is the statically linked Go binary `systemd_lifecycle`
# beside this file (a link into the collection's bin/ directory).

DOCUMENTATION = r"""
module: systemd_lifecycle
short_description: One systemd unit's run state and boot state, with restart and reload reactions
version_added: "0.1.0"
description:
  - Puts one unit into a run state (I(state)) and, independently, a boot state (I(enabled)).
    Changing I(enabled) never starts, stops or restarts anything and is verified on its own.
  - Reacts to other tasks' changes. I(restart_on) and I(reload_on) take registered results;
    only triggers that changed count. Restart beats reload, many reloads are one reload, a
    unit that had to be started gets nothing more, and a unit that should be stopped ignores
    its triggers. A reload is never turned into a restart.
  - "Order of a run: parameters, the unit's lock, manager sync, observation, reload
    capability, decision, enable/disable, run-state action, verification."
  - Runs for one unit are serialized, with each other and with richt.services.unit_override
    runs for the same unit, by a lock file in the lock directory (C(/run/richt/lock) when run
    as root), held from the first read of the unit's records to the end of verification. So
    concurrent runs for one unit each carry out their own reaction instead of sharing one
    systemd job. The lock is waited for within I(timeout); a run that cannot get it in time
    fails, names the PID of the run holding it, and changes nothing.
  - "Manager sync: one C(systemctl daemon-reload) before deciding when systemd reports
    C(NeedDaemonReload=yes), when a changed trigger's result says the manager is behind its
    unit files (C(daemon_reload: needed), or C(unit_files_changed: true) without
    C(daemon_reload: performed)), when the host-wide record
    C(/var/lib/richt/manager-sync-due) holds any entry, when the unit is not found after a
    trigger reported C(package_changed), or when the unit files on disk and the manager
    disagree about reload capability (C(CanReload)). NeedDaemonReload alone misses changes:
    rpm restores a package's build-time mtime, so a downgraded unit file can differ while
    systemd says no."
  - "After its daemon-reload the module clears only the entries of the manager-sync record it
    read before reloading; an entry added meanwhile stays due. A record that cannot be read
    counts as due: the module reloads the manager (the reason names the file) and then
    removes the record."
  - "Verification polls systemd until the goal holds, under the same deadline as the action:
    start, restart and reload must reach C(active) and stay there for 300 ms (a process that
    exits at once is caught); stop must reach C(inactive) or C(failed). A failure reports the
    observed state and the unit's last journal lines."
  - "Durable reactions: a due restart or reload is recorded under C(/var/lib/richt/pending/)
    before it is attempted and cleared only after it was verified. A run that fails, times out
    or is interrupted leaves it, and the next run for the unit carries it out even if no
    trigger changed."
  - "A recorded reaction is not carried out again when the unit is running and became active
    after the reaction was recorded (for example a run that was killed after sending its
    restart, a package scriptlet, or an administrator restarted it). I(pending_from_earlier_run)
    then says C(already served), and outside check mode the record is cleared. This is decided on systemd's monotonic
    clock and the boot ID, so a changed wall clock does not matter, and a unit running after a
    reboot counts as started since."
  - "A pending-reaction record that cannot be read or names no known reaction fails the task
    with the file's path; which reaction was due is not guessed. Carry it out by hand and
    remove the file."
  - The state directories (C(/var/lib/richt), its C(pending) directory, and the lock
    directory) are refused when they are owned by another user than the one running the module
    or are writable by group or others; the error says how to fix them.
  - Talks to systemd over D-Bus (systemd's private socket, else the system bus) and falls back
    to C(systemctl) when neither answers. Needs no Python on the target.
options:
  unit:
    description:
      - The unit, for example C(demo), C(demo.service), C(web@blue.service). Without a type
        suffix C(.service) is added. A template without an instance is refused.
    type: str
    required: true
  state:
    description: The run state.
    type: str
    choices: [running, stopped]
    default: running
  enabled:
    description:
      - Whether the unit starts at boot. Omitted leaves it as it is.
      - Units whose unit file state is C(static), C(indirect), C(generated), C(transient) or
        C(alias) cannot be enabled or disabled; the task warns and changes nothing.
      - A C(masked) unit fails for C(enabled=true) (and for C(state=running)).
    type: bool
  timeout:
    description:
      - One deadline for the whole run (a positive Go duration such as C(5s), C(1m30s)),
        including the wait for the unit's lock, the daemon-reload, each action and its
        verification. A timed-out task fails; systemd keeps a job it already accepted, and a
        reaction already recorded as due stays recorded for the next run.
    type: str
    default: 5s
  restart_on:
    description:
      - Triggers that restart the unit if it is running. Each item is a registered result
        (C("{{ result }}"); for loops, any changed item counts), a boolean, or a mapping of
        names to those so messages can name them.
      - Trigger values are never echoed in the result, only summarised.
    type: list
    elements: raw
  reload_on:
    description:
      - Triggers that reload the unit if it is running; same forms as I(restart_on). A name
        may not appear in both lists.
      - When given, the unit must be reload-capable (a non-empty C(ExecReload=) after merging
        its fragment and drop-ins, or C(Type=notify-reload)); this is checked on every run,
        also when no trigger changed.
    type: list
    elements: raw
  allow_missing:
    description:
      - For removal flows, a unit that does not exist is fine when I(state=stopped) and
        I(enabled) is false or omitted.
    type: bool
    default: false
attributes:
  check_mode:
    support: full
    description: Observes for real and reports the actions the real run would take, including a daemon-reload.
  diff_mode:
    support: full
    description: Shows state and enabled before and after.
notes:
  - "Environment variable C(RICHT_SYSTEMD_BACKEND=dbus|systemctl) on the target forces one
    backend, for debugging."
  - A C(Type=oneshot) unit without C(RemainAfterExit=yes) never stays C(active), so
    I(state=running) fails its verification; use C(RemainAfterExit=yes).
extends_documentation_fragment:
  - richt.services.fast_path
author:
  - richt.services developers
"""

EXAMPLES = r"""
- name: Running and enabled, restarted when its package changed, reloaded when its config did
  richt.services.systemd_lifecycle:
    unit: demo.service
    enabled: true
    restart_on:
      - "{{ demo_pkg }}"
    reload_on:
      - config: "{{ demo_dropin }}"

- name: Stopped but enabled (starts at next boot)
  richt.services.systemd_lifecycle:
    unit: batch-worker
    state: stopped
    enabled: true

- name: Removal flow; a unit that is already gone is fine
  richt.services.systemd_lifecycle:
    unit: legacy.service
    state: stopped
    enabled: false
    allow_missing: true
"""

RETURN = r"""
unit:
  description: The normalised unit name.
  returned: always
  type: str
  sample: demo.service
before:
  description: State before the task.
  returned: when the unit was observed
  type: dict
  sample: {state: stopped, enabled: false, unit_file_state: disabled, load_state: loaded}
after:
  description: State after the task (in check mode, the predicted state).
  returned: when the unit was observed
  type: dict
  sample: {state: running, enabled: true, unit_file_state: enabled, load_state: loaded}
actions:
  description: What the task did or would do, in order.
  returned: always
  type: list
  elements: str
  sample: [daemon-reload, enable, start]
reaction:
  description: How the triggers were handled. C(none) also when a start absorbed them.
  returned: always
  type: str
  choices: [restart, reload, none, ignored]
triggers:
  description: The triggers that changed (their names, or where they came from such as C(restart_on[0])), and a pending reaction from an earlier run.
  returned: always
  type: list
  elements: str
pending_from_earlier_run:
  description:
    - A reaction that an earlier run recorded and that was still due, as
      C(REACTION due since TIME). I(reaction) and I(actions) show what this run did with it.
    - "Followed by C(; already served: the unit became active after it was recorded) when the
      unit had been (re)started since; the reaction is then not carried out again."
  returned: when there was one
  type: str
  sample: "restart due since 2026-11-30T13:58:01Z; already served: the unit became active after it was recorded"
daemon_reload_reasons:
  description: Why the manager was reloaded.
  returned: when a daemon-reload was due
  type: list
  elements: str
reload_capable:
  description: Whether the merged unit can reload, and which file decided it.
  returned: when reload_on is given
  type: dict
  sample: {capable: true, reason: "ExecReload= in /etc/systemd/system/demo.service.d/reload.conf"}
main_pid:
  description: The unit's main PID after this run started or restarted it; never returned after a stop or a reload.
  returned: after a verified start or restart, when systemd reports a main process
  type: int
journal:
  description: The unit's last journal lines.
  returned: when an action failed
  type: list
  elements: str
package_changed:
  description: Always false; this module changes no package. Present so that every module's result can be read the same way.
  returned: always
  type: bool
  sample: false
unit_files_changed:
  description: Always false; this module changes no unit file. Present so that every module's result can be read the same way.
  returned: always
  type: bool
  sample: false
daemon_reload:
  description:
    - C(performed) when this run reloaded systemd's manager (in check mode, when it would),
      otherwise C(none).
  returned: always
  type: str
  choices: [performed, none]
  sample: none
changed_at:
  description:
    - When the run changed something, on the target's clock, as RFC 3339 in UTC with
      nanoseconds. Set whenever I(actions) is not empty, also when the task then failed;
      absent in check mode.
  returned: when the run took an action, outside check mode
  type: str
  sample: "2026-11-30T13:58:01.123456789Z"
"""
