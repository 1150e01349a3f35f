# -*- coding: utf-8 -*-
# Documentation only: the module is the statically linked Go binary `service` beside this
# file (a link into the collection's bin/ directory).

DOCUMENTATION = r"""
module: service
short_description: One whole service - packages, configs, owned unit files and drop-ins, processes - in one task
version_added: "0.2.0"
description:
  - Puts one service into its state in one task and one process on the target, the way the
    richt.services.service role declares it - binaries (I(packages)), then the files its
    daemons read (I(configs)), then owned unit files and drop-ins (I(units), I(dropins)),
    then processes (I(processes)) - or removes it.
  - Each step is made in process, with the rules of the collection's module for it -
    richt.services.rpm_exact for the packages (one set, one DNF transaction), the configs
    written by the service itself, richt.services.unit_override for each unit file and
    drop-in (without a manager reload of its own), richt.services.systemd_lifecycle for each
    process in order (the first that needs it reloads systemd's manager once). Each step's
    result is under I(packages), I(configs), I(files) and I(processes).
  - "Configs are written after the packages step, so a directory a package installs exists,
    and before the unit files: atomically, at the path never looser than the final mode and owner,
    never through a symbolic link, and never into a directory that others can write. Every
    directory above a config must be owned by root or by the config's own I(owner), and may
    be group-writable only when its group is root or, in a directory the config's non-root
    I(owner) owns, the config's I(group) (so Debian's C(/etc/redis), redis:redis 2770, holds a
    config owned by redis, while a root-owned config in root:nginx 0775 is refused); a
    directory writable by others is refused, naming it. A missing directory fails the step
    naming it; none is created."
  - A config's I(validate) runs as root on a copy of the new content in a directory only root
    can read (under C(/run/richt/validate)), never on a file in the config's directory, whose
    writer could swap it; the file written stays root's (mode 0600) until it replaces the old
    one, and gets its final owner and mode only then. A config under systemd's unit
    directories is root's, in directories only root can write. When the validator fails, the
    task fails naming the config and the validator's output, and nothing changes - not that
    file, not any file after it, no reaction.
  - "A process names what it reacts to with I(restart_on) and I(reload_on): references to
    the service's own parts (C(package:NAME), C(config:NAME), C(unit:UNIT),
    C(dropin:UNIT/NAME)) and, as in richt.services.systemd_lifecycle, registered results,
    booleans or mappings of names to those, for changes made by tasks outside the service.
    What a process declares is the whole truth: an unrelated change gets no reaction. An
    unknown reference, or one part in both lists, is refused before anything is done."
  - "A process that declares neither gets the default wiring: a package change restarts
    every process of the service (unless the package's own scriptlet already restarted it
    after the transaction had put its files in place); a changed config restarts every
    running process of the service; a changed unit file or drop-in of a unit restarts that
    unit's process, or reloads it when the drop-in says I(reload)."
  - "Why a config restarts by default: the service cannot tell which process reads which
    file, and a changed config that nothing reacts to would leave the daemon on its old
    configuration while the task reports the change. Restart is the one reaction every unit
    supports; a reload needs a reload-capable unit, which a process that names no reaction
    never promised. Name I(reload_on) (C(config:NAME)) to reload instead, or name the
    reactions to restart only for some of the parts."
  - Restart beats reload, reloads merge, and a process that had to be started gets nothing
    more. A process with I(reload_on) needs a reload-capable unit; a reload is never turned
    into a restart.
  - Before any step changes anything, the reaction each running process will owe for what
    the packages, configs and files steps are about to change (decided from the RPM database
    and the files, reading only) is recorded on the target; a run killed between its steps
    leaves it for the next run, which carries it out once.
  - A service with unit files or drop-ins and no processes reloads systemd's manager once at
    its end when any of them changed.
  - With I(state=absent) the order is reversed - the processes are stopped and disabled
    (reverse order; a missing unit is fine), the unit files and drop-ins removed, exactly the
    declared configs removed (their paths only; a C(.rpmsave) or any other file beside them
    stays), the packages removed, and systemd's manager reloaded once when anything was
    removed. A removal that would also remove installed packages outside I(packages) (they
    require one of them) is refused before anything changes, naming them, unless
    I(remove_dependents) is true.
  - The first step that fails ends the task; I(failed_step) names it, and the results of
    the steps before it say what they did.
options:
  name:
    description:
      - The service's name, for messages and the diff.
    type: str
    required: true
  state:
    description:
      - "C(present): packages, then configs, then unit files and drop-ins, then processes in
        order (the first that needs it reloads the manager); without processes, one manager
        reload at the end when unit files changed."
      - "C(absent): the processes stopped and disabled (reverse order, a missing unit is fine),
        the unit files and drop-ins removed, the configs removed (exactly their paths), the
        packages removed, then one manager reload when anything was removed."
    type: str
    choices: [present, absent]
    default: present
  packages:
    description:
      - "The service's packages, moved in one DNF transaction (richt.services.rpm_exact with
        I(packages)). I(manager) and I(timeout) apply to the whole set: entries that give
        different values are refused."
    type: list
    elements: dict
    suboptions:
      name:
        description:
          - RPM name.
        type: str
        required: true
      version:
        description:
          - Exact C(EPOCH:VERSION-RELEASE.ARCH); omitted means any version.
        type: str
      manager:
        description:
          - DNF 4 command, for the whole set.
        type: str
        choices: [dnf, yum]
      timeout:
        description:
          - "The packages step's timeout, for the whole set: a number of seconds or a duration
            such as C(10m)."
        type: str
  remove_dependents:
    description:
      - "With C(state=absent): let the removal take installed packages that are not in
        I(packages) but require one of them (DNF removes them with what they require); they are
        named in C(removed_dependents) and a warning."
      - When false, such a removal is refused before anything changes, naming them (rpm's test
        removal on the installed packages finds them).
    type: bool
    default: false
  rollback:
    description:
      - "With C(state=present): when the run changed something and then fails (a process fails
        to start, restart or reload, its health probe fails after the settle, or any later step
        fails), put back what it changed: the packages' previous builds in one DNF transaction
        (a package it installed is removed), the configs, unit files and drop-ins as they were
        (content, mode, owner; a file it created is removed), then each process with the
        reactions that brings, proved again by its probe. The task still fails; its message
        names the first failure and says whether the previous state is back and healthy.
        C(rolled_back) says what was put back."
      - Before any change the builds a rollback would install must be kept on the host
        (C(/var/cache/richt/rpms), root-only; a real run keeps them there from the enabled
        repositories, with the builds it installs, for the next change) or available from the
        enabled repositories; otherwise the run is refused before any change, naming the build
        (check mode too). From a repository with C(gpgcheck=1) a build is kept only when its
        signature passes DNF's check, and is installed again with that check on. A previous
        config that today's rules would not write back (a mode the group or others can write, a
        set-id bit) refuses the run before any change too. The previous files are kept root-only
        in C(/var/lib/richt/rollback) until the run ends; C(rollback) in the result lists what
        would be put back.
      - "A run killed at any moment leaves that record: the next run with C(rollback=true) keeps
        its older state, moves forward again, and puts the record's state back if that fails, so
        the host ends all new or all old, never a mix. A removal (C(state=absent)) is not rolled
        back. See docs/rollback.md."
    type: bool
    default: false
    version_added: "0.2.0"
  units:
    description:
      - Owned full unit files (richt.services.unit_override), each unit once (C(foo) and
        C(foo.service) are one unit).
    type: list
    elements: dict
    suboptions:
      unit:
        description:
          - The unit the file is (or, for a drop-in, belongs to).
        type: str
        required: true
      content:
        description:
          - The file's content (see richt.services.unit_override).
        type: str
        required: true
      mode:
        description:
          - File mode, as richt.services.unit_override takes it (C("0644"), or a number);
            default C(0644).
        type: raw
      sensitive:
        description:
          - Keep the content out of every output.
        type: bool
        default: false
  dropins:
    description:
      - Owned drop-ins (richt.services.unit_override), each I(unit) and I(name) once.
    type: list
    elements: dict
    suboptions:
      unit:
        description:
          - The unit the file is (or, for a drop-in, belongs to).
        type: str
        required: true
      content:
        description:
          - The file's content (see richt.services.unit_override).
        type: str
        required: true
      mode:
        description:
          - File mode, as richt.services.unit_override takes it (C("0644"), or a number);
            default C(0644).
        type: raw
      sensitive:
        description:
          - Keep the content out of every output.
        type: bool
        default: false
      name:
        description:
          - Drop-in file name ending in C(.conf).
        type: str
        required: true
      reload:
        description:
          - A change of this drop-in reloads the unit instead of restarting it (the unit must be
            reload-capable).
        type: bool
        default: false
  configs:
    description:
      - "Files the service's daemons read, each I(name) and I(path) once, written after the
        packages (so a package's own directory exists) and before the unit files: atomically, at
        the path never with a looser mode or another owner than the final ones (root's 0600
        until in place, then handed over), never through a symbolic link, and never into a
        missing directory (the task fails naming it; none is created)."
      - Every directory above a config must be owned by root or by the config's owner, may be
        writable by group only when its group is root or, in a directory the config's non-root
        owner owns, the config's group (a root-owned config in a directory its group can write
        is refused), and must not be writable by others (sticky or not); any other is refused,
        naming it and the rule. So a daemon's own directory is accepted (Debian's C(/etc/redis)
        is C(redis:redis 2770)). The validator runs as root on a copy of the new content in a
        directory only root can read (under C(/run/richt/validate)), never on a file in the
        config's directory, whose writer could swap it; the file written stays root's (mode
        0600) until it is renamed into place, only while it is still the one written and holds
        the content validated, and gets its final owner and mode only then.
      - With C(state=absent) exactly the declared paths are removed, nothing beside them.
      - "A config under systemd's unit directories (such as C(/etc/systemd/system)) counts as a
        unit file change: the manager is reloaded for it. What systemd reads there it runs as
        root, so such a config gets the unit files' rule: its I(owner) is root (any other is
        refused) and every directory above it is root's and writable by neither group nor
        others."
      - Its diff (the previous content, unless sensitive) is returned only in diff mode.
      - "Each config's result is in C(configs); its plan entries are in C(plan) as C(config
        NAME: STEP)."
    type: list
    elements: dict
    suboptions:
      name:
        description:
          - "What reactions refer to (C(config:NAME)) and messages name: 1 to 64 letters,
            digits, C(.), C(_) and C(-)."
        type: str
        required: true
      path:
        description:
          - Absolute, clean path of the file.
        type: str
        required: true
      content:
        description:
          - The file's content; required with C(state=present).
        type: str
      mode:
        description:
          - File mode, as an octal string such as C("0644") or C("0640"). A mode that lets group
            or others write, or sets the setuid, setgid or sticky bit, is refused.
        type: raw
        default: "0644"
      owner:
        description:
          - Owner, a name or a numeric id, resolved through NSS on the target; default C(root).
        type: str
      group:
        description:
          - Group, a name or a numeric id, resolved through NSS on the target; default C(root).
        type: str
      sensitive:
        description:
          - "Keep the content out of every output: the diff and the validator's output are
            withheld."
        type: bool
        default: false
      validate:
        description:
          - A command run on the target to check the new content before it replaces the old,
            with C(%s) for the path of the new content (as ansible.builtin.template's), split
            into words as a shell would but run without one (no variables, pipes or
            redirections).
          - "When it fails, the task fails naming the config and the validator's output
            (withheld when sensitive), and nothing changes: not that file, not any step after
            it, no reaction. Check mode does not run it."
          - "Without C(%s) it is a tree validator (the daemon's own checker of its whole
            configuration, such as C(nginx -t -q -c /etc/nginx/nginx.conf)): it runs whenever
            any config of the service changes in the run, before any config is written, with
            every new config of the run in place in a private mount namespace (the host sees
            none of it). When it fails, the task fails naming it, the configs that changed and
            its output (withheld when any of them is sensitive), and nothing is written. Check
            mode runs it too and fails on its refusal."
          - It runs under the config's I(timeout).
        type: str
      timeout:
        description:
          - "Deadline of this config's step: looking up its owner and group, the validator and
            the write together; a number of seconds or a positive duration such as C(30s) or
            C(5m); default C(1m)."
        type: str
  processes:
    description:
      - Processes (richt.services.systemd_lifecycle), in declared order unless I(after) says
        otherwise.
      - "A process that gives neither I(restart_on) nor I(reload_on) keeps the default wiring: a
        package change or a config change restarts it; a changed unit file or drop-in of its
        unit restarts it, or reloads it when the drop-in says I(reload)."
      - A process that gives either reacts to what they name and to nothing else.
    type: list
    elements: dict
    suboptions:
      unit:
        description:
          - Unit name.
        type: str
        required: true
      state:
        description:
          - Run state; default C(running).
        type: str
        choices: [running, stopped]
      enabled:
        description:
          - Boot state; omitted leaves it alone.
        type: bool
      masked:
        description:
          - Mask state; omitted leaves it alone.
        type: bool
      timeout:
        description:
          - "Deadline of each action and its verification: a number of seconds or a duration
            such as C(20s)."
        type: str
      settle:
        description:
          - How long the unit must stay up after a start or restart, as
            richt.services.systemd_lifecycle takes it.
        type: raw
      health:
        description:
          - A health probe (see richt.services.systemd_lifecycle).
        type: dict
      after:
        description:
          - Units of this service's processes this one comes after.
        type: list
        elements: str
      restart_on:
        description:
          - "What restarts this process: references to the service's own parts, C(package:NAME),
            C(config:NAME), C(unit:UNIT) or C(dropin:UNIT/NAME), and registered results,
            booleans or mappings of names to those, as richt.services.systemd_lifecycle takes
            them (changes made by tasks outside the service)."
          - "A reference must name a part the service declares, and one part may not be in both
            lists: either is refused before anything is done. An empty list counts as not given;
            C([false]) reacts to nothing."
          - C(libraries) restarts the process when any process of its unit maps a file replaced
            or deleted since it mapped it (an updated library), as
            richt.services.systemd_lifecycle takes it; it names a reaction like any other item,
            so C([package:nginx, libraries]) keeps the package's restart. Not named, such
            processes are reported (the process's C(libraries), a warning), not restarted. See
            docs/libraries.md.
        type: list
        elements: raw
      reload_on:
        description:
          - What reloads this process; the same forms as I(restart_on). Restart beats reload,
            reloads merge, a process that had to be started gets nothing more.
          - The unit must be reload-capable (see richt.services.systemd_lifecycle).
        type: list
        elements: raw
attributes:
  check_mode:
    support: full
    description:
      - Every step in check mode. A unit that the predicted package change installs is planned
        for (loaded, stopped, disabled) instead of failing as not found, so a service that is not
        installed yet can be dry-run.
  diff_mode:
    support: full
    description: One diff for the service, each step's under its name.
notes:
  - The three modules stay for plays that compose them by hand.
extends_documentation_fragment:
  - richt.services.fast_path
author:
  - richt.services developers (@richt)
"""

