# -*- coding: utf-8 -*-
"""The fast path for the collection's binary modules (controller side).

Ansible never pipelines a binary module: every task uploads the binary and an arguments
file, chmods them, runs, and removes them (about seven round trips). This action keeps each
binary on the target under its content hash, in the effective (post-become) user's home, and
runs it in ONE low-level command with the arguments on standard input (the modules read
JSON from stdin when given "-"). A cache miss costs one install command, then the run.

Whenever the fast path cannot promise the same behaviour as Ansible's normal path it is not
used, and the task runs exactly as Ansible would run it: see fallback_reason().
See docs/fastpath.md for the design and the decisions.
"""

from __future__ import annotations

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

# Variable that turns the fast path off (for a host, a group, a play or a task).
OPT_OUT_VAR = 'richt_services_fast_path'
# Connections of Mitogen for Ansible live in this package (ansible_mitogen.connection).
MITOGEN_PACKAGE = 'ansible_mitogen'
# Host fact remembering, per effective user, why the fast path cannot work on a host
# (a home mounted noexec), so later tasks do not try again.
MEMORY_FACT = 'richt_services_fast_path_unusable'
# Exit status of the remote scripts when they did not run the module (with a marker line).
MISS_STATUS = 97
CACHE_DIR = '.cache/richt.services'
COLLECTION = 'richt.services'
HASH_FILE = 'SHA256SUMS'
# The stamp of a verified cached file: what any write or replacement changes.
_STAMP = "stat -c '%d %i %s %y %z'"
_HASH_RE = re.compile(r'^[0-9a-f]{64}$')
_NAME_RE = re.compile(r'^[a-z][a-z0-9_]*$')

# Shared by both remote scripts: checks that the effective user's home, its cache parent and
# the cache directory are real directories owned by that user, creating the last two with
# mode 0700. Placeholders are filled by _script(); nothing user-controlled is interpolated.
_PREAMBLE = r'''umask 077
m() { printf '%s\n' "RICHT_FASTPATH @NONCE@ $1"; exit @MISS@; }
own() { [ -d "$1" ] && [ ! -L "$1" ] && [ -O "$1" ]; }
case ${HOME:-} in /*) ;; *) m unusable-home ;; esac
h=$HOME c=$HOME/.cache d=$HOME/@CACHE@ f=$HOME/@CACHE@/@NAME@-@HASH@
own "$h" || m unusable-home
[ -e "$c" ] || [ -L "$c" ] || mkdir -m 700 "$c" 2>/dev/null
[ -e "$d" ] || [ -L "$d" ] || mkdir -m 700 "$d" 2>/dev/null
own "$c" && own "$d" && chmod 700 "$d" || m unusable-cache'''

# Runs the cached binary after checking its owner and content; the binary replaces the shell,
# so once exec has happened nothing else can print a marker. The content check is a sha256
# of the file unless its stamp ($f.ok: device, inode, size, mtime and ctime when it was last
# verified) still matches: any write or replacement moves the ctime, which user space cannot
# set back, so a matching stamp means the verified bytes (one stat instead of hashing 3-4 MB).
_RUN = _PREAMBLE + r'''
[ -f "$f" ] && [ ! -L "$f" ] && [ -O "$f" ] || m miss
s=$(@STAMP@ "$f" 2>/dev/null) || s=
v=; [ -n "$s" ] && [ -f "$f.ok" ] && [ -O "$f.ok" ] && read -r v <"$f.ok"
if [ -z "$s" ] || [ "$v" != "$s" ]; then
case $(sha256sum "$f" 2>/dev/null) in "@HASH@ "*) ;; *) m tampered ;; esac
[ -z "$s" ] || printf '%s\n' "$s" >"$f.ok" 2>/dev/null
fi
@ENV@ exec "$f" -'''

# Installs the binary from stdin: unique temporary name in the cache directory, sha256 check,
# an execution probe (a noexec home fails here, before anything is renamed), atomic rename,
# the verified file's stamp, then removal of older versions of this module (and their
# stamps) and of temporary files older than an hour.
_INSTALL = _PREAMBLE + r'''
t=$(mktemp "$d/.@NAME@.XXXXXXXX" 2>/dev/null) || m unusable-cache
cat >"$t" || { rm -f "$t"; m transfer-failed; }
case $(sha256sum "$t" 2>/dev/null) in "@HASH@ "*) ;; *) rm -f "$t"; m transfer-corrupt ;; esac
chmod 700 "$t" && "$t" --version >/dev/null 2>&1 || { rm -f "$t"; m cannot-execute; }
mv -f "$t" "$f" || { rm -f "$t"; m unusable-cache; }
s=$(@STAMP@ "$f" 2>/dev/null) && printf '%s\n' "$s" >"$f.ok" 2>/dev/null
for o in "$d"/@NAME@-*; do case $o in "$f"|"$f.ok") ;; *) rm -f "$o" ;; esac; done
find "$d" -maxdepth 1 -type f -name '.*' -mmin +60 -exec rm -f {} + 2>/dev/null
m installed'''


