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
  - "A run goes Observe, Plan, Apply. Observe: parameters, the unit's lock, manager sync,
    observation, reload capability. Plan: one decision made from those facts alone (the same
    facts always give the same plan): the steps, in this order: a stop before a mask, the
    mask or unmask, enable or disable, then at most one run-state action (start, stop,
    restart or reload); and the state they lead to. Apply: each step is carried out and verified in that order. After an
    unmask, enable or disable the unit is observed again and the rest is decided again, so
    the run-state action always follows from the state observed just before it. The
    run-state action must then settle (I(settle)); the health probe (I(health)) starts as
    soon as systemd's job is done and runs while the unit settles, and the task ends when
    both hold. One step moves ahead: when the run reloads systemd's manager anyway (a
    manager sync, C(daemon-reload) in I(actions)) and the unit's file state is plainly the
    opposite of I(enabled) (C(disabled) or C(enabled)), the enable or disable comes first,
    over D-Bus, so that one reload serves both, and I(actions) lists it before
    C(daemon-reload). Enabling works on the unit's files, not on what the manager loaded."
  - "In check mode the plan is the answer: its steps are I(actions), the state they lead to
    is I(after), and nothing is applied, so nothing settles and no probe runs."
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
  - "A manager reload a package's scriptlet already did is not repeated: when the manager's
    last load of its units (C(UnitsLoadTimestampMonotonic), systemd 252 and later) began
    after every unit file of a change was in place - the change's C(files_placed) for a
    trigger, and for the manager-sync record the time C(rpm_exact) recorded with its entry
    (none when a unit file was removed) - that change asks for no daemon-reload, the entries
    it served are cleared, and I(daemon_reload_served) says so. C(NeedDaemonReload=yes), a
    drop-in, or anything that cannot say when it was placed still reloads."
  - "After its daemon-reload the module clears only the entries of the manager-sync record it
    read before reloading; an entry added meanwhile stays due. A record that cannot be read
    counts as due: the module reloads the manager (the reason names the file) and then
    removes the record."
  - "Verification polls systemd until the goal holds, under the same deadline as the action:
    start, restart and reload must reach C(active) and stay there, with the same invocation,
    for the settle time (by default 300 ms after a start or restart, so a process that exits
    at once is caught, and none after a reload; with I(health) the passing probe stands in
    for it, and the start's invocation must still be the active one after the probe; see
    I(settle)); stop must reach C(inactive)
    or C(failed). A failure reports the observed state and the unit's last journal lines."
  - "Durable reactions: a due restart or reload is recorded under C(/var/lib/richt/pending/)
    (with I(scope=user), C(~/.local/state/richt/pending/)) as soon as the unit is observed,
    before a daemon-reload, an enable or an unmask could fail, and again just before it is
    attempted and cleared only after it was verified. A run that fails, times out
    or is interrupted leaves it, and the next run for the unit carries it out even if no
    trigger changed."
  - "A reaction refused before acting is not recorded: I(reload_on) on a unit that cannot
    reload fails the task and leaves no pending reload (a restart a changed I(restart_on) owes
    is still recorded). A pending record that cannot be carried out as recorded - one this
    version cannot read, or a reload of a unit that shows C(CanReload=no) - is never sent to
    systemd: a restart, a start or a stop the run makes anyway clears it; otherwise the first
    run that meets it fails once, naming the file and how to clear it (a restart, by a changed
    I(restart_on) or C(systemctl restart UNIT)), and marks it reported; later runs warn and go
    on until a restart clears it."
  - "A recorded reaction is not carried out again when the unit is running and became active
    after the reaction was recorded (for example a run that was killed after sending its
    restart, a package scriptlet, or an administrator restarted it). I(pending_from_earlier_run)
    then says C(already served), and outside check mode the record is cleared. This is decided on systemd's monotonic
    clock and the boot ID, so a changed wall clock does not matter, and a unit running after a
    reboot counts as started since."
  - "A restart already done by a package transaction is not done again. When every changed
    I(restart_on) trigger carries C(files_placed) (for a loop result, every changed item),
    and the unit, running when it was observed, became active (its
    C(ActiveEnterTimestampMonotonic)) after all of those moments, or on a later boot, the
    restart the triggers ask for has already happened. C(files_placed) is the newest inode
    change among the files rpm wrote in the transaction and nobody wrote since (not
    C(%ghost) files, not files whose modification time is no longer the one rpm set, such
    as a state file the restarted service writes), plus one tick of the kernel's coarse
    clock that file times come from: a start within that tick counts as not served, and
    the restart is done again rather than possibly lost. Other triggers are judged on
    their own: a drop-in written after the transaction gets its own restart or reload. EL packages restart their
    units in the transaction (C(%systemd_postun_with_restart); on EL9 and EL10 that restart
    runs at the end of the transaction, after systemd reloaded the unit files). The unit is
    then not restarted again: I(reaction) is C(served) and I(restart_served) names the
    triggers. richt.services.rpm_exact results carry C(files_placed) when their transaction
    installed builds. A changed trigger without it (a richt.services.unit_override or
    ansible.builtin.template result, a boolean) always restarts the unit as before. I(reload_on) triggers
    still reload, a reaction pending from an earlier run is carried out as described above,
    and a daemon-reload that a trigger asks for still happens. See the notes for a known
    limit."
  - "A pending-reaction record that cannot be read or names no known reaction fails the task
    with the file's path; which reaction was due is not guessed. Carry it out by hand and
    remove the file."
  - The state directories (C(/var/lib/richt), its C(pending) directory, and the lock
    directory) are refused when they are owned by another user than the one running the module
    or are writable by group or others; the error says how to fix them.
  - Talks to systemd over D-Bus (systemd's private socket, else the system bus) and falls back
    to C(systemctl) when neither answers. With I(scope=user) it talks to the user manager's
    private socket, else C(systemctl --user). Needs no Python on the target.
options:
  unit:
    description:
      - The unit, for example C(demo), C(demo.service), C(web@blue.service). Without a type
        suffix C(.service) is added. A template without an instance is refused.
    type: str
    required: true
  state:
    description:
      - The run state.
    type: str
    choices: [running, stopped]
    default: running
  enabled:
    description:
      - Whether the unit starts at boot. Omitted leaves it as it is.
      - Units whose unit file state is C(static), C(indirect), C(generated), C(transient) or
        C(alias) cannot be enabled or disabled; the task warns and changes nothing.
      - A C(masked) unit fails for C(enabled=true) (and for C(state=running)) unless
        C(masked=false) unmasks it first.
    type: bool
  timeout:
    description:
      - One deadline for the whole run (a positive Go duration such as C(5s), C(1m30s)),
        including the wait for the unit's lock, the daemon-reload, each action and its
        verification, the settle time and every attempt of the health probe. A timed-out task
        fails; systemd keeps a job it already accepted, and a reaction already recorded as due
        stays recorded for the next run.
    type: str
    default: 5s
  restart_on:
    description:
      - Triggers that restart the unit if it is running. Each item is a registered result (C("{{
        result }}"); for loops, any changed item counts), a boolean, or a mapping of names to
        those so messages can name them.
      - Trigger values are never echoed in the result, only summarised.
      - A restart is left out when the triggers' results say when their files were in place
        (C(files_placed)) and the unit became active after that (I(reaction=served)); see the
        description.
      - The item C(libraries) restarts the unit when any process of its control group (a forking
        daemon's workers too) maps a regular file that was replaced or deleted since it mapped
        it (a library update, whatever made it), read from C(/proc/PID/maps); it merges with the
        other triggers. A unit with C(RefuseManualStop=yes) is never restarted for it, only
        reported (C(libraries), a warning). A unit whose I(restart_on) does not name it is
        reported the same way, in check mode too; see docs/libraries.md.
    type: list
    elements: raw
  reload_on:
    description:
      - Triggers that reload the unit if it is running; same forms as I(restart_on). A name may
        not appear in both lists.
      - When given, the unit must be reload-capable (a non-empty C(ExecReload=) after merging
        its fragment and drop-ins, or C(Type=notify-reload)); this is checked on every run, also
        when no trigger changed.
    type: list
    elements: raw
  facts_from:
    description:
      - Changes that ask for no reaction but tell the run what the manager must load; same forms
        as I(restart_on). A changed unit file (C(unit_files_changed)) plans the manager reload,
        and a changed package (C(package_changed)) lets a unit the package installs be planned
        for, also in check mode, where it is not installed yet.
      - The C(service) module passes every process its service's changes here, so that a process
        naming its reactions still plans from them.
    type: list
    elements: raw
    version_added: "0.2.0"
  allow_missing:
    description:
      - For removal flows, a unit that does not exist is fine when I(state=stopped) and
        I(enabled) is false or omitted.
    type: bool
    default: false
  scope:
    description:
      - C(system) manages a unit of the system manager. C(user) manages a unit of the own
        manager (C(systemctl --user)) of the user the module runs as, which with become is the
        I(become_user).
      - See the notes for how the user manager is found and where records and locks are kept.
    type: str
    choices: [system, user]
    default: system
    version_added: "0.2.0"
  masked:
    description:
      - C(true) masks the unit, stopping it first if it runs; C(false) unmasks it. Omitted
        leaves the mask as it is.
      - "C(true) is refused together with I(state=running) or I(enabled=true), before anything
        is observed. I(state) defaults to C(running), so C(masked: true) needs C(state:
        stopped)."
      - See the notes for what masking and unmasking do.
    type: bool
    version_added: "0.2.0"
  settle:
    description:
      - How long the unit must stay C(active), with the same invocation, after a run-state
        action before the action counts as verified. A Go duration of zero or more, such as
        C(0s), C(300ms) or C(2s).
      - Omitted, it is 300 ms after a start or restart and 0 after a reload; with I(health) it
        is 0 after a start or restart too, since a process that answers its probe has proved
        more, and the unit must still be active with the start's invocation once the probe
        passed. Given, it applies to every run-state action. See the notes.
      - "After a signalled reload with I(health) (a unit that is not C(Type=notify-reload): its
        C(ExecReload=) signals the daemon and returns) it is 1 s when omitted, and every probe
        attempt during it must pass; see the notes."
    type: str
    version_added: "0.2.0"
  health:
    description:
      - One probe that checks whether the unit's service answers, as a mapping with exactly one
        of I(tcp), I(http) or I(banner); I(expect) goes with I(banner) and only with it.
      - The mapping is validated when the task starts; a malformed probe fails the task before
        systemd is asked anything.
      - "Host names and addresses: an IPv6 address goes in brackets (C([::1]:8080)); a wildcard
        host (C(0.0.0.0), C([::]), C(*), or none as in C(:8080)) is an address to listen on, not
        to connect to, so the probe connects to loopback instead (C([::1]) for an IPv6 wildcard,
        C(127.0.0.1) otherwise). Ports are 1 to 65535."
      - See the notes for when probes run and what a failure reports.
    type: dict
    version_added: "0.2.0"
    suboptions:
      tcp:
        description:
          - C(HOST:PORT). Healthy when a TCP connection to it is accepted.
        type: str
      http:
        description:
          - An C(http://) URL. Healthy when a C(GET) of it is answered with any 2xx status.
          - "Only C(http): C(https) and every other scheme are refused, because a probe of
            loopback cannot verify the certificate of the public name the service is published
            under."
          - Without a port the probe uses port 80; an empty port (C(http://host:/)) is refused,
            and so is a URL with credentials (C(user@host)).
          - "Redirects are not followed: a 3xx answer is unhealthy, and the message names where
            it pointed (C(Location))."
          - "The request is a plain HTTP/1.0 C(GET) with C(Connection: close), sent straight to
            the URL's address, never through a proxy."
        type: str
      banner:
        description:
          - "C(HOST:PORT). Connects and reads what the server sends first: at most 4096 bytes,
            stopping at the first newline, at the end of the stream, at the deadline, or as soon
            as I(expect) has been read."
          - Healthy when I(expect) occurs anywhere in what was read. A server that sends nothing
            is unhealthy.
        type: str
      expect:
        description:
          - The text the greeting must contain, for I(banner) only; at most 4096 bytes.
        type: str
attributes:
  check_mode:
    support: full
    description: Observes for real and reports the actions the real run would take, including a daemon-reload; after an unmask, only the unmask (see the notes).
  diff_mode:
    support: full
    description: Shows state and enabled before and after.
notes:
  - "Environment variable C(RICHT_SYSTEMD_BACKEND=dbus|systemctl) on the target forces one
    backend, for debugging."
  - A C(Type=oneshot) unit without C(RemainAfterExit=yes) never stays C(active), so
    I(state=running) fails its verification; use C(RemainAfterExit=yes).
  - "Check mode and unmasking: an unmask loads the unit again, and what it then needs
    (enable, start, ...) depends on the unit it turns out to be. A real run observes the unit
    again after the unmask and decides the rest then. Check mode cannot, so it reports only
    C(unmask), with a warning that what follows is decided once the unit is loaded."
  - "Settle: without I(settle), a start or restart must stay C(active) for 300 ms, because a
    C(Type=simple) service whose program exits at once is C(active) until it exits; a reload
    keeps its process, so the job's result is enough (0). An explicit I(settle) applies to
    every run-state action, reload included; after a stop the unit must then stay
    C(inactive) or C(failed) that long (the stop before a mask is verified without it). The
    unit must stay C(active) with the same invocation: one that fails or stops meanwhile
    fails the task, and so does one that systemd starts again (a new C(InvocationID)). The
    settle time counts against I(timeout)."
  - "A reload is proven only once it took effect. systemd's reload job ends when
    C(ExecReload=) returns, which for C(nginx -s reload) or C(kill -HUP $MAINPID) is when the
    signal was sent, before the daemon acted on it; only C(Type=notify-reload) waits for the
    service. So after a reload of any other unit, when I(health) is set: the processes the
    unit had before the reload must have stopped exiting for 250 ms (C(quiet 250ms) in
    I(plan); nginx's old workers go once the new ones serve), then for the settle (1 s
    unless I(settle) says otherwise) every probe attempt, one each 100 ms, must pass while the
    unit stays active with the same invocation. A failure there fails the task as the
    reload's failure (C(reload of UNIT not proven)); the reload is not left pending. Both
    waits count against I(timeout)."
  - "A reload already done is not done again: a reload trigger whose result says when its
    files were in place (C(files_placed); unit_override and the service module's configs
    do) is served
    (I(reaction=served), I(reload_served)) when the unit's last verified reload was sent
    after that, or the unit became active after it. Every verified reload is recorded in
    C(/var/lib/richt/reloaded/UNIT.json) for this. Two runs of one service that change one
    config so reload once, whichever reaches the process first."
  - "Health probes run after a start, restart or reload (while the unit settles), and on every other run with
    I(state=running) (a converged unit, or one that was only enabled or disabled). They do
    not run with I(state=stopped) or in check mode. A failing probe is tried again every
    100 ms until it passes or I(timeout), the task's one deadline, ends. Then the task fails
    with a message that names the probe, the number of attempts, the last evidence (the
    connection error, the HTTP status, or the greeting that was read) and the unit's last
    journal lines. A probe never restarts anything; a restart or reload it follows is
    already done and is not left pending for the next run."
  - "Masking with C(masked: true): a running unit is stopped first (verified), then masked,
    and the mask is verified (C(LoadState=masked)). A unit that does not exist can be masked
    too. Due reactions are ignored (I(reaction=ignored)), and I(enabled=false) takes no step
    of its own. A mask is a link to C(/dev/null) named after the unit in
    C(/etc/systemd/system), so a unit whose own file is in C(/etc/systemd/system) cannot be
    masked; the task fails and says to remove that file instead."
  - "Unmasking with C(masked: false) removes the mask and verifies that the unit is no longer
    masked, then continues as the plan describes; on a unit that is not masked it does
    nothing. A masked unit with I(masked) omitted fails for I(state=running) or
    I(enabled=true), and for I(state=stopped) is only stopped if it still runs."
  - "User scope (C(scope: user)): the user manager is found where systemd runs it, at
    C(/run/user/UID), without C(XDG_RUNTIME_DIR) or a session bus in the environment, so it
    works through I(become_user) (and su or sudo). It needs a running user manager: lingering
    (C(loginctl enable-linger USER)) or a login session; without one the task fails and
    names the missing socket C(/run/user/UID/systemd/private). The user's records (pending
    reactions, manager-sync record) are kept in C(~/.local/state/richt), with the home taken
    from the user database rather than C($HOME), so the host-wide records in
    C(/var/lib/richt) are not read; its locks are in C(/run/user/UID/richt/lock). Journal
    lines come from C(journalctl --user-unit)."
  - "Known limit: in check mode a due daemon-reload is not performed, and the reload
    capability that I(reload_on) needs is then read from the unit files on disk, in the
    system unit directories only. A user unit's file is normally not there, so with
    C(scope: user), I(reload_on) and a daemon-reload due, check mode fails the unit as not
    reload-capable (no unit file found) even when it is."
  - "Known limit of I(reaction=served): EL8-style scriptlets restart the unit before the
    transaction reloads systemd's manager. The restarted process then runs the new files,
    but systemd started it with the unit definition it had loaded before, which matters
    when the transaction changed the unit's own file or drop-ins. The restart still counts
    as served, as it would on that host without this module: C(NeedDaemonReload) cannot
    tell (it also turns yes for a drop-in written after the transaction, and for a unit
    file only when its whole-second modification time is newer than the loaded one's),
    and deciding by it repeated restarts that EL9 and EL10 scriptlets had done."
  - "Unit types: timers, sockets, paths and targets are managed like services, and as for
    services I(state=running) means C(active) (for example a timer that is waiting or a
    socket that is listening). I(main_pid) is returned for services only."
extends_documentation_fragment:
  - richt.services.fast_path
author:
  - richt.services developers (@richt)
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

- name: Running, and healthy only once its greeting says "demo ready"
  richt.services.systemd_lifecycle:
    unit: demo.service
    timeout: 20s
    health:
      banner: 127.0.0.1:8080
      expect: demo ready

- name: Healthy when GET /healthz answers 2xx (a redirect is unhealthy); 0.0.0.0 probes 127.0.0.1
  richt.services.systemd_lifecycle:
    unit: web.service
    health:
      http: http://0.0.0.0:8080/healthz

- name: Healthy when the port accepts a connection
  richt.services.systemd_lifecycle:
    unit: db.service
    health:
      tcp: 127.0.0.1:5432

- name: Must stay up 2s, with the same invocation, after every start, restart or reload
  richt.services.systemd_lifecycle:
    unit: worker.service
    settle: 2s
    timeout: 10s
    restart_on:
      - "{{ worker_pkg }}"

- name: Masked, stopped first if it runs (masked needs state stopped)
  richt.services.systemd_lifecycle:
    unit: cups.service
    state: stopped
    masked: true

- name: Unmasked, then enabled and started (check mode shows only the unmask)
  richt.services.systemd_lifecycle:
    unit: cups.service
    masked: false
    enabled: true

- name: A timer, armed now and at boot
  richt.services.systemd_lifecycle:
    unit: backup.timer
    enabled: true

- name: A user's own unit, through become_user (needs lingering or a session for alice)
  become: true
  become_user: alice
  richt.services.systemd_lifecycle:
    unit: hello.service
    scope: user
    enabled: true
"""

RETURN = r"""
unit:
  description: The normalised unit name.
  returned: always
  type: str
  sample: demo.service
summary:
  description:
    - "What this run did to the unit and why, in one line - C(UNIT: ACTIONS (WHY)), C(UNIT:
      nothing (converged)); in check mode C(UNIT: would ACTIONS (WHY)); after a failure, how
      far the run got. WHY names the triggers that changed (C(config:env)), a reaction due from
      an earlier run, or C(was stopped) for a start."
    - The collection's action plugin prints it as C([HOST] LINE) at the default verbosity
      (not for a no_log task).
  returned: always
  type: str
  sample: "demo.service: reload (config:env)"
before:
  description: State before the task.
  returned: when the unit was observed
  type: dict
  sample: {state: stopped, enabled: false, unit_file_state: disabled, load_state: loaded}
after:
  description:
    - State after the task (in check mode, the predicted state).
    - A mask predicted in check mode shows as C(load_state) and C(unit_file_state) C(masked).
  returned: when the unit was observed
  type: dict
  sample: {state: running, enabled: true, unit_file_state: enabled, load_state: loaded}
plan:
  description:
    - Every step the run decided, in order; check mode reports the steps a real run takes.
    - Before the run state, as they apply, C(report-pending) (a pending record that cannot
      be carried out as recorded, marked reported before the run fails for it), C(record-pending) (the due reaction of a running
      unit, recorded on the target before anything can fail), C(enable) or C(disable) ahead of a manager
      reload, C(daemon-reload); then the run state's steps (C(stop), C(mask), C(unmask),
      C(enable), C(disable), C(start), C(restart), C(reload)), each run-state step with
      what verifies it (C(stamp-pending) before it when a reaction is owed, stamping the
      pending record again so that a later activation proves this job ran; C(settle)
      and its time after it), C(clear-pending) when a pending record is settled, and
      C(probe) when a health probe runs.
    - Unlike I(actions), it also names steps that change no unit and the checks.
  returned: always
  type: list
  elements: str
  sample: [record-pending, daemon-reload, stamp-pending, restart, settle 300ms, clear-pending]
actions:
  description:
    - What the task did or would do, in order. The steps are C(daemon-reload), C(stop),
      C(mask), C(unmask), C(enable), C(disable), C(start), C(restart) and C(reload).
    - "After an unmask a real run lists what it decided next as well (for example C(unmask),
      C(enable), C(start)); check mode lists only C(unmask)."
  returned: always
  type: list
  elements: str
  sample: [daemon-reload, enable, start]
reaction:
  description:
    - How the triggers were handled. C(none) also when a start absorbed them.
    - C(served) when the restart the changed I(restart_on) triggers ask for had already
      happened after their files were in place (see I(restart_served)), so the unit was not
      restarted again and no other reaction was due.
  returned: always
  type: str
  choices: [restart, reload, served, none, ignored]
triggers:
  description:
    - The triggers that changed (their names, or where they came from such as C(restart_on[0])),
      and a pending reaction from an earlier run (a record this run wrote, as the service module
      does ahead of its steps, is not one).
  returned: always
  type: list
  elements: str
libraries:
  description:
    - "The unit's processes that map regular files replaced or deleted since they mapped them
      (C(processes), by PID, each with its C(command) and at most 10 C(files) with the
      C(package) that owns each path now; C(more_files), C(more_processes) count the rest),
      and C(reaction) - C(restart) when I(restart_on) names C(libraries), else C(reported:
      restart_on does not name libraries) or C(reported: RefuseManualStop=yes)."
    - C(manager) lists the service manager's (PID 1) own stale files; it is never acted on.
  returned: when a process of the unit, or the manager, maps a replaced file
  type: dict
  version_added: "0.2.0"
  sample: {reaction: restart, processes: [{pid: 812, command: fixd, files: [{path: /usr/lib/richt/libfix.so.1, package: libfix}]}]}
pending_from_earlier_run:
  description:
    - A reaction that an earlier run recorded and that was still due, as
      C(REACTION due since TIME). I(reaction) and I(actions) show what this run did with it.
    - "Followed by C(; already served: the unit became active after it was recorded) when the
      unit had been (re)started since; the reaction is then not carried out again."
  returned: when there was one
  type: str
  sample: "restart due since 2026-11-30T13:58:01Z; already served: the unit became active after it was recorded"
restart_served:
  description:
    - Names the changed I(restart_on) triggers whose restart had already happened - every
      one of them carries C(files_placed) and the unit, running and not waiting for a
      daemon-reload, became active after the latest of those moments - and says why no
      restart follows.
    - I(reaction) shows what the run did then - C(served), or C(reload) when a I(reload_on)
      trigger changed too, or C(restart) when a restart from an earlier run was still
      pending.
  returned: when the restart_on triggers' restart was found already done
  type: str
  version_added: "0.2.0"
  sample: "the restart packages asked for was already done: the unit became active after the
    change had put its files in place (a package transaction restarts its units in its scriptlets)"
reload_served:
  description:
    - Names the changed I(reload_on) triggers whose reload had already happened - every one
      of them carries C(files_placed), and the unit's last verified reload (another run's,
      recorded in C(/var/lib/richt/reloaded/UNIT.json)) was sent after the latest of those
      moments, or the unit became active after it - and says why no reload follows.
  returned: when the reload_on triggers' reload was found already done
  type: str
  version_added: "0.2.0"
  sample: "the reload config:main asked for was already done: a verified reload of the unit
    (another run's) was sent, or the unit became active, after the change had put its files in place"
daemon_reload_reasons:
  description: Why the manager was reloaded.
  returned: when a daemon-reload was due
  type: list
  elements: str
daemon_reload_served:
  description:
    - Why a change's unit files asked for no daemon-reload - the manager loaded its units after
      they were all in place, as a package scriptlet's C(systemctl daemon-reload) does.
  returned: when the manager's last load served a change that would have asked for one
  type: str
  version_added: "0.2.0"
  sample: "the manager loaded its units after the change's unit files were all in place (a package scriptlet's daemon-reload): not reloaded again"
reload_capable:
  description: Whether the merged unit can reload, and which file decided it.
  returned: when reload_on is given
  type: dict
  sample: {capable: true, reason: "ExecReload= in /etc/systemd/system/demo.service.d/reload.conf"}
main_pid:
  description: The unit's main PID after this run started or restarted it; never returned after a stop or a reload, nor for a unit that is not a service.
  returned: after a verified start or restart, when systemd reports a main process
  type: int
journal:
  description: The unit's last journal lines.
  returned: when an action or the health probe failed
  type: list
  elements: str
health:
  description:
    - What the health probe (I(health)) found.
    - "Returned after the probe ran: when I(health) is given with I(state=running) and the
      run got as far as the probe; never in check mode. When I(healthy) is false the task
      failed."
  returned: when the health probe ran
  type: dict
  contains:
    probe:
      description:
        - The probe as run, with the address it connected to; a wildcard host shows as
          loopback, followed by what was given.
      type: str
      sample: 'GET http://127.0.0.1:8080/healthz (given as http://0.0.0.0:8080/healthz)'
    attempts:
      description: How many attempts were made, the last one passing when healthy.
      type: int
      sample: 3
    healthy:
      description: Whether an attempt passed before the deadline.
      type: bool
      sample: true
  sample: {probe: 'banner 127.0.0.1:8080 expecting "demo ready"', attempts: 1, healthy: true}
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
    - C(performed) when this run reloaded systemd's manager; in check mode C(planned) when it
      would; otherwise C(none).
  returned: always
  type: str
  choices: [performed, planned, none]
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