EXAMPLES = r"""
- name: The demo service, pinned, with a drop-in whose changes reload it
  richt.services.service:
    name: demo
    packages:
      - name: demo
        version: "0:2.0-1.noarch"
    dropins:
      - unit: demo.service
        name: 10-reload.conf
        content: |
          [Service]
          ExecReload=/bin/kill -HUP $MAINPID
      - unit: demo.service
        name: 20-level.conf
        reload: true
        content: |
          [Service]
          Environment=DEMO_LEVEL=info
    processes:
      - unit: demo.service
        enabled: true
        timeout: 20s

# nginx (Type=forking, ExecReload=nginx -s reload): a changed config reloads it, a new
# package build restarts it. The main config is validated before it replaces the old one;
# its include path is absolute, so nginx -t reads conf.d from the temporary file's place.
# The site snippet has no validate: nginx -t -c on a lone server block always fails
# ("server directive is not allowed here"). See playbooks/nginx.yml.
- name: nginx with its configuration, reloaded on a config change
  richt.services.service:
    name: nginx
    packages:
      - name: nginx
        version: "1:1.26.3-1.el10.x86_64"
    configs:
      - name: main
        path: /etc/nginx/nginx.conf
        validate: /usr/sbin/nginx -t -q -c %s
        content: |
          pid /run/nginx.pid;
          events {}
          http {
              include /etc/nginx/conf.d/*.conf;
          }
      - name: site
        path: /etc/nginx/conf.d/site.conf
        content: |
          server {
              listen 80;
              location / { return 200 "hello\n"; }
          }
    processes:
      - unit: nginx.service
        enabled: true
        restart_on: ["package:nginx"]
        reload_on: ["config:main", "config:site"]
        health:
          http: "http://127.0.0.1/"

# redis (Type=notify, no ExecReload): it cannot reload, so its config restarts it. Only
# what is named reacts: the config and the package.
- name: redis, restarted when its config or its package changes
  richt.services.service:
    name: redis
    packages:
      - name: redis
    configs:
      - name: main
        path: /etc/redis/redis.conf
        owner: redis
        group: root
        mode: "0640"
        content: |
          bind 127.0.0.1 -::1
          port 6379
          supervised systemd
          dir /var/lib/redis
    processes:
      - unit: redis.service
        enabled: true
        restart_on: ["package:redis", "config:main"]
        health:
          tcp: "127.0.0.1:6379"

- name: Remove nginx, exactly its declared configs included
  richt.services.service:
    name: nginx
    state: absent
    packages:
      - name: nginx
    configs:
      - name: main
        path: /etc/nginx/nginx.conf
      - name: site
        path: /etc/nginx/conf.d/site.conf
    processes:
      - unit: nginx.service
"""

