# -*- coding: utf-8 -*-
"""Unit tests of the fast path's controller side (plugins/plugin_utils/fastpath.py).

They import the collection as Ansible does, from an ansible_collections tree: run them from
the staged collection (`make ansible-units`, which runs them on ansible-core 2.14 and 2.19)
with that tree's parent on PYTHONPATH. No target and no network: the remote side is a script
of results, and the scripts themselves run only under `sh -n` or up to their first marker.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess

import pytest

import ansible.release
from ansible_collections.richt.services.plugins.plugin_utils import fastpath

NONCE = '0123456789abcdef'
DIGEST = 'ab' * 32
PIPELINED = 'yes'


def test_controller_under_test():
    """make ansible-units says which ansible-core each run is for; a PYTHONPATH that did not
    take would otherwise test the host's ansible-core twice."""
    want = os.environ.get('RICHT_EXPECT_ANSIBLE')
    if not want:
        pytest.skip('RICHT_EXPECT_ANSIBLE not set')
    assert ansible.release.__version__.startswith(want + '.')


# --- marker(): what counts as a message from the remote scripts ---------------------------

def miss(status, nonce=NONCE, rc=fastpath.MISS_STATUS, before=''):
    return {'rc': rc, 'stdout': before + 'RICHT_FASTPATH %s %s\n' % (nonce, status), 'stderr': ''}


@pytest.mark.parametrize('res, want', [
    (miss('miss'), 'miss'),
    (miss('installed'), 'installed'),
    (miss('unusable-cache  '), 'unusable-cache'),
    # Output before the marker line (a login banner, a shell warning) does not hide it.
    (miss('tampered', before='motd line\nanother\n'), 'tampered'),
    # The module's own exit status 97 without this task's nonce is the module's result.
    (miss('miss', nonce='fedcba9876543210'), None),
    ({'rc': fastpath.MISS_STATUS, 'stdout': '{"failed": true}', 'stderr': ''}, None),
    ({'rc': fastpath.MISS_STATUS, 'stdout': None}, None),
    ({'rc': fastpath.MISS_STATUS}, None),
    # The nonce's line under any other exit status is module output too.
    (miss('miss', rc=0), None),
    (miss('miss', rc=1), None),
    ({'stdout': 'RICHT_FASTPATH %s miss\n' % NONCE}, None),
    # The marker must start its line: a module echoing it inside a line does not count.
    ({'rc': fastpath.MISS_STATUS, 'stdout': 'x RICHT_FASTPATH %s miss\n' % NONCE}, None),
])
def test_marker(res, want):
    assert fastpath.marker(res, NONCE) == want


def test_marker_takes_the_first_line_with_the_nonce():
    res = {'rc': fastpath.MISS_STATUS, 'stdout': 'RICHT_FASTPATH %s miss\nRICHT_FASTPATH %s installed\n' % (NONCE, NONCE)}
    assert fastpath.marker(res, NONCE) == 'miss'


# --- read_hashes(): bin/SHA256SUMS -----------------------------------------------------------

def write_sums(tmp_path, text):
    (tmp_path / fastpath.HASH_FILE).write_text(text, encoding='utf-8')
    return str(tmp_path)


def test_read_hashes_text_and_binary_mode_lines(tmp_path):
    a, b = 'a' * 64, '0123456789abcdef' * 4
    bin_dir = write_sums(tmp_path, '%s  rpm_exact\n%s *unit_override\n' % (a, b))
    assert fastpath.read_hashes(bin_dir) == {'rpm_exact': a, 'unit_override': b}


@pytest.mark.parametrize('line', [
    'A' * 64 + '  upper_case_hex',
    'a' * 63 + '  short_hash',
    'a' * 65 + '  long_hash',
    'g' * 64 + '  not_hex',
    'a' * 64 + '  two words',
    'a' * 64,
    '',
    '# ' + 'a' * 64 + '  comment',
])
def test_read_hashes_skips_lines_that_are_not_a_sum(tmp_path, line):
    good = 'c' * 64
    bin_dir = write_sums(tmp_path, '%s\n%s  systemd_lifecycle\n' % (line, good))
    assert fastpath.read_hashes(bin_dir) == {'systemd_lifecycle': good}


def test_read_hashes_without_the_file_is_empty(tmp_path):
    assert fastpath.read_hashes(str(tmp_path)) == {}
    assert fastpath.read_hashes(str(tmp_path / 'missing')) == {}


