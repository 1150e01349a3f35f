# -*- coding: utf-8 -*-
"""The fast path for the collection's binary modules (controller side).

Ansible never pipelines a binary module: every task uploads the binary and an arguments
file, chmods them, runs, and removes them (about seven round trips). This action keeps each
binary on the target under its content hash, in the effective (post-become) user's home, and
runs it in ONE low-level command with the arguments on standard input (the modules read
JSON from stdin when given "-"). A cache miss costs one install command, then the run.

Whenever the fast path cannot promise the same behaviour as Ansible's normal path it is not
used, and the task runs exactly as Ansible would run it: see fallback_reason().

The collection ships one multi-call binary per architecture (bin/richt-modules-ARCH, ARCH as
`uname -m` prints it). The fast path's script learns the target's architecture in the round
trip it makes anyway; the normal path and Mitogen's ask `uname -m` first and upload the
target's build. An architecture without a build fails before anything runs.
See docs/fastpath.md for the design and the decisions.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import inspect
import json
import os
import re
import secrets

from ansible import constants as C
from ansible.module_utils.common.text.converters import to_bytes
from ansible.module_utils.parsing.convert_bool import boolean
from ansible.plugins.action import ActionBase
from ansible.plugins.action.normal import ActionModule as NormalAction
from ansible.utils.display import Display
from ansible.utils.vars import merge_hash
from ansible.vars.clean import remove_internal_keys

try:  # ansible-core >= 2.19 encodes module arguments through serialization profiles
    from ansible.module_utils.common.json import Direction, get_module_encoder
    _ENCODER = get_module_encoder('legacy', Direction.CONTROLLER_TO_MODULE)
except ImportError:  # 2.14 .. 2.18: plain JSON, as _execute_module writes the args file
    _ENCODER = None

display = Display()

# Variable a role sets on its task for a warning the action prints (roles/service: the
# service_* variables it does not know).
WARNING_VAR = 'richt_services_warning'
# Variable that turns the fast path off (for a host, a group, a play or a task).
OPT_OUT_VAR = 'richt_services_fast_path'
# Connections of Mitogen for Ansible live in this package (ansible_mitogen.connection).
MITOGEN_PACKAGE = 'ansible_mitogen'
# Host fact remembering, per effective user, why the fast path cannot work on a host
# (a home mounted noexec), so later tasks do not try again.
MEMORY_FACT = 'richt_services_fast_path_unusable'
# Exit status of the remote scripts when they did not run the module (with a marker line).
MISS_STATUS = 97
# The remote scripts' status for a home, ~/.cache or cache directory that group or others can
# write (its path follows the architecture): the task fails, as the modules do for their state
# directories, instead of running a binary from there or quietly taking the normal path.
INSECURE_STATUS = 'insecure-dir'
CACHE_DIR = '.cache/richt.services'
COLLECTION = 'richt.services'
HASH_FILE = 'SHA256SUMS'
# The multi-call binary holding every module: bin/MULTICALL-ARCH, and bin/ARCH/NAME links to
# it (Ansible names a binary module's upload after its file, and the binary picks its module
# by that name).
MULTICALL = 'richt-modules'
# The stamp of a verified cached file: what any write or replacement changes.
_STAMP = "stat -c '%d %i %s %y %z'"
_HASH_RE = re.compile(r'^[0-9a-f]{64}$')
_NAME_RE = re.compile(r'^[a-z][a-z0-9_]*$')
# What `uname -m` may print for a build to be chosen by it: also what the script may echo.
_ARCH_RE = re.compile(r'^[A-Za-z0-9_.-]{1,32}$')

# Shared by both remote scripts: learns the target's architecture (every marker line carries
# it, so a fallback to the normal path knows which build to upload), and checks that the
# effective user's home, its cache parent and the cache directory are real directories owned
# by that user, creating the last two with mode 0700. A directory of the three that group or
# others can write is refused with INSECURE_STATUS and its path after the architecture (as
# pkg/statedir refuses the modules' state directories): whoever can write there can swap the
# cached binary or its stamp between the check and the exec. Placeholders are filled by
# _script(); nothing user-controlled is interpolated.
_PREAMBLE = r'''umask 077
a=$(uname -m 2>/dev/null) || a=
case $a in *[!A-Za-z0-9_.-]*|'') a=unknown ;; esac
m() { printf '%s\n' "RICHT_FASTPATH @NONCE@ $1 $a${2:+ $2}"; exit @MISS@; }
own() { [ -d "$1" ] && [ ! -L "$1" ] && [ -O "$1" ]; }
tight() { case $(stat -c %A "$1" 2>/dev/null) in '') m "$2" ;; ?????w*|????????w*) m @INSECURE@ "$1" ;; esac; }
case ${HOME:-} in /*) ;; *) m unusable-home ;; esac
h=$HOME c=$HOME/.cache d=$HOME/@CACHE@
own "$h" || m unusable-home
tight "$h" unusable-home
[ -e "$c" ] || [ -L "$c" ] || mkdir -m 700 "$c" 2>/dev/null
[ -e "$d" ] || [ -L "$d" ] || mkdir -m 700 "$d" 2>/dev/null
own "$c" && own "$d" || m unusable-cache
tight "$c" unusable-cache
tight "$d" unusable-cache
chmod 700 "$d" || m unusable-cache'''

# Runs the cached build of the target's architecture (bin/MULTICALL-ARCH cached as
# MULTICALL-ARCH-SHA256, so a home shared by hosts of several architectures holds one of each
# and never runs another's) after checking its owner and content; the binary replaces the shell,
# so once exec has happened nothing else can print a marker. The content check is a sha256
# of the file unless its stamp ($f.ok: device, inode, size, mtime and ctime when it was last
# verified) still matches: any write or replacement moves the ctime, which user space cannot
# set back, so a matching stamp means the verified bytes (one stat instead of hashing 3-4 MB).
_RUN = _PREAMBLE + r'''
case $a in
@CASES@
*) m unsupported-arch ;;
esac
f=$d/@BIN@-$a-$x
[ -f "$f" ] && [ ! -L "$f" ] && [ -O "$f" ] || m miss
s=$(@STAMP@ "$f" 2>/dev/null) || s=
v=; [ -n "$s" ] && [ -f "$f.ok" ] && [ -O "$f.ok" ] && read -r v <"$f.ok"
if [ -z "$s" ] || [ "$v" != "$s" ]; then
case $(sha256sum "$f" 2>/dev/null) in "$x "*) ;; *) m tampered ;; esac
[ -z "$s" ] || printf '%s\n' "$s" >"$f.ok" 2>/dev/null
fi
@ENV@ exec "$f" @NAME@ -'''

# Installs the build of one architecture from stdin: the target must still report that
# architecture, then a unique temporary name in the cache directory, sha256 check, an
# execution probe (a noexec home fails here, before anything is renamed), atomic rename, the
# verified file's stamp, then removal of older versions of this architecture's build (and
# their stamps), of any file that is not a build (per-module binaries of releases before the
# multi-call binary), and of temporary files older than an hour.
_INSTALL = _PREAMBLE + r'''
[ "$a" = @ARCH@ ] || m arch-changed
f=$d/@BIN@-@ARCH@-@HASH@
t=$(mktemp "$d/.@BIN@.XXXXXXXX" 2>/dev/null) || m unusable-cache
cat >"$t" || { rm -f "$t"; m transfer-failed; }
case $(sha256sum "$t" 2>/dev/null) in "@HASH@ "*) ;; *) rm -f "$t"; m transfer-corrupt ;; esac
chmod 700 "$t" && "$t" --version >/dev/null 2>&1 || { rm -f "$t"; m cannot-execute; }
mv -f "$t" "$f" || { rm -f "$t"; m unusable-cache; }
s=$(@STAMP@ "$f" 2>/dev/null) && printf '%s\n' "$s" >"$f.ok" 2>/dev/null
for o in "$d"/*; do case $o in "$f"|"$f.ok") ;; "$d"/@BIN@-@ARCH@-*) rm -f "$o" ;; "$d"/@BIN@-*) ;; *) rm -f "$o" ;; esac; done
find "$d" -maxdepth 1 -type f -name '.*' -mmin +60 -exec rm -f {} + 2>/dev/null
m installed'''


def _script(template, name, hashes, nonce, env='', arch=''):
    """A remote script for module name. hashes maps each architecture with a build to its
    sha256 (the run script picks the target's); arch is the one build the install script
    installs. The result must not end in a newline: Ansible appends " && sleep 0"."""
    cases = '\n'.join('%s) x=%s ;;' % (a, hashes[a]) for a in sorted(hashes))
    out = template
    for key, value in (('@CASES@', cases), ('@NONCE@', nonce), ('@MISS@', str(MISS_STATUS)), ('@CACHE@', CACHE_DIR),
                       ('@BIN@', MULTICALL), ('@NAME@', name), ('@ARCH@', arch), ('@HASH@', hashes.get(arch, '')),
                       ('@STAMP@', _STAMP), ('@ENV@', env), ('@INSECURE@', INSECURE_STATUS)):
        out = out.replace(key, value)
    return out.strip()


def marker(res, nonce):
    """The status a remote script reported, or None when the module itself ran.

    Only the exit status together with a line carrying this task's random nonce counts, so
    a module's own output or exit status is never taken for a cache miss."""
    status = marker_arch(res, nonce)
    return status[0] if status else None


def _marker_line(res, nonce):
    """What follows this task's marker prefix on the first line carrying it, or None when
    the module itself ran."""
    if res.get('rc') != MISS_STATUS:
        return None
    prefix = 'RICHT_FASTPATH %s ' % nonce
    for line in (res.get('stdout') or '').splitlines():
        if line.startswith(prefix):
            return line[len(prefix):]
    return None


def marker_arch(res, nonce):
    """(status, target architecture or None) of a remote script's marker, or None when the
    module itself ran."""
    rest = _marker_line(res, nonce)
    if rest is None:
        return None
    parts = rest.split()
    if not parts:
        return ('', None)
    arch = parts[1] if len(parts) > 1 and _ARCH_RE.match(parts[1]) and parts[1] != 'unknown' else None
    return (parts[0], arch)


def marker_path(res, nonce):
    """The directory a marker names after the architecture (INSECURE_STATUS's), or ''."""
    rest = _marker_line(res, nonce)
    parts = (rest or '').split(' ', 2)
    return parts[2] if len(parts) == 3 else ''


def insecure(name, path):
    """The failure of a task whose cache directory, or one above it, group or others can
    write: nothing was run."""
    return {'failed': True, 'changed': False,
            'msg': 'richt.services.%s was not run: %s on the target is writable by group or others, so '
                   'the module binary cached below it could be replaced before it runs (chmod go-w %s)'
                   % (name, path or 'the cache directory', path or '~/%s' % CACHE_DIR)}


def read_hashes(bin_dir):
    """Architecture -> sha256 of its build, from bin/SHA256SUMS (written when the collection
    is built, one line per bin/richt-modules-ARCH)."""
    hashes = {}
    prefix = MULTICALL + '-'
    try:
        with open(os.path.join(bin_dir, HASH_FILE), encoding='utf-8') as f:
            for line in f:
                parts = line.split()
                if len(parts) != 2 or not _HASH_RE.match(parts[0]):
                    continue
                name = parts[1].lstrip('*')
                arch = name[len(prefix):]
                if name.startswith(prefix) and _ARCH_RE.match(arch):
                    hashes[arch] = parts[0]
    except OSError:
        pass
    return hashes


def unsupported(name, arch, hashes):
    """The failure of a task whose target has no build."""
    return {'failed': True, 'changed': False,
            'msg': 'richt.services.%s has no build for the target\'s architecture %s (uname -m); '
                   'the collection has builds for: %s' % (name, arch or 'unknown', ', '.join(sorted(hashes)) or 'none')}


def summary_lines(result):
    """The lines of a module result's `summary` (a string, or a list of them): what the
    run did to each process and why."""
    summary = result.get('summary') if isinstance(result, dict) else None
    if isinstance(summary, str):
        summary = [summary]
    if not isinstance(summary, list):
        return []
    return [line for line in summary if isinstance(line, str) and line]


def show_summary(task, host, result):
    """Prints the result's summary lines as `[host] line` at the default verbosity: the
    default callback shows only ok/changed, and whether a process was reloaded, restarted
    or left alone is what a user of this collection needs to see without -v. Nothing is
    printed for a no_log task (its result is censored), so nothing of it leaks here."""
    if getattr(task, 'no_log', False) or (isinstance(result, dict) and result.get('_ansible_no_log')):
        return
    for line in summary_lines(result):
        display.display('[%s] %s' % (host, line))


def _memory(task_vars):
    """A copy of the host fact: effective user -> why the fast path cannot work there."""
    memory = (task_vars.get('ansible_facts') or {}).get(MEMORY_FACT) or task_vars.get(MEMORY_FACT)
    return dict(memory) if isinstance(memory, dict) else {}


def _mitogen(obj):
    """Whether Mitogen for Ansible took obj over: its strategy mixes its own classes into
    the action plugin and loads its connection plugins, all defined in its package."""
    return any(getattr(k, '__module__', '').startswith(MITOGEN_PACKAGE) for k in type(obj).__mro__)


class FastPathAction(NormalAction):
    """Action for the binary modules of this collection (plugins/action/fastpath.py, which
    meta/runtime.yml names as every module's action_plugin). The module is the one the task
    runs, as Ansible resolved it (richt.services.NAME)."""

    _supports_check_mode = True
    _supports_async = True

    @property
    def module_name(self):
        """The task's module when it is one of this collection's, else '' (the task then
        takes Ansible's normal path)."""
        action = getattr(self._task, 'resolved_action', None) or self._task.action
        collection, name = action.rpartition('.')[::2]
        return name if collection in ('', COLLECTION) else ''

    def _bin_dir(self):
        # plugins/plugin_utils/fastpath.py -> <collection>/bin
        return os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), 'bin')

    def _effective_user(self):
        become = self._connection.become
        if become:
            return self.get_become_option('become_user') or 'root'
        return self._get_remote_user() or ''

    def fallback_reason(self, task_vars):
        """Why this task cannot take the fast path, or None when it can."""
        if not boolean(self._templar.template(task_vars.get(OPT_OUT_VAR, True)), strict=False):
            return '%s is false' % OPT_OUT_VAR
        remembered = _memory(task_vars).get(self._effective_user())
        if remembered:
            return 'remembered for this host: %s' % remembered
        if self._task.async_val:
            return 'async task'
        if C.DEFAULT_DEBUG:
            return 'ANSIBLE_DEBUG is on'
        if C.DEFAULT_KEEP_REMOTE_FILES:
            return 'keep_remote_files is on'
        become = self._connection.become
        if become and become.name not in ('sudo', 'ansible.builtin.sudo'):
            return 'become_method %s (only sudo is supported)' % become.name
        if getattr(self._connection._shell, 'SHELL_FAMILY', '') != 'sh':
            return 'shell %s is not POSIX sh' % getattr(self._connection._shell, 'SHELL_FAMILY', '?')
        if _mitogen(self) or _mitogen(self._connection):
            # Mitogen forbids _is_pipelining_enabled(): it has no pipelining to ask about,
            # since its exec_command hands the command its stdin in the same call, which is
            # all the fast path needs. Its own path for a binary module streams the whole
            # binary from the controller on every task (docs/fastpath.md).
            return None
        if not self._is_pipelining_enabled('new', wrap_async=False):
            return 'pipelining is off'
        return None

    def run(self, tmp=None, task_vars=None):
        self._warn_from_role(task_vars or {})
        result = self._run(tmp, task_vars)
        show_summary(self._task, (task_vars or {}).get('inventory_hostname'), result)
        return result

    def _warn_from_role(self, task_vars):
        """Prints the warning a role computed for this task in WARNING_VAR (the service
        role's unknown service_* variables): a role has no warning of its own to give."""
        if WARNING_VAR not in task_vars:
            return
        warning = self._templar.template(task_vars[WARNING_VAR])
        if isinstance(warning, str) and warning.strip():
            display.warning(warning.strip())

    def _run(self, tmp=None, task_vars=None):
        task_vars = task_vars or {}
        name = self.module_name
        host = task_vars.get('inventory_hostname')
        self._target_arch = None
        ours = bool(_NAME_RE.match(name))
        reason = self.fallback_reason(task_vars)
        hashes = read_hashes(self._bin_dir()) if ours else {}
        if reason is None:
            if not ours:
                reason = 'unexpected module name %r' % name
            elif not hashes:
                reason = 'no builds in bin/%s' % HASH_FILE
        if reason is None:
            result = ActionBase.run(self, tmp, task_vars)
            if result.get('skipped'):
                return result
            module = self._run_fast(name, hashes, task_vars)
            if isinstance(module, dict):
                return merge_hash(result, module)
            reason = module
        display.vvv('richt.services fast path not used for %s: %s' % (name, reason), host=host)
        if ours:
            # The normal path uploads the target's own build: chosen here, before anything
            # is transferred (_configure_module, and Mitogen's module lookup).
            builds = self.builds(name)
            arch = self._target_arch or self._query_arch()
            if arch not in builds:
                return unsupported(name, arch, builds)
            self._target_arch = arch
        with self._mitogen_module_path(name):
            result = super().run(tmp, task_vars)
        if reason.startswith('cannot execute'):
            memory = _memory(task_vars)
            memory[self._effective_user()] = reason
            result.setdefault('ansible_facts', {})[MEMORY_FACT] = memory
        return result

    def builds(self, name):
        """The architectures with a build of module name for the normal path: those of the
        bin/ARCH/NAME links make build writes."""
        bin_dir = self._bin_dir()
        try:
            entries = os.listdir(bin_dir)
        except OSError:
            return []
        return sorted(a for a in entries if _ARCH_RE.match(a) and os.path.isfile(os.path.join(bin_dir, a, name)))

    def _query_arch(self):
        """The target's `uname -m` (one round trip), or None when it cannot be read."""
        res = self._low_level_execute_command('uname -m', sudoable=False)
        out = (res.get('stdout') or '').strip()
        if res.get('rc') != 0 or not _ARCH_RE.match(out):
            return None
        return out

    def _build_path(self, name):
        """The target's build of module name, under a file name Ansible and Mitogen upload
        it as (AnsiballZ_NAME, ansible_module_NAME): the multi-call binary runs the module
        its name says."""
        return os.path.join(self._bin_dir(), self._target_arch, name)

    def _configure_module(self, module_name, module_args, task_vars):
        """Ansible's normal path: the module file it transfers is the target's build."""
        configured = super()._configure_module(module_name=module_name, module_args=module_args, task_vars=task_vars)
        name = self.module_name
        if not getattr(self, '_target_arch', None) or not name or module_name.rpartition('.')[2] != name:
            return configured
        path = self._build_path(name)
        with open(path, 'rb') as f:
            data = f.read()
        if len(configured) == 4:  # ansible-core 2.14 .. 2.18: style, shebang, data, path
            style, shebang = configured[0], configured[1]
            return (style, shebang, data, path) if style == 'binary' else configured
        bits = configured[0]  # 2.19: a _BuiltModule and the path
        if bits.module_style != 'binary':
            return configured
        return dataclasses.replace(bits, b_module_data=data), path

    @contextlib.contextmanager
    def _mitogen_module_path(self, name):
        """Under Mitogen its planner looks the module up by name in its own loader, not
        through _configure_module: for this task only (an action runs in a worker process
        of its own), that lookup answers with the target's build."""
        arch = getattr(self, '_target_arch', None)
        if not arch or not (_mitogen(self) or _mitogen(self._connection)):
            yield
            return
        from ansible_mitogen import loaders  # pylint: disable=import-error,import-outside-toplevel
        real = loaders.module_loader
        path = self._build_path(name)

        class TargetBuild:
            """Mitogen's module loader, but for this module the target's build."""

            def __getattr__(self, attr):
                return getattr(real, attr)

            def find_plugin(self, module_name, *args, **kwargs):
                if module_name.rpartition('.')[2] == name:
                    return path
                return real.find_plugin(module_name, *args, **kwargs)

        loaders.module_loader = TargetBuild()
        try:
            yield
        finally:
            loaders.module_loader = real

    def _run_fast(self, name, hashes, task_vars):
        """Runs the module through the cache. Returns the module's result dict (a failure
        when the target's architecture has no build), or a string naming why the normal
        path must run instead (the module has not run then)."""
        host = task_vars.get('inventory_hostname')
        module_args = dict(self._task.args)
        self._update_module_args(self._task.action, module_args, task_vars)
        args = json.dumps(module_args, cls=_ENCODER) if _ENCODER else json.dumps(module_args)
        # Bytes: some connections (community.docker.docker) hand in_data to the process as is.
        args = to_bytes(args, errors='surrogate_or_strict')
        env = self._compute_environment_string()
        nonce = secrets.token_hex(8)
        run_cmd = _script(_RUN, name, hashes, nonce, env)

        res = self._low_level_execute_command(run_cmd, sudoable=True, in_data=args)
        status, arch = marker_arch(res, nonce) or (None, None)
        self._target_arch = arch or self._target_arch
        if status is None:
            display.vvv('richt.services fast path: ran cached %s' % name, host=host)
            return self._module_result(res)
        if status == 'unsupported-arch':
            return unsupported(name, arch, hashes)
        if status == INSECURE_STATUS:
            return insecure(name, marker_path(res, nonce))
        if status not in ('miss', 'tampered') or arch not in hashes:
            return 'cache unusable on the target (%s)' % status
        digest = hashes[arch]
        if status == 'tampered':
            display.warning('richt.services: the cached %s binary on %s did not match its sha256 '
                            'and was not run; it is replaced by the collection\'s binary' % (arch, host))

        path = os.path.join(self._bin_dir(), '%s-%s' % (MULTICALL, arch))
        try:
            with open(path, 'rb') as f:
                data = f.read()
        except OSError as e:
            return 'cannot read %s: %s' % (path, e)
        if hashlib.sha256(data).hexdigest() != digest:
            return '%s does not match bin/%s (rebuild the collection)' % (path, HASH_FILE)
        installed = self._low_level_execute_command(_script(_INSTALL, name, hashes, nonce, arch=arch), sudoable=True, in_data=data)
        status = marker(installed, nonce)
        if status == INSECURE_STATUS:
            return insecure(name, marker_path(installed, nonce))
        if status == 'cannot-execute':
            return 'cannot execute binaries in ~/%s (home mounted noexec?)' % CACHE_DIR
        if status != 'installed':
            return 'install failed (%s, rc=%s): %s' % (status, installed.get('rc'), (installed.get('stderr') or '').strip()[:300])
        display.vvv('richt.services fast path: installed %s-%s-%s' % (MULTICALL, arch, digest[:12]), host=host)

        res = self._low_level_execute_command(run_cmd, sudoable=True, in_data=args)
        status = marker(res, nonce)
        if status is None:
            display.vvv('richt.services fast path: ran cached %s' % name, host=host)
            return self._module_result(res)
        if status == INSECURE_STATUS:
            return insecure(name, marker_path(res, nonce))
        return 'cache unusable right after install (%s)' % status

    def _module_result(self, res):
        # What _execute_module does with a module's output, for the keys these modules use.
        if 'profile' in inspect.signature(self._parse_returned_data).parameters:
            data = self._parse_returned_data(res, 'legacy')
        else:
            data = self._parse_returned_data(res)
        data.pop('_ansible_suppress_tmpdir_delete', None)
        remove_internal_keys(data)
        return data