RETURN = r"""
name:
  description: The service's name.
  returned: always
  type: str
summary:
  description:
    - "What the run did, one line each - the packages that moved (C(packages: demo 1.0-1 → 2.0-1);
      check mode C(packages: would change ...)), each process as its step's I(summary) says
      with a package trigger named with its move (C(demo.service: restart (package:demo 1.0-1 →
      2.0-1)), C(demo.service: nothing (converged)), C(demo.service: would reload
      (dropin:demo.service/20-level.conf))), a manager reload the service did itself, and the
      rollback's readiness or outcome."
    - The collection's action plugin prints each line as C([HOST] LINE) at the default
      verbosity (not for a no_log task), so the console says what happened without C(-v).
  returned: always
  type: list
  elements: str
state:
  description: The requested state.
  returned: always
  type: str
packages:
  description: The packages step's result, as richt.services.rpm_exact gives it (null without packages).
  returned: always
  type: dict
files:
  description: Each unit file's and drop-in's result, as richt.services.unit_override gives it, unit files first, with the item it was for.
  returned: always
  type: list
  elements: dict
configs:
  description: >-
    Each config's result (changed, name, path, state, plan, diff; on a failure failed and msg), in the
    order of configs, with the keys of the contract every module's result has (package_changed,
    unit_files_changed, daemon_reload): a config under a unit directory whose content moved says
    unit_files_changed true and daemon_reload needed; a config whose content moved has files_placed (systemd's clock right after the move), which
    tells its process that a reload or start after that moment already served it.
  returned: always
  type: list
  elements: dict
processes:
  description: Each process's result, as richt.services.systemd_lifecycle gives it, in the order they ran.
  returned: always
  type: list
  elements: dict
recorded:
  description: The reaction recorded for each unit before the first step (C(restart) or C(reload)).
  returned: when a reaction was recorded
  type: dict
manager_reload:
  description:
    - C(performed) when the service reloaded systemd's manager at its end - after a removal, or
      after writing unit files or drop-ins when it has no process to do it; C(planned) in check
      mode.
  returned: when a removal changed something, or unit files or drop-ins changed and there are no processes
  type: str
removed_dependents:
  description:
    - The packages outside I(packages) that the removal took along because they required one
      of them (NAME-VERSION-RELEASE.ARCH), allowed by I(remove_dependents).
  returned: when a removal with I(remove_dependents) took some
  type: list
  elements: str
failed_step:
  description: The step that failed - C(packages), C(config NAME), C(file UNIT/NAME), C(process UNIT) or C(manager reload).
  returned: when a step failed
  type: str
plan:
  description:
    - The whole service's plan in the order it is carried out (up to a failed step). The
      packages', configs' and files' plans are made before anything changes; each process's plan is
      made at its turn from what the earlier steps did (in check mode, from what they would
      do), so check mode's list is the real run's whenever the earlier steps do what their
      plans say (a restart a package scriptlet already did is not planned again).
    - "Each step's own plan entries under the step's name and a colon (C(packages: install-nevra demo),
      C(config site: write), C(file demo.service/20-level.conf: write), C(process demo.service: start)), the
      reactions recorded ahead of the packages, the configs and the files steps, and after a step whose
      change was not predicted (C(record-pending UNIT KIND)), a prediction withdrawn when its
      step changed nothing (C(withdraw-pending UNIT)), and the closing C(daemon-reload) of a
      removal or of a service without processes."
  returned: always
  type: list
  elements: str
  sample: [record-pending demo.service restart, "packages: install-nevra demo", "file demo.service/20-level.conf: write", "process demo.service: start"]
rollback:
  description:
    - With I(rollback) and a run that changes something (or a record an earlier, killed run left), what a
      rollback would put back, in check mode too - C(packages) (each C(name) with the builds it would
      C(restore); none means removed) and C(files) (each C(path) with C(restore) C(content) or C(removal)),
      and C(record), the record on the target while the run is not over; when a package moves, C(keep),
      each build a rollback would install (C(build)) and how it is kept before the change - C(kept) true
      (on the host already), or fetched from C(repo), its signature checked there when C(gpgcheck) is true.
    - "The plan lists C(rollback: keep BUILD (kept)) or C(rollback: keep BUILD: fetch from REPO, gpgcheck
      on|off), C(rollback: save PATH) and C(rollback: record) before the first step, and, when a rollback
      ran, its steps under C(rollback:). The keep is planned reading only (in check mode too) and carried
      out by the real run right before its record; a fetch DNF refuses, or a repository that changed
      since the plan, fails the run there with nothing changed. A change with rollback that ends well
      lists C(rollback: forget) last - its record removed, the builds now installed kept, the others
      pruned."
  returned: with rollback, when something would be put back
  type: dict
rolled_back:
  description:
    - What the rollback put back after the change failed - C(packages) (C(name), C(restore) the builds put
      back, C(from) the builds it had), C(files) (C(path), C(restore)), C(processes) (each process's
      result in the rollback), C(healthy) (every process back and its probe answered) and C(failed), the
      part of the rollback that failed, when one did.
  returned: when a rollback ran
  type: dict
"""