def test_staged_sums_match_the_staged_binaries():
    """The SHA256SUMS that make build wrote is what the action reads, and it names every
    binary of the collection with the sha256 of its bytes."""
    bin_dir = fastpath.FastPathAction._bin_dir(None)
    sums = fastpath.read_hashes(bin_dir)
    binaries = sorted(n for n in os.listdir(bin_dir) if n != fastpath.HASH_FILE)
    assert binaries, 'no binaries in %s (run make build)' % bin_dir
    assert sorted(sums) == binaries
    for name, digest in sums.items():
        with open(os.path.join(bin_dir, name), 'rb') as f:
            assert hashlib.sha256(f.read()).hexdigest() == digest, name


# --- _script(): the remote scripts -------------------------------------------------------

@pytest.mark.parametrize('template', [fastpath._RUN, fastpath._INSTALL], ids=['run', 'install'])
def test_script_fills_every_placeholder(template):
    out = fastpath._script(template, 'rpm_exact', DIGEST, NONCE, 'LANG=C')
    assert '@' not in out
    # Ansible appends " && sleep 0" to the command: a trailing newline would break it.
    assert out == out.strip()
    assert 'RICHT_FASTPATH %s $1' % NONCE in out
    assert 'exit %d' % fastpath.MISS_STATUS in out
    assert '$HOME/%s/rpm_exact-%s' % (fastpath.CACHE_DIR, DIGEST) in out
    assert '"%s "*)' % DIGEST in out


def test_run_script_passes_the_environment_and_stdin():
    out = fastpath._script(fastpath._RUN, 'unit_override', DIGEST, NONCE, "LANG=C FOO='a b'")
    assert out.endswith("LANG=C FOO='a b' exec \"$f\" -")
    # Without a task environment the binary is run by exec alone.
    assert fastpath._script(fastpath._RUN, 'unit_override', DIGEST, NONCE).endswith(' exec "$f" -')


def test_install_script_verifies_before_it_renames():
    out = fastpath._script(fastpath._INSTALL, 'rpm_exact', DIGEST, NONCE)
    steps = ['cat >"$t"', 'sha256sum "$t"', '"$t" --version', 'mv -f "$t" "$f"', 'm installed']
    where = [out.index(s) for s in steps]
    assert where == sorted(where)


@pytest.mark.parametrize('template', [fastpath._RUN, fastpath._INSTALL], ids=['run', 'install'])
def test_scripts_are_valid_sh(template):
    script = fastpath._script(template, 'rpm_exact', DIGEST, NONCE, 'LANG=C') + ' && sleep 0'
    subprocess.run(['/bin/sh', '-n', '-c', script], check=True)


@pytest.mark.parametrize('home', ['', 'relative/home'])
def test_script_markers_round_trip(home, tmp_path):
    """What the scripts print when they stop is what marker() reads back."""
    script = fastpath._script(fastpath._RUN, 'rpm_exact', DIGEST, NONCE)
    proc = subprocess.run(['/bin/sh', '-c', script + ' && sleep 0'], env={'HOME': home, 'PATH': '/usr/bin:/bin'},
                          cwd=str(tmp_path), capture_output=True, text=True, check=False)
    res = {'rc': proc.returncode, 'stdout': proc.stdout, 'stderr': proc.stderr}
    assert fastpath.marker(res, NONCE) == 'unusable-home'


def test_run_script_reports_a_miss_in_an_empty_home(tmp_path):
    script = fastpath._script(fastpath._RUN, 'rpm_exact', DIGEST, NONCE)
    proc = subprocess.run(['/bin/sh', '-c', script], env={'HOME': str(tmp_path), 'PATH': '/usr/bin:/bin'},
                          capture_output=True, text=True, check=False)
    assert fastpath.marker({'rc': proc.returncode, 'stdout': proc.stdout}, NONCE) == 'miss'
    assert oct(os.stat(str(tmp_path / fastpath.CACHE_DIR)).st_mode & 0o777) == '0o700'


# --- fallback_reason(): when Ansible's normal path runs instead --------------------------

class Become:
    def __init__(self, name):
        self.name = name


class Shell:
    def __init__(self, family):
        if family is not None:
            self.SHELL_FAMILY = family


class Connection:
    def __init__(self, become=None, shell='sh'):
        self.become = Become(become) if become else None
        self._shell = Shell(shell)


class Task:
    def __init__(self, action='richt.services.rpm_exact', resolved_action=None, async_val=0, args=None):
        self.action = action
        self.resolved_action = resolved_action
        self.async_val = async_val
        self.args = args or {}


class Templar:
    """Task variables arrive templated already in these tests."""

    @staticmethod
    def template(value):
        return value