def _script(template, name, digest, nonce, env=''):
    # The result must not end in a newline: Ansible appends " && sleep 0".
    out = template
    for key, value in (('@NONCE@', nonce), ('@MISS@', str(MISS_STATUS)), ('@CACHE@', CACHE_DIR),
                       ('@NAME@', name), ('@HASH@', digest), ('@STAMP@', _STAMP), ('@ENV@', env)):
        out = out.replace(key, value)
    return out.strip()


def marker(res, nonce):
    """The status a remote script reported, or None when the module itself ran.

    Only the exit status together with a line carrying this task's random nonce counts, so
    a module's own output or exit status is never taken for a cache miss."""
    if res.get('rc') != MISS_STATUS:
        return None
    prefix = 'RICHT_FASTPATH %s ' % nonce
    for line in (res.get('stdout') or '').splitlines():
        if line.startswith(prefix):
            return line[len(prefix):].strip()
    return None


def read_hashes(bin_dir):
    """Module name -> sha256 from bin/SHA256SUMS, written when the collection is built."""
    hashes = {}
    try:
        with open(os.path.join(bin_dir, HASH_FILE), encoding='utf-8') as f:
            for line in f:
                parts = line.split()
                if len(parts) == 2 and _HASH_RE.match(parts[0]):
                    hashes[parts[1].lstrip('*')] = parts[0]
    except OSError:
        pass
    return hashes


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
        task_vars = task_vars or {}
        name = self.module_name
        host = task_vars.get('inventory_hostname')
        reason = self.fallback_reason(task_vars)
        digest = None
        if reason is None:
            if not _NAME_RE.match(name):
                reason = 'unexpected module name %r' % name
            else:
                digest = read_hashes(self._bin_dir()).get(name)
                if digest is None:
                    reason = 'no content hash for %s in bin/%s' % (name, HASH_FILE)
        if reason is None:
            result = ActionBase.run(self, tmp, task_vars)
            if result.get('skipped'):
                return result
            module = self._run_fast(name, digest, task_vars)
            if isinstance(module, dict):
                return merge_hash(result, module)
            reason = module
        display.vvv('richt.services fast path not used for %s: %s' % (name, reason), host=host)
        result = super().run(tmp, task_vars)
        if reason.startswith('cannot execute'):
            memory = _memory(task_vars)
            memory[self._effective_user()] = reason
            result.setdefault('ansible_facts', {})[MEMORY_FACT] = memory
        return result

    def _run_fast(self, name, digest, task_vars):
        """Runs the module through the cache. Returns the module's result dict, or a string
        naming why the normal path must run instead (the module has not run then)."""
        host = task_vars.get('inventory_hostname')
        module_args = dict(self._task.args)
        self._update_module_args(self._task.action, module_args, task_vars)
        args = json.dumps(module_args, cls=_ENCODER) if _ENCODER else json.dumps(module_args)
        # Bytes: some connections (community.docker.docker) hand in_data to the process as is.
        args = to_bytes(args, errors='surrogate_or_strict')
        env = self._compute_environment_string()
        nonce = secrets.token_hex(8)
        run_cmd = _script(_RUN, name, digest, nonce, env)

        res = self._low_level_execute_command(run_cmd, sudoable=True, in_data=args)
        status = marker(res, nonce)
        if status is None:
            display.vvv('richt.services fast path: ran cached %s-%s' % (name, digest[:12]), host=host)
            return self._module_result(res)
        if status not in ('miss', 'tampered'):
            return 'cache unusable on the target (%s)' % status
        if status == 'tampered':
            display.warning('richt.services: the cached %s binary on %s did not match its sha256 '
                            'and was not run; it is replaced by the collection\'s binary' % (name, host))

        path = os.path.join(self._bin_dir(), name)
        try:
            with open(path, 'rb') as f:
                data = f.read()
        except OSError as e:
            return 'cannot read %s: %s' % (path, e)
        if hashlib.sha256(data).hexdigest() != digest:
            return '%s does not match bin/%s (rebuild the collection)' % (path, HASH_FILE)
        installed = self._low_level_execute_command(_script(_INSTALL, name, digest, nonce), sudoable=True, in_data=data)
        status = marker(installed, nonce)
        if status == 'cannot-execute':
            return 'cannot execute binaries in ~/%s (home mounted noexec?)' % CACHE_DIR
        if status != 'installed':
            return 'install failed (%s, rc=%s): %s' % (status, installed.get('rc'), (installed.get('stderr') or '').strip()[:300])
        display.vvv('richt.services fast path: installed %s-%s' % (name, digest[:12]), host=host)

        res = self._low_level_execute_command(run_cmd, sudoable=True, in_data=args)
        status = marker(res, nonce)
        if status is None:
            display.vvv('richt.services fast path: ran cached %s-%s' % (name, digest[:12]), host=host)
            return self._module_result(res)
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