def action(task=None, connection=None, become_user=None, remote_user='admin', pipelining=True, cls=None):
    """A FastPathAction with the collaborators fallback_reason() and run() use, without
    ActionBase's constructor (whose arguments differ between ansible-core releases)."""
    cls = cls or fastpath.FastPathAction
    act = cls.__new__(cls)
    act._task = task or Task()
    act._connection = connection or Connection()
    act._templar = Templar()
    act.get_become_option = lambda name: {'become_user': become_user}[name]
    act._get_remote_user = lambda: remote_user
    act._is_pipelining_enabled = lambda module_style, wrap_async=False: pipelining and module_style == 'new' and not wrap_async
    return act


@pytest.fixture(name='constants')
def constants_fixture(monkeypatch):
    monkeypatch.setattr(fastpath.C, 'DEFAULT_DEBUG', False)
    monkeypatch.setattr(fastpath.C, 'DEFAULT_KEEP_REMOTE_FILES', False)
    return fastpath.C


def test_fast_path_when_nothing_stands_in_the_way(constants):
    assert action().fallback_reason({}) is None
    assert action(connection=Connection(become='sudo'), become_user='app').fallback_reason({}) is None
    assert action(connection=Connection(become='ansible.builtin.sudo')).fallback_reason({}) is None


@pytest.mark.parametrize('value', [False, 'false', 'no', 'off', '0', 0, 'n'])
def test_opt_out(constants, value):
    assert action().fallback_reason({fastpath.OPT_OUT_VAR: value}) == 'richt_services_fast_path is false'


@pytest.mark.parametrize('value', [True, 'true', 'yes', 1, 'on'])
def test_opt_out_left_on(constants, value):
    assert action().fallback_reason({fastpath.OPT_OUT_VAR: value}) is None


def test_opt_out_comes_first(constants, monkeypatch):
    monkeypatch.setattr(fastpath.C, 'DEFAULT_DEBUG', True)
    act = action(task=Task(async_val=10), pipelining=False)
    assert act.fallback_reason({fastpath.OPT_OUT_VAR: False}) == 'richt_services_fast_path is false'


def facts(memory):
    return {'ansible_facts': {fastpath.MEMORY_FACT: memory}}


def test_remembered_per_effective_user(constants):
    memory = {'admin': 'cannot execute binaries in ~/.cache/richt.services (home mounted noexec?)'}
    assert action().fallback_reason(facts(memory)) == 'remembered for this host: ' + memory['admin']
    # Another effective user (become) has a home of its own: not remembered for it.
    assert action(connection=Connection(become='sudo'), become_user='app').fallback_reason(facts(memory)) is None
    # become without become_user is root.
    assert action(connection=Connection(become='sudo')).fallback_reason(facts({'root': 'x'})) == 'remembered for this host: x'
    # The fact also counts when it reaches the task as a plain variable.
    assert action().fallback_reason({fastpath.MEMORY_FACT: memory}) == 'remembered for this host: ' + memory['admin']


@pytest.mark.parametrize('memory', [None, 'noexec', ['admin'], {}, {'admin': ''}])
def test_memory_that_says_nothing(constants, memory):
    assert action().fallback_reason(facts(memory)) is None


def test_memory_is_a_copy():
    original = {'admin': 'x'}
    copy = fastpath._memory(facts(original))
    copy['root'] = 'y'
    assert original == {'admin': 'x'}


@pytest.mark.parametrize('kwargs, setting, want', [
    ({'task': Task(async_val=30)}, None, 'async task'),
    ({}, 'DEFAULT_DEBUG', 'ANSIBLE_DEBUG is on'),
    ({}, 'DEFAULT_KEEP_REMOTE_FILES', 'keep_remote_files is on'),
    ({'connection': Connection(become='su')}, None, 'become_method su (only sudo is supported)'),
    ({'connection': Connection(become='community.general.doas')}, None,
     'become_method community.general.doas (only sudo is supported)'),
    ({'connection': Connection(shell='powershell')}, None, 'shell powershell is not POSIX sh'),
    ({'connection': Connection(shell='csh')}, None, 'shell csh is not POSIX sh'),
    ({'connection': Connection(shell=None)}, None, 'shell ? is not POSIX sh'),
    ({'pipelining': False}, None, 'pipelining is off'),
])
def test_fallback_reasons(constants, monkeypatch, kwargs, setting, want):
    if setting:
        monkeypatch.setattr(fastpath.C, setting, True)
    assert action(**kwargs).fallback_reason({}) == want


def test_fallback_reasons_in_order(constants, monkeypatch):
    """With several reasons at once, the first in fallback_reason()'s order is given."""
    monkeypatch.setattr(fastpath.C, 'DEFAULT_KEEP_REMOTE_FILES', True)
    act = action(task=Task(async_val=5), connection=Connection(become='su', shell='powershell'), pipelining=False)
    assert act.fallback_reason({}) == 'async task'
    act._task.async_val = 0
    assert act.fallback_reason({}) == 'keep_remote_files is on'
    monkeypatch.setattr(fastpath.C, 'DEFAULT_KEEP_REMOTE_FILES', False)
    assert act.fallback_reason({}) == 'become_method su (only sudo is supported)'
    act._connection.become = None
    assert act.fallback_reason({}) == 'shell powershell is not POSIX sh'
    act._connection._shell = Shell('sh')
    assert act.fallback_reason({}) == 'pipelining is off'


class MitogenBase:
    """Stands for a class of ansible_mitogen (connection.Connection, mixins.ActionModuleMixin)."""


MitogenBase.__module__ = 'ansible_mitogen.connection'


class MitogenConnection(MitogenBase, Connection):
    """Mitogen's ssh plugin: defined in the plugin loader's module, based on ansible_mitogen's."""


def test_mitogen_takes_the_fast_path(constants):
    """Under Mitogen the fast path runs without asking _is_pipelining_enabled() (Mitogen's
    action mixin raises there): its exec_command takes stdin with the command."""
    act = action(connection=MitogenConnection())

    def forbidden(*_args, **_kwargs):
        raise AssertionError('_is_pipelining_enabled() should never be called')
    act._is_pipelining_enabled = forbidden
    assert act.fallback_reason({}) is None
    # The opt-out and the other reasons still count.
    assert act.fallback_reason({fastpath.OPT_OUT_VAR: False}) == 'richt_services_fast_path is false'
    act._task.async_val = 5
    assert act.fallback_reason({}) == 'async task'


def test_mitogen_action_mixin_is_noticed(constants):
    """Mitogen's strategy mixes its ActionModuleMixin into the action plugin's class."""
    act = action(cls=type('ActionModule', (MitogenBase, fastpath.FastPathAction), {}))

    def forbidden(*_args, **_kwargs):
        raise AssertionError('_is_pipelining_enabled() should never be called')
    act._is_pipelining_enabled = forbidden
    assert act.fallback_reason({}) is None


# --- run(): which path a task takes --------------------------------------------------------

@pytest.fixture(name='paths')
def paths_fixture(constants, monkeypatch, tmp_path):
    """Ansible's normal path and the fast path, recorded instead of run; a bin/ directory
    with one binary and its sum."""
    calls = []
    data = b'\x7fELF fake module'
    (tmp_path / 'rpm_exact').write_bytes(data)
    write_sums(tmp_path, '%s  rpm_exact\n' % hashlib.sha256(data).hexdigest())

    def normal_run(self, tmp=None, task_vars=None):
        calls.append('normal')
        return {'changed': False, 'normal': True}

    def base_run(self, tmp=None, task_vars=None):
        return {}

    monkeypatch.setattr(fastpath.NormalAction, 'run', normal_run)
    monkeypatch.setattr(fastpath.ActionBase, 'run', base_run)
    monkeypatch.setattr(fastpath.FastPathAction, '_bin_dir', lambda self: str(tmp_path))
    return calls, hashlib.sha256(data).hexdigest()


def test_run_takes_the_normal_path_with_a_reason(paths):
    calls = paths[0]
    act = action(pipelining=False)
    act._run_fast = lambda *a: pytest.fail('fast path tried')
    assert act.run(task_vars={}) == {'changed': False, 'normal': True}
    assert calls == ['normal']


@pytest.mark.parametrize('task', [
    Task(action='ansible.builtin.command'),
    Task(action='other.collection.rpm_exact'),
    Task(action='richt.services.Not-A-Name'),
    Task(action='richt.services.dnf'),
], ids=['builtin', 'foreign', 'bad-name', 'no-binary'])
def test_run_takes_the_normal_path_for_other_modules(paths, task):
    calls = paths[0]
    act = action(task=task)
    act._run_fast = lambda *a: pytest.fail('fast path tried')
    assert act.run(task_vars={})['normal']
    assert calls == ['normal']


def test_module_name_follows_the_resolved_action():
    assert action(task=Task(action='rpm_exact', resolved_action='richt.services.rpm_exact')).module_name == 'rpm_exact'
    assert action(task=Task(action='richt.services.unit_override')).module_name == 'unit_override'
    assert action(task=Task(action='community.general.rpm_exact')).module_name == ''


def test_run_merges_the_fast_result(paths):
    calls, digest = paths
    act = action()
    seen = []
    act._run_fast = lambda name, d, task_vars: seen.append((name, d)) or {'changed': True, 'observed': 'memo'}
    assert act.run(task_vars={}) == {'changed': True, 'observed': 'memo'}
    assert seen == [('rpm_exact', digest)]
    assert calls == []


def test_run_falls_back_when_the_fast_path_gives_up(paths):
    calls = paths[0]
    act = action()
    act._run_fast = lambda *a: 'cache unusable on the target (unusable-home)'
    result = act.run(task_vars={})
    assert result == {'changed': False, 'normal': True}
    assert calls == ['normal']


def test_run_remembers_a_home_that_cannot_execute(paths):
    calls = paths[0]
    act = action(connection=Connection(become='sudo'), become_user='app')
    reason = 'cannot execute binaries in ~/.cache/richt.services (home mounted noexec?)'
    act._run_fast = lambda *a: reason
    earlier = {'admin': 'older reason'}
    result = act.run(task_vars=facts(earlier))
    assert calls == ['normal']
    assert result['ansible_facts'][fastpath.MEMORY_FACT] == {'admin': 'older reason', 'app': reason}
    assert earlier == {'admin': 'older reason'}


# --- _run_fast(): the conversation with the target ------------------------------------------

class Target:
    """The remote side as a script: each low-level command gets the next answer, which is a
    result dict or a marker status (then given this task's nonce)."""

    def __init__(self, answers):
        self.answers = list(answers)
        self.commands = []

    def __call__(self, cmd, sudoable=False, in_data=None):
        assert sudoable
        self.commands.append((cmd, in_data))
        answer = self.answers.pop(0)
        if isinstance(answer, str):
            nonce = re.search(r'RICHT_FASTPATH ([0-9a-f]{16}) ', cmd).group(1)
            return miss(answer, nonce=nonce)
        return answer


MODULE_OUT = {'rc': 0, 'stdout': json.dumps({'changed': False, 'observed': 'rpm-query'}), 'stderr': ''}


def fast(paths, answers, args=None):
    digest = paths[1]
    act = action(task=Task(args=args or {'name': 'demo'}))
    act._update_module_args = lambda module_name, module_args, task_vars: module_args.update(_ansible_check_mode=False)
    act._compute_environment_string = lambda: 'LANG=C'
    act._used_interpreter = None
    act._low_level_execute_command = target = Target(answers)
    return act._run_fast('rpm_exact', digest, {'inventory_hostname': 'web1'}), target


def test_cached_binary_runs_in_one_command(paths):
    result, target = fast(paths, [MODULE_OUT])
    assert result['changed'] is False and result['observed'] == 'rpm-query'
    assert len(target.commands) == 1
    cmd, stdin = target.commands[0]
    assert cmd.endswith('LANG=C exec "$f" -')
    assert json.loads(stdin) == {'name': 'demo', '_ansible_check_mode': False}


def test_a_miss_installs_then_runs(paths):
    result, target = fast(paths, ['miss', 'installed', MODULE_OUT])
    assert result['observed'] == 'rpm-query'
    run1, install, run2 = target.commands
    assert run1 == run2
    assert install[1] == b'\x7fELF fake module'
    assert 'mv -f "$t" "$f"' in install[0]


def test_a_tampered_cache_is_replaced(paths):
    result, target = fast(paths, ['tampered', 'installed', MODULE_OUT])
    assert result['observed'] == 'rpm-query'
    assert len(target.commands) == 3


@pytest.mark.parametrize('answers, want', [
    (['unusable-home'], 'cache unusable on the target (unusable-home)'),
    (['unusable-cache'], 'cache unusable on the target (unusable-cache)'),
    (['miss', 'cannot-execute'], 'cannot execute binaries in ~/.cache/richt.services (home mounted noexec?)'),
    (['miss', 'transfer-corrupt'], 'install failed (transfer-corrupt, rc=97): '),
    (['miss', {'rc': 1, 'stdout': '', 'stderr': 'sh: 1: cat: Permission denied\n'}],
     'install failed (None, rc=1): sh: 1: cat: Permission denied'),
    (['miss', 'installed', 'miss'], 'cache unusable right after install (miss)'),
])
def test_fast_path_gives_up_with_a_reason(paths, answers, want):
    result, target = fast(paths, answers)
    assert result == want
    assert not target.answers


def test_a_binary_that_does_not_match_its_sum_is_never_sent(paths, tmp_path):
    (tmp_path / 'rpm_exact').write_bytes(b'rebuilt without make build')
    result, target = fast(paths, ['miss'])
    assert result == '%s does not match bin/SHA256SUMS (rebuild the collection)' % (tmp_path / 'rpm_exact')
    assert len(target.commands) == 1
