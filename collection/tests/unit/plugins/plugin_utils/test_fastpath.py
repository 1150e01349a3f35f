# -*- coding: utf-8 -*-
"""Unit tests of the fast path's controller side (plugins/plugin_utils/fastpath.py).

They import the collection as Ansible does, from an ansible_collections tree: run them from
the staged collection (`make ansible-units`, which runs them on ansible-core 2.14 and 2.19)
with that tree's parent on PYTHONPATH. No target and no network: the remote side is a script
of results, or the remote scripts run for real with /bin/sh in a temporary home, with a
`uname` first in PATH that says which architecture the "target" is.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import re
import shlex
import subprocess
import sys
import types

import pytest

import ansible.release
from ansible.executor import module_common
from ansible_collections.richt.services.plugins.plugin_utils import fastpath

NONCE = '0123456789abcdef'
DIGEST = 'ab' * 32
PIPELINED = 'yes'
# The architectures make build writes a build for, as `uname -m` names them.
ARCHES = ['aarch64', 'ppc64le', 's390x', 'x86_64']
# Two builds for the scripts' text (the install script carries only its own).
HASHES = {'x86_64': DIGEST, 'aarch64': 'cd' * 32}


def sha256(data):
    return hashlib.sha256(data).hexdigest()


def test_controller_under_test():
    """make ansible-units says which ansible-core each run is for; a PYTHONPATH that did not
    take would otherwise test the host's ansible-core twice."""
    want = os.environ.get('RICHT_EXPECT_ANSIBLE')
    if not want:
        pytest.skip('RICHT_EXPECT_ANSIBLE not set')
    assert ansible.release.__version__.startswith(want + '.')


# --- marker(): what counts as a message from the remote scripts ---------------------------

def miss(status, nonce=NONCE, rc=fastpath.MISS_STATUS, before='', arch='x86_64'):
    """A remote script's marker line: status, then the architecture the target reported."""
    line = 'RICHT_FASTPATH %s %s' % (nonce, status)
    if arch:
        line += ' ' + arch
    return {'rc': rc, 'stdout': before + line + '\n', 'stderr': ''}


@pytest.mark.parametrize('res, want', [
    (miss('miss'), 'miss'),
    (miss('installed'), 'installed'),
    (miss('unusable-cache  '), 'unusable-cache'),
    (miss('unsupported-arch', arch='riscv64'), 'unsupported-arch'),
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
    ({'stdout': 'RICHT_FASTPATH %s miss x86_64\n' % NONCE}, None),
    # The marker must start its line: a module echoing it inside a line does not count.
    ({'rc': fastpath.MISS_STATUS, 'stdout': 'x RICHT_FASTPATH %s miss x86_64\n' % NONCE}, None),
])
def test_marker(res, want):
    assert fastpath.marker(res, NONCE) == want


def test_marker_takes_the_first_line_with_the_nonce():
    res = {'rc': fastpath.MISS_STATUS,
           'stdout': 'RICHT_FASTPATH %s miss aarch64\nRICHT_FASTPATH %s installed x86_64\n' % (NONCE, NONCE)}
    assert fastpath.marker(res, NONCE) == 'miss'
    assert fastpath.marker_arch(res, NONCE) == ('miss', 'aarch64')


@pytest.mark.parametrize('res, want', [
    (miss('miss'), ('miss', 'x86_64')),
    (miss('miss', arch='aarch64'), ('miss', 'aarch64')),
    (miss('unsupported-arch', arch='riscv64'), ('unsupported-arch', 'riscv64')),
    # The scripts say "unknown" when uname -m fails or prints what no build could be named
    # after: no architecture to choose a build by.
    (miss('unsupported-arch', arch='unknown'), ('unsupported-arch', None)),
    # The controller checks the name again (it picks a file by it): a line that did not
    # come from the scripts' sanitised $a gives no architecture.
    (miss('miss', arch='x86_64;reboot'), ('miss', None)),
    (miss('miss', arch='../x86_64'), ('miss', None)),
    (miss('miss', arch='a' * 33), ('miss', None)),
    # A marker without an architecture (a script of an older release) still has its status.
    (miss('miss', arch=''), ('miss', None)),
    (miss('', arch=''), ('', None)),
    (miss('miss', nonce='fedcba9876543210'), None),
    (miss('miss', rc=0), None),
])
def test_marker_arch(res, want):
    assert fastpath.marker_arch(res, NONCE) == want


# --- read_hashes(): bin/SHA256SUMS -----------------------------------------------------------

def write_sums(tmp_path, text):
    (tmp_path / fastpath.HASH_FILE).write_text(text, encoding='utf-8')
    return str(tmp_path)


def test_read_hashes_one_build_per_architecture(tmp_path):
    a, b = 'a' * 64, '0123456789abcdef' * 4
    bin_dir = write_sums(tmp_path, '%s  richt-modules-x86_64\n%s *richt-modules-aarch64\n' % (a, b))
    assert fastpath.read_hashes(bin_dir) == {'x86_64': a, 'aarch64': b}


@pytest.mark.parametrize('line', [
    'A' * 64 + '  richt-modules-upper_case_hex',
    'a' * 63 + '  richt-modules-short_hash',
    'a' * 65 + '  richt-modules-long_hash',
    'g' * 64 + '  richt-modules-not_hex',
    'a' * 64 + '  richt-modules-two words',
    'a' * 64,
    '',
    '# ' + 'a' * 64 + '  richt-modules-comment',
    # Only the multi-call builds are architectures: a per-module binary of an older release,
    # a name without an architecture, a path, or a name no `uname -m` prints are not.
    'a' * 64 + '  rpm_exact',
    'a' * 64 + '  richt-modules',
    'a' * 64 + '  richt-modules-',
    'a' * 64 + '  bin/richt-modules-x86_64',
    'a' * 64 + '  richt-modules-x86_64/rpm_exact',
    'a' * 64 + '  richt-modules-' + 'x' * 33,
    'a' * 64 + '  other-tool-x86_64',
], ids=lambda line: line[64:].strip() or line[:8] or 'empty')
def test_read_hashes_skips_lines_that_are_not_a_build(tmp_path, line):
    good = 'c' * 64
    bin_dir = write_sums(tmp_path, '%s\n%s  richt-modules-s390x\n' % (line, good))
    assert fastpath.read_hashes(bin_dir) == {'s390x': good}


def test_read_hashes_without_the_file_is_empty(tmp_path):
    assert fastpath.read_hashes(str(tmp_path)) == {}
    assert fastpath.read_hashes(str(tmp_path / 'missing')) == {}


# e_machine in each build's ELF header, and its byte order (EI_DATA 1 little, 2 big endian).
ELF_MACHINES = {'x86_64': (62, 1), 'aarch64': (183, 1), 'ppc64le': (21, 1), 's390x': (22, 2)}


def staged():
    """The staged collection's bin/ (the tests run from it, see the module's docstring)."""
    return fastpath.FastPathAction._bin_dir(None)


def test_staged_sums_match_the_staged_binaries():
    """The SHA256SUMS that make build wrote is what the action reads: one line for each
    bin/richt-modules-ARCH, with the sha256 of its bytes, for every architecture EL ships.
    Each build is a 64-bit ELF for the machine its name says (a GOARCH=uname pair swapped in
    the Makefile would send targets a binary they cannot run)."""
    bin_dir = staged()
    prefix = fastpath.MULTICALL + '-'
    builds = sorted(n[len(prefix):] for n in os.listdir(bin_dir) if n.startswith(prefix))
    assert builds == ARCHES, 'builds in %s: %s (run make build)' % (bin_dir, builds)
    sums = fastpath.read_hashes(bin_dir)
    assert sorted(sums) == builds
    with open(os.path.join(bin_dir, fastpath.HASH_FILE), encoding='utf-8') as f:
        assert len([line for line in f if line.strip()]) == len(builds)
    for arch, digest in sums.items():
        path = os.path.join(bin_dir, prefix + arch)
        assert not os.path.islink(path), path
        with open(path, 'rb') as f:
            data = f.read()
        assert sha256(data) == digest, arch
        machine, order = ELF_MACHINES[arch]
        assert data[:4] == b'\x7fELF' and data[4] == 2 and data[5] == order, arch
        assert int.from_bytes(data[18:20], 'little' if order == 1 else 'big') == machine, arch


def test_staged_links_resolve_to_their_architectures_build():
    """bin/ARCH/NAME is what the normal path uploads for a target of ARCH: a relative link
    (the collection moves when it is installed) to that architecture's build, for every
    module and architecture; plugins/modules/NAME (what ansible-doc and Ansible's module
    lookup find) is the x86_64 one."""
    bin_dir = staged()
    modules_dir = os.path.join(os.path.dirname(bin_dir), 'plugins', 'modules')
    modules = sorted(n for n in os.listdir(modules_dir) if not n.endswith('.py') and not n.startswith('_'))
    assert modules, 'no module links in %s (run make build)' % modules_dir
    for name in modules:
        assert os.path.isfile(os.path.join(modules_dir, name + '.py')), 'no documentation stub for %s' % name
        link = os.path.join(modules_dir, name)
        assert os.readlink(link) == '../../bin/x86_64/' + name
        assert os.path.realpath(link) == os.path.realpath(os.path.join(bin_dir, fastpath.MULTICALL + '-x86_64'))
    for arch in ARCHES:
        assert sorted(os.listdir(os.path.join(bin_dir, arch))) == modules, arch
        build = os.path.realpath(os.path.join(bin_dir, '%s-%s' % (fastpath.MULTICALL, arch)))
        for name in modules:
            link = os.path.join(bin_dir, arch, name)
            assert os.readlink(link) == '../%s-%s' % (fastpath.MULTICALL, arch), link
            assert os.path.realpath(link) == build, link
    # What the normal path offers for each module: every architecture.
    act = action()
    for name in modules:
        assert act.builds(name) == ARCHES, name


# --- _script(): the remote scripts -------------------------------------------------------

@pytest.mark.parametrize('template', [fastpath._RUN, fastpath._INSTALL], ids=['run', 'install'])
def test_script_fills_every_placeholder(template):
    out = fastpath._script(template, 'rpm_exact', HASHES, NONCE, 'LANG=C', arch='x86_64')
    assert '@' not in out
    # Ansible appends " && sleep 0" to the command: a trailing newline would break it.
    assert out == out.strip()
    # Every marker carries the architecture, learned before anything can stop the script.
    assert 'RICHT_FASTPATH %s $1 $a' % NONCE in out
    assert out.index('a=$(uname -m') < out.index('m()')
    assert 'exit %d' % fastpath.MISS_STATUS in out


def test_run_script_names_every_build():
    """The run script carries the sha256 of every architecture's build and picks the
    target's: one script for every host, whichever it turns out to be."""
    hashes = {a: '%02x' % i * 32 for i, a in enumerate(ARCHES)}
    out = fastpath._script(fastpath._RUN, 'rpm_exact', hashes, NONCE, 'LANG=C')
    for arch, digest in hashes.items():
        assert '\n%s) x=%s ;;\n' % (arch, digest) in out
    assert '\n*) m unsupported-arch ;;\n' in out
    assert 'f=$d/richt-modules-$a-$x\n' in out
    assert '"$x "*)' in out


def test_install_script_is_for_one_build():
    out = fastpath._script(fastpath._INSTALL, 'rpm_exact', HASHES, NONCE, arch='aarch64')
    assert '[ "$a" = aarch64 ] || m arch-changed' in out
    assert 'f=$d/richt-modules-aarch64-%s\n' % HASHES['aarch64'] in out
    assert '"%s "*)' % HASHES['aarch64'] in out
    assert HASHES['x86_64'] not in out
    assert 'x86_64' not in out


def test_run_script_passes_the_environment_and_stdin():
    out = fastpath._script(fastpath._RUN, 'unit_override', HASHES, NONCE, "LANG=C FOO='a b'")
    # The multi-call build is told its module by its first argument ("-": JSON on stdin).
    assert out.endswith("LANG=C FOO='a b' exec \"$f\" unit_override -")
    # Without a task environment the binary is run by exec alone.
    assert fastpath._script(fastpath._RUN, 'unit_override', HASHES, NONCE).endswith(' exec "$f" unit_override -')


def test_install_script_verifies_before_it_renames():
    out = fastpath._script(fastpath._INSTALL, 'rpm_exact', HASHES, NONCE, arch='x86_64')
    steps = ['[ "$a" = x86_64 ]', 'cat >"$t"', 'sha256sum "$t"', '"$t" --version', 'mv -f "$t" "$f"', 'for o in', 'm installed']
    where = [out.index(s) for s in steps]
    assert where == sorted(where)


@pytest.mark.parametrize('template', [fastpath._RUN, fastpath._INSTALL], ids=['run', 'install'])
def test_scripts_are_valid_sh(template):
    script = fastpath._script(template, 'rpm_exact', HASHES, NONCE, 'LANG=C', arch='x86_64') + ' && sleep 0'
    subprocess.run(['/bin/sh', '-n', '-c', script], check=True)


# --- the remote scripts, run for real -----------------------------------------------------------

def stand_in(arch):
    """A build of richt-modules for the scripts to install and run: it answers the install
    script's --version probe, shows what it was run with, and leaves a trace in $HOME/ran
    (so a test can tell that nothing ran)."""
    return ('#!/bin/sh\n'
            '[ "$*" = --version ] && { echo "richt-modules %s"; exit 0; }\n'
            'echo %s >>"$HOME/ran"\n'
            'printf "build %s: %%s\\n" "$*"\n'
            'printf "stdin: %%s\\n" "$(cat)"\n' % (arch, arch, arch)).encode()


class Remote:
    """A target for the remote scripts: a home in tmp_path, and a `uname` first in PATH that
    prints what the test says, so every architecture can be tried on this host. Builds are
    stand_in() scripts, whose sha256 are the hashes the scripts are made with."""

    def __init__(self, tmp_path):
        self.tmp = tmp_path
        self.home = tmp_path / 'home'
        self.home.mkdir()
        self.cache = self.home / fastpath.CACHE_DIR
        self.builds = {a: stand_in(a) for a in ARCHES}
        self.hashes = {a: sha256(b) for a, b in self.builds.items()}

    def sh(self, script, uname='x86_64', uname_rc=0, stdin=b'', home=None):
        fake = self.tmp / 'fake-bin'
        fake.mkdir(exist_ok=True)
        (fake / 'uname').write_text("#!/bin/sh\nprintf '%%s\\n' %s\nexit %d\n" % (shlex.quote(uname), uname_rc), encoding='utf-8')
        (fake / 'uname').chmod(0o755)
        env = {'HOME': str(self.home) if home is None else home, 'PATH': '%s:/usr/bin:/bin' % fake}
        # As Ansible sends it: with " && sleep 0" appended.
        proc = subprocess.run(['/bin/sh', '-c', script + ' && sleep 0'], input=stdin, env=env, cwd=str(self.tmp),
                              capture_output=True, check=False, timeout=60)
        return {'rc': proc.returncode, 'stdout': proc.stdout.decode(), 'stderr': proc.stderr.decode()}

    def run(self, uname='x86_64', **kwargs):
        script = fastpath._script(fastpath._RUN, 'rpm_exact', self.hashes, NONCE)
        return self.sh(script, uname, stdin=b'{"name": "demo"}', **kwargs)

    def install(self, arch, uname=None, data=None, hashes=None):
        script = fastpath._script(fastpath._INSTALL, 'rpm_exact', hashes or self.hashes, NONCE, arch=arch)
        return self.sh(script, uname or arch, stdin=self.builds[arch] if data is None else data)

    def name(self, arch):
        return '%s-%s-%s' % (fastpath.MULTICALL, arch, self.hashes[arch])

    def put(self, arch, data=None):
        """A build in the cache as the install script leaves it (without its stamp)."""
        self.cache.mkdir(mode=0o700, parents=True, exist_ok=True)
        path = self.cache / self.name(arch)
        path.write_bytes(self.builds[arch] if data is None else data)
        path.chmod(0o700)
        return path

    def files(self):
        return sorted(os.listdir(str(self.cache)))

    def ran(self):
        path = self.home / 'ran'
        return path.read_text(encoding='utf-8').split() if path.exists() else []


@pytest.fixture(name='remote')
def remote_fixture(tmp_path):
    return Remote(tmp_path)


@pytest.mark.parametrize('home', ['', 'relative/home'])
def test_script_markers_round_trip(remote, home):
    """What the scripts print when they stop is what marker_arch() reads back."""
    res = remote.run('aarch64', home=home)
    assert fastpath.marker_arch(res, NONCE) == ('unusable-home', 'aarch64')
    assert fastpath.marker(res, NONCE) == 'unusable-home'


@pytest.mark.parametrize('arch', ARCHES)
def test_run_script_reports_a_miss_in_an_empty_home(remote, arch):
    res = remote.run(arch)
    assert fastpath.marker_arch(res, NONCE) == ('miss', arch)
    assert oct(os.stat(str(remote.cache)).st_mode & 0o777) == '0o700'
    assert remote.files() == []


@pytest.mark.parametrize('arch', ARCHES)
def test_run_script_runs_the_build_of_the_targets_arch(remote, arch):
    # A home shared by hosts of every architecture (NFS) holds one build of each.
    for other in ARCHES:
        remote.put(other)
    res = remote.run(arch)
    assert res['rc'] == 0, res
    assert fastpath.marker_arch(res, NONCE) is None
    # The multi-call build is told the module and "-", and gets the arguments on stdin.
    assert res['stdout'] == 'build %s: rpm_exact -\nstdin: {"name": "demo"}\n' % arch
    assert remote.ran() == [arch]
    # Verified once, the file's stamp spares the next run the sha256.
    assert (remote.cache / (remote.name(arch) + '.ok')).is_file()
    assert remote.run(arch)['rc'] == 0
    assert remote.ran() == [arch, arch]


@pytest.mark.parametrize('uname, uname_rc, arch', [
    ('riscv64', 0, 'riscv64'),
    ('i686', 0, 'i686'),
    ('armv7l', 0, 'armv7l'),
    # What is no architecture's name is "unknown", and never picks a build.
    ('', 0, None),
    ('x86_64 x', 0, None),
    ('*', 0, None),
    ('x86_64', 1, None),
], ids=['riscv64', 'i686', 'armv7l', 'empty', 'space', 'glob', 'uname-fails'])
def test_run_script_refuses_an_arch_without_a_build(remote, uname, uname_rc, arch):
    for other in ARCHES:
        remote.put(other)
    res = remote.run(uname, uname_rc=uname_rc)
    assert fastpath.marker_arch(res, NONCE) == ('unsupported-arch', arch)
    assert res['stdout'].endswith(' unsupported-arch %s\n' % (arch or 'unknown'))
    assert remote.ran() == []


def test_run_script_never_runs_another_archs_build(remote):
    """With only the aarch64 build in a shared home, an x86_64 host misses (and installs
    its own) rather than running what it cannot execute."""
    remote.put('aarch64')
    res = remote.run('x86_64')
    assert fastpath.marker_arch(res, NONCE) == ('miss', 'x86_64')
    assert remote.ran() == []


def test_run_script_never_runs_bytes_that_are_not_its_build(remote):
    # Another architecture's build under this one's name is caught by the sha256.
    remote.put('x86_64', data=remote.builds['aarch64'])
    res = remote.run('x86_64')
    assert fastpath.marker_arch(res, NONCE) == ('tampered', 'x86_64')
    assert remote.ran() == []


def test_run_script_hashes_again_after_a_change(remote):
    path = remote.put('x86_64')
    assert remote.run('x86_64')['rc'] == 0
    # Appending moves size, mtime and ctime: the stamp no longer vouches for the file.
    with open(str(path), 'ab') as f:
        f.write(b'# changed\n')
    res = remote.run('x86_64')
    assert fastpath.marker_arch(res, NONCE) == ('tampered', 'x86_64')
    assert remote.ran() == ['x86_64']


def test_run_script_does_not_follow_a_link(remote):
    elsewhere = remote.tmp / 'elsewhere'
    elsewhere.write_bytes(remote.builds['x86_64'])
    elsewhere.chmod(0o700)
    remote.cache.mkdir(mode=0o700, parents=True)
    (remote.cache / remote.name('x86_64')).symlink_to(elsewhere)
    res = remote.run('x86_64')
    assert fastpath.marker_arch(res, NONCE) == ('miss', 'x86_64')
    assert remote.ran() == []


def stamp(path):
    return subprocess.run(['stat', '-c', '%d %i %s %y %z', str(path)], capture_output=True, text=True, check=True).stdout


def test_install_script_installs_its_build_and_tidies_the_cache(remote):
    remote.cache.mkdir(mode=0o700, parents=True)
    old = 'richt-modules-x86_64-' + 'f' * 64
    legacy = 'rpm_exact-' + 'e' * 64
    for name in (old, old + '.ok', legacy, legacy + '.ok'):
        (remote.cache / name).write_bytes(b'older release\n')
    other = remote.put('aarch64')
    (remote.cache / (other.name + '.ok')).write_text('stamp\n', encoding='utf-8')
    # A concurrent install's temporary file is left alone; one from an hour ago is not.
    (remote.cache / '.richt-modules.fresh123').write_bytes(b'partial')
    (remote.cache / '.richt-modules.stale123').write_bytes(b'partial')
    os.utime(str(remote.cache / '.richt-modules.stale123'), (0, 0))

    res = remote.install('x86_64')
    assert fastpath.marker_arch(res, NONCE) == ('installed', 'x86_64'), res
    new = remote.cache / remote.name('x86_64')
    # Older builds of this architecture and per-module binaries of releases before the
    # multi-call binary go; another architecture's build (a shared home) stays.
    assert remote.files() == sorted(['.richt-modules.fresh123', other.name, other.name + '.ok', new.name, new.name + '.ok'])
    assert new.read_bytes() == remote.builds['x86_64']
    assert os.stat(str(new)).st_mode & 0o777 == 0o700
    assert (remote.cache / (new.name + '.ok')).read_text(encoding='utf-8') == stamp(new)
    # The --version probe ran nothing as a module.
    assert remote.ran() == []
    # What was installed is what the run script runs next.
    res = remote.run('x86_64')
    assert res['rc'] == 0 and res['stdout'].startswith('build x86_64: rpm_exact -\n')


def loosen(remote, which, mode):
    """The cache laid out as a run leaves it, then one of its directories given mode."""
    remote.put('x86_64')
    path = {'home': remote.home, 'cache-parent': remote.home / '.cache', 'cache': remote.cache}[which]
    path.chmod(mode)
    return path


@pytest.mark.parametrize('which', ['home', 'cache-parent', 'cache'])
@pytest.mark.parametrize('mode', [0o770, 0o757, 0o1777], ids=['group', 'others', 'sticky'])
def test_run_script_refuses_a_directory_others_can_write(remote, which, mode):
    """Who can write to the home, ~/.cache or the cache directory can swap the build or its
    stamp between the check and the exec: the script names the directory and runs nothing
    (pkg/statedir refuses the modules' state directories the same way)."""
    path = loosen(remote, which, mode)
    res = remote.run('x86_64')
    assert fastpath.marker_arch(res, NONCE) == (fastpath.INSECURE_STATUS, 'x86_64'), res
    assert fastpath.marker_path(res, NONCE) == str(path)
    assert remote.ran() == []
    # Not tightened behind the owner's back either.
    assert os.stat(str(path)).st_mode & 0o7777 == mode


@pytest.mark.parametrize('which', ['home', 'cache-parent', 'cache'])
def test_install_script_refuses_a_directory_others_can_write(remote, which):
    path = loosen(remote, which, 0o775)
    (remote.cache / remote.name('x86_64')).unlink()
    res = remote.install('x86_64')
    assert fastpath.marker_arch(res, NONCE) == (fastpath.INSECURE_STATUS, 'x86_64'), res
    assert fastpath.marker_path(res, NONCE) == str(path)
    assert remote.files() == []


def test_run_script_takes_a_home_closed_to_others(remote):
    """Read and search by group and others is fine: only writing is refused."""
    loosen(remote, 'home', 0o755)
    (remote.home / '.cache').chmod(0o755)
    assert remote.run('x86_64')['rc'] == 0
    assert remote.ran() == ['x86_64']


def test_install_script_refuses_when_the_arch_changed(remote):
    """The build was chosen by the run script's uname; a target that now says otherwise
    (a home shared by hosts of two architectures, a reinstalled host) gets nothing."""
    res = remote.install('x86_64', uname='aarch64')
    assert fastpath.marker_arch(res, NONCE) == ('arch-changed', 'aarch64')
    assert remote.files() == []


@pytest.mark.parametrize('data, status', [
    (stand_in('x86_64') + b'# one more line\n', 'transfer-corrupt'),
    (b'', 'transfer-corrupt'),
    # A build that cannot run here (a noexec home gives the same): found by the probe.
    (b'#!/bin/sh\nexit 1\n', 'cannot-execute'),
], ids=['corrupt', 'empty', 'cannot-execute'])
def test_install_script_leaves_nothing_behind_when_it_fails(remote, data, status):
    hashes = dict(remote.hashes)
    if status == 'cannot-execute':
        hashes['x86_64'] = sha256(data)
    res = remote.install('x86_64', data=data, hashes=hashes)
    assert fastpath.marker_arch(res, NONCE) == (status, 'x86_64')
    assert remote.files() == []


def test_install_script_accepts_the_staged_build(remote):
    """The staged build for this host passes the install script's --version probe."""
    arch = os.uname().machine
    hashes = fastpath.read_hashes(staged())
    if arch not in hashes:
        pytest.skip('no staged build for this host (%s)' % arch)
    with open(os.path.join(staged(), '%s-%s' % (fastpath.MULTICALL, arch)), 'rb') as f:
        data = f.read()
    res = remote.install(arch, data=data, hashes=hashes)
    assert fastpath.marker_arch(res, NONCE) == ('installed', arch), res
    assert remote.files() == sorted(['%s-%s-%s' % (fastpath.MULTICALL, arch, hashes[arch]),
                                     '%s-%s-%s.ok' % (fastpath.MULTICALL, arch, hashes[arch])])


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
    with the builds of two architectures, their sums, and rpm_exact's link in each
    architecture's directory. Returns the calls of the normal path, the sums (architecture
    -> sha256) and the builds' bytes."""
    calls = []
    data = {}
    for arch in ('x86_64', 'aarch64'):
        data[arch] = b'\x7fELF fake build for ' + arch.encode()
        (tmp_path / ('%s-%s' % (fastpath.MULTICALL, arch))).write_bytes(data[arch])
        (tmp_path / arch).mkdir()
        (tmp_path / arch / 'rpm_exact').symlink_to('../%s-%s' % (fastpath.MULTICALL, arch))
    hashes = {arch: sha256(build) for arch, build in data.items()}
    write_sums(tmp_path, ''.join('%s  %s-%s\n' % (hashes[a], fastpath.MULTICALL, a) for a in sorted(hashes)))

    def normal_run(self, tmp=None, task_vars=None):
        calls.append('normal')
        return {'changed': False, 'normal': True}

    def base_run(self, tmp=None, task_vars=None):
        return {}

    monkeypatch.setattr(fastpath.NormalAction, 'run', normal_run)
    monkeypatch.setattr(fastpath.ActionBase, 'run', base_run)
    monkeypatch.setattr(fastpath.FastPathAction, '_bin_dir', lambda self: str(tmp_path))
    return calls, hashes, data


class Target:
    """The remote side as a script: each low-level command gets the next answer, which is a
    result dict or a marker status (then given this task's nonce and, unless it names one,
    the target's architecture)."""

    def __init__(self, answers, arch='x86_64'):
        self.answers = list(answers)
        self.arch = arch
        self.commands = []

    def __call__(self, cmd, sudoable=False, in_data=None):
        if cmd == 'uname -m':
            # The architecture is the host's whoever runs the module: asked without become
            # (no password prompt, no sudo round trip for it).
            assert not sudoable and in_data is None
        else:
            assert sudoable
        self.commands.append((cmd, in_data))
        answer = self.answers.pop(0)
        if isinstance(answer, str):
            nonce = re.search(r'RICHT_FASTPATH ([0-9a-f]{16}) ', cmd).group(1)
            status, arch = (answer.split(' ', 1) + [''])[:2]
            return miss(status, nonce=nonce, arch=arch or self.arch)
        return answer

    def unames(self):
        return [command[0] for command in self.commands if command[0] == 'uname -m']


MODULE_OUT = {'rc': 0, 'stdout': json.dumps({'changed': False, 'observed': 'rpm-query'}), 'stderr': ''}


def uname_answer(arch, rc=0):
    """The answer to the normal path's `uname -m`."""
    return {'rc': rc, 'stdout': arch + '\n', 'stderr': ''}


def no_target(*_args, **_kwargs):
    raise AssertionError('the target was asked something')


def wired(answers=(), arch='x86_64', args=None, task=None, **kwargs):
    """An action whose low-level commands go to a Target, with what _run_fast() needs."""
    act = action(task=task or Task(args=args or {'name': 'demo'}), **kwargs)
    act._update_module_args = lambda module_name, module_args, task_vars: module_args.update(_ansible_check_mode=False)
    act._compute_environment_string = lambda: 'LANG=C'
    act._used_interpreter = None
    act._low_level_execute_command = Target(answers, arch)
    return act


def test_run_takes_the_normal_path_with_a_reason(paths):
    calls = paths[0]
    act = wired([uname_answer('x86_64')], pipelining=False)
    act._run_fast = lambda *a: pytest.fail('fast path tried')
    assert act.run(task_vars={}) == {'changed': False, 'normal': True}
    assert calls == ['normal']


@pytest.mark.parametrize('task', [
    Task(action='ansible.builtin.command'),
    Task(action='other.collection.rpm_exact'),
    Task(action='richt.services.Not-A-Name'),
], ids=['builtin', 'foreign', 'bad-name'])
def test_run_takes_the_normal_path_for_other_modules(paths, task):
    """Another module is Ansible's business: no fast path, no architecture, no lookup."""
    calls = paths[0]
    act = action(task=task)
    act._run_fast = lambda *a: pytest.fail('fast path tried')
    act._low_level_execute_command = no_target
    assert act.run(task_vars={})['normal']
    assert calls == ['normal']
    assert act._target_arch is None


def test_module_name_follows_the_resolved_action():
    assert action(task=Task(action='rpm_exact', resolved_action='richt.services.rpm_exact')).module_name == 'rpm_exact'
    assert action(task=Task(action='richt.services.unit_override')).module_name == 'unit_override'
    assert action(task=Task(action='community.general.rpm_exact')).module_name == ''


def test_run_merges_the_fast_result(paths):
    calls, hashes = paths[0], paths[1]
    act = action()
    seen = []
    act._run_fast = lambda name, h, task_vars: seen.append((name, h)) or {'changed': True, 'observed': 'memo'}
    assert act.run(task_vars={}) == {'changed': True, 'observed': 'memo'}
    assert seen == [('rpm_exact', hashes)]
    assert calls == []


def test_run_falls_back_when_the_fast_path_gives_up(paths):
    calls = paths[0]
    act = wired(['unusable-home'])
    result = act.run(task_vars={})
    assert result == {'changed': False, 'normal': True}
    assert calls == ['normal']


def test_run_remembers_a_home_that_cannot_execute(paths):
    calls = paths[0]
    act = wired(['miss', 'cannot-execute'], connection=Connection(become='sudo'), become_user='app')
    reason = 'cannot execute binaries in ~/.cache/richt.services (home mounted noexec?)'
    earlier = {'admin': 'older reason'}
    result = act.run(task_vars=facts(earlier))
    assert calls == ['normal']
    assert result['ansible_facts'][fastpath.MEMORY_FACT] == {'admin': 'older reason', 'app': reason}
    assert earlier == {'admin': 'older reason'}


@pytest.mark.parametrize('answers', [
    ['unusable-home aarch64'],
    ['unusable-cache aarch64'],
    ['miss aarch64', 'cannot-execute aarch64'],
    ['miss aarch64', 'installed aarch64', 'unusable-cache aarch64'],
], ids=['unusable-home', 'unusable-cache', 'cannot-execute', 'after-install'])
def test_run_falls_back_with_the_arch_the_script_reported(paths, answers):
    """The fast path's scripts told the target's architecture: the normal path uploads
    that build without asking again."""
    calls = paths[0]
    act = wired(answers)
    assert act.run(task_vars={})['normal']
    assert calls == ['normal']
    assert act._target_arch == 'aarch64'
    assert act._low_level_execute_command.unames() == []
    assert len(act._low_level_execute_command.commands) == len(answers)


@pytest.mark.parametrize('kwargs, task_vars', [
    ({'pipelining': False}, {}),
    ({}, {fastpath.OPT_OUT_VAR: False}),
    ({'task': Task(async_val=30)}, {}),
], ids=['pipelining-off', 'opted-out', 'async'])
def test_run_asks_the_arch_when_the_fast_path_was_not_tried(paths, kwargs, task_vars):
    calls = paths[0]
    act = wired([uname_answer('aarch64')], **kwargs)
    assert act.run(task_vars=task_vars)['normal']
    assert calls == ['normal']
    # One low-level command, without become, before anything is transferred.
    assert act._low_level_execute_command.commands == [('uname -m', None)]
    assert act._target_arch == 'aarch64'


def test_run_without_sums_takes_the_normal_path_with_the_targets_build(paths, tmp_path):
    """Without bin/SHA256SUMS (a tree not staged by make build) the fast path cannot check
    what it would cache, but the normal path still has the bin/ARCH/NAME links."""
    calls = paths[0]
    (tmp_path / fastpath.HASH_FILE).unlink()
    act = wired([uname_answer('x86_64')])
    assert act.run(task_vars={})['normal']
    assert calls == ['normal']
    assert act._target_arch == 'x86_64'


def unsupported_msg(arch, builds='aarch64, x86_64'):
    return ("richt.services.rpm_exact has no build for the target's architecture %s (uname -m); "
            "the collection has builds for: %s" % (arch, builds))


@pytest.mark.parametrize('answer, arch', [
    (uname_answer('riscv64'), 'riscv64'),
    (uname_answer('i686'), 'i686'),
    # An architecture the collection knows but without this module's link counts as none.
    (uname_answer('ppc64le'), 'ppc64le'),
    # uname that fails or prints what is no architecture: no build is chosen.
    (uname_answer('', rc=127), 'unknown'),
    (uname_answer('x86_64', rc=1), 'unknown'),
    (uname_answer('x86_64; reboot'), 'unknown'),
], ids=['riscv64', 'i686', 'ppc64le', 'no-uname', 'uname-fails', 'garbage'])
def test_run_fails_for_an_arch_without_a_build(paths, answer, arch):
    """The normal path would upload a binary the target cannot run (an exec format error
    later, or worse): the task fails first, naming what the collection has."""
    calls = paths[0]
    act = wired([answer], pipelining=False)
    result = act.run(task_vars={})
    assert result == {'failed': True, 'changed': False, 'msg': unsupported_msg(arch)}
    assert calls == []


def test_run_fails_when_the_script_finds_no_build(paths):
    calls = paths[0]
    act = wired(['unsupported-arch riscv64'])
    result = act.run(task_vars={})
    assert result == {'failed': True, 'changed': False, 'msg': unsupported_msg('riscv64')}
    assert calls == []
    assert len(act._low_level_execute_command.commands) == 1


@pytest.mark.parametrize('answers', [
    ['insecure-dir x86_64 /home/app/.cache'],
    ['miss', 'insecure-dir x86_64 /home/app/.cache'],
    ['miss', 'installed', 'insecure-dir x86_64 /home/app/.cache'],
], ids=['run', 'install', 'after-install'])
def test_run_fails_for_a_directory_others_can_write(paths, answers):
    """Neither the fast path nor, quietly, the normal path: the task fails naming the
    directory, as the modules do for a state directory others can write."""
    calls = paths[0]
    act = wired(answers)
    result = act.run(task_vars={})
    assert result['failed'] is True and result['changed'] is False
    assert '/home/app/.cache on the target is writable by group or others' in result['msg']
    assert 'chmod go-w /home/app/.cache' in result['msg']
    assert calls == []


def test_builds_are_the_architectures_with_a_link(paths, tmp_path):
    act = action()
    assert act.builds('rpm_exact') == ['aarch64', 'x86_64']
    assert act.builds('unit_override') == []
    # A dangling link (a build not staged) and a directory that is no architecture's name
    # are no builds.
    (tmp_path / 'ppc64le').mkdir()
    (tmp_path / 'ppc64le' / 'rpm_exact').symlink_to('../richt-modules-ppc64le')
    (tmp_path / 'bad arch').mkdir()
    (tmp_path / 'bad arch' / 'rpm_exact').symlink_to('../richt-modules-x86_64')
    assert act.builds('rpm_exact') == ['aarch64', 'x86_64']
    act._bin_dir = lambda: str(tmp_path / 'missing')
    assert act.builds('rpm_exact') == []


# --- _configure_module(): the file Ansible's normal path uploads --------------------------------

PARENT_PATH = '/collections/ansible_collections/richt/services/plugins/modules/rpm_exact'


def configure(monkeypatch, parent, arch='aarch64', module_name='richt.services.rpm_exact', task=None):
    """The action's _configure_module() over a parent that returns parent."""
    seen = []

    def parent_configure(self, module_name, module_args, task_vars):
        seen.append(module_name)
        return parent

    monkeypatch.setattr(fastpath.NormalAction, '_configure_module', parent_configure)
    act = action(task=task)
    act._target_arch = arch
    configured = act._configure_module(module_name=module_name, module_args={}, task_vars={})
    assert seen == [module_name]
    return configured


def test_configure_module_overrides_the_parents_signature():
    assert list(fastpath.ActionBase._configure_module.__code__.co_varnames[:4]) == ['self', 'module_name', 'module_args', 'task_vars']


@pytest.mark.parametrize('arch', ['aarch64', 'x86_64'])
@pytest.mark.parametrize('module_name', ['richt.services.rpm_exact', 'rpm_exact'])
def test_configure_module_uploads_the_targets_build_before_2_19(paths, monkeypatch, tmp_path, arch, module_name):
    """ansible-core 2.14 .. 2.18: (style, shebang, data, path); a binary module is uploaded
    from path, under its base name (the module's name, which the multi-call build runs)."""
    data = paths[2]
    configured = configure(monkeypatch, ('binary', None, b'plugins/modules build', PARENT_PATH), arch, module_name)
    assert configured == ('binary', None, data[arch], str(tmp_path / arch / 'rpm_exact'))


@pytest.mark.skipif(not hasattr(module_common, '_BuiltModule'), reason='ansible-core before 2.19 has no _BuiltModule')
@pytest.mark.parametrize('arch', ['aarch64', 'x86_64'])
def test_configure_module_uploads_the_targets_build_on_2_19(paths, monkeypatch, tmp_path, arch):
    """ansible-core 2.19: (_BuiltModule, path)."""
    data = paths[2]
    built = module_common._BuiltModule(b_module_data=b'plugins/modules build', module_style='binary', shebang=None,
                                       serialization_profile='legacy')
    bits, path = configure(monkeypatch, (built, PARENT_PATH), arch)
    assert path == str(tmp_path / arch / 'rpm_exact')
    assert bits == dataclasses.replace(built, b_module_data=data[arch])


@pytest.mark.skipif(not hasattr(module_common, '_BuiltModule'), reason='ansible-core before 2.19 has no _BuiltModule')
def test_configure_module_leaves_other_styles_alone_on_2_19(paths, monkeypatch):
    built = module_common._BuiltModule(b_module_data=b'#!/usr/bin/python', module_style='new', shebang='#!/usr/bin/python',
                                       serialization_profile='legacy')
    configured = (built, PARENT_PATH)
    assert configure(monkeypatch, configured) is configured


@pytest.mark.parametrize('parent, kwargs', [
    # A style that is not a binary module's (the async wrapper, a Python module).
    (('new', '#!/usr/bin/python', b'AnsiballZ', PARENT_PATH), {}),
    (('binary', None, b'other', '/elsewhere/async_wrapper'), {'module_name': 'ansible.legacy.async_wrapper'}),
    (('binary', None, b'other', '/elsewhere/command'), {'module_name': 'ansible.builtin.command'}),
    # No architecture chosen (a task that is not one of ours).
    (('binary', None, b'elf', PARENT_PATH), {'arch': None}),
    (('binary', None, b'elf', PARENT_PATH), {'task': Task(action='other.collection.rpm_exact')}),
], ids=['new-style', 'async-wrapper', 'other-module', 'no-arch', 'foreign-task'])
def test_configure_module_leaves_the_rest_alone(paths, monkeypatch, parent, kwargs):
    assert configure(monkeypatch, parent, **kwargs) is parent


# --- _mitogen_module_path(): the file Mitogen's planner uploads ----------------------------

class RealLoader:
    """Stands for Mitogen's module loader (ansible.plugins.loader.module_loader)."""

    package = 'ansible.modules'

    @staticmethod
    def find_plugin(name, mod_type=''):
        return '/real/%s%s' % (name, mod_type)


@pytest.fixture(name='loaders')
def loaders_fixture(monkeypatch):
    """A fake ansible_mitogen.loaders in sys.modules (the real one imports the host's
    ansible-core, whichever controller is under test)."""
    package = types.ModuleType(fastpath.MITOGEN_PACKAGE)
    package.__path__ = []
    loaders = types.ModuleType(fastpath.MITOGEN_PACKAGE + '.loaders')
    loaders.module_loader = RealLoader()
    package.loaders = loaders
    monkeypatch.setitem(sys.modules, fastpath.MITOGEN_PACKAGE, package)
    monkeypatch.setitem(sys.modules, fastpath.MITOGEN_PACKAGE + '.loaders', loaders)
    return loaders


class MitogenAction(MitogenBase, fastpath.FastPathAction):
    """The action plugin as Mitogen's strategy makes it (its ActionModuleMixin first)."""


@pytest.mark.parametrize('cls, connection', [(MitogenAction, None), (None, MitogenConnection())], ids=['mixin', 'connection'])
def test_mitogen_planner_finds_the_targets_build(paths, loaders, tmp_path, cls, connection):
    real = loaders.module_loader
    act = action(cls=cls, connection=connection)
    act._target_arch = 'aarch64'
    with act._mitogen_module_path('rpm_exact'):
        loader = loaders.module_loader
        assert loader is not real
        # Mitogen's planner asks by the task's name, as written or resolved.
        assert loader.find_plugin('richt.services.rpm_exact', '') == str(tmp_path / 'aarch64' / 'rpm_exact')
        assert loader.find_plugin('rpm_exact', '') == str(tmp_path / 'aarch64' / 'rpm_exact')
        # Every other module and attribute is the real loader's.
        assert loader.find_plugin('ansible.builtin.command', '') == '/real/ansible.builtin.command'
        assert loader.find_plugin('richt.services.unit_override', '') == '/real/richt.services.unit_override'
        assert loader.package == 'ansible.modules'
    assert loaders.module_loader is real


def test_mitogen_planner_gets_its_loader_back_after_an_exception(paths, loaders):
    real = loaders.module_loader
    act = action(cls=MitogenAction)
    act._target_arch = 'x86_64'
    with pytest.raises(RuntimeError, match='module failed'):
        with act._mitogen_module_path('rpm_exact'):
            assert loaders.module_loader is not real
            raise RuntimeError('module failed')
    assert loaders.module_loader is real


def test_mitogen_loader_is_left_alone_without_mitogen(paths, monkeypatch):
    """Without Mitogen nothing of it is imported (a controller without it must not fail)."""
    monkeypatch.setitem(sys.modules, fastpath.MITOGEN_PACKAGE + '.loaders', None)
    act = action()
    act._target_arch = 'aarch64'
    with act._mitogen_module_path('rpm_exact'):
        pass


def test_mitogen_loader_is_left_alone_without_an_arch(paths, loaders):
    real = loaders.module_loader
    act = action(cls=MitogenAction)
    act._target_arch = None
    with act._mitogen_module_path('rpm_exact'):
        assert loaders.module_loader is real


def test_run_under_mitogen_hands_the_planner_the_targets_build(paths, loaders, monkeypatch, tmp_path):
    """run() falls back to Mitogen's own path with the target's build in its loader, for the
    duration of that path only."""
    real = loaders.module_loader
    found = []

    def normal_run(self, tmp=None, task_vars=None):
        found.append(loaders.module_loader.find_plugin('richt.services.rpm_exact', ''))
        return {'changed': False, 'normal': True}

    monkeypatch.setattr(fastpath.NormalAction, 'run', normal_run)
    act = wired([uname_answer('aarch64')], cls=MitogenAction)
    assert act.run(task_vars={fastpath.OPT_OUT_VAR: False})['normal']
    assert found == [str(tmp_path / 'aarch64' / 'rpm_exact')]
    assert loaders.module_loader is real


# --- _run_fast(): the conversation with the target ------------------------------------------

def fast(paths, answers, args=None, arch='x86_64'):
    act = wired(answers, arch=arch, args=args)
    act._target_arch = None  # as run() starts
    return act._run_fast('rpm_exact', paths[1], {'inventory_hostname': 'web1'}), act._low_level_execute_command, act


def fast_result(paths, answers):
    """fast(), for the tests that look at the result and the commands only."""
    return fast(paths, answers)[:2]


def test_cached_binary_runs_in_one_command(paths):
    result, target, act = fast(paths, [MODULE_OUT])
    assert result['changed'] is False and result['observed'] == 'rpm-query'
    assert len(target.commands) == 1
    cmd, stdin = target.commands[0]
    assert cmd.endswith('LANG=C exec "$f" rpm_exact -')
    assert json.loads(stdin) == {'name': 'demo', '_ansible_check_mode': False}
    # The module ran: nothing said which architecture, and nothing needs to know.
    assert act._target_arch is None


def test_a_miss_installs_then_runs(paths):
    result, target, act = fast(paths, ['miss', 'installed', MODULE_OUT])
    assert result['observed'] == 'rpm-query'
    run1, install, run2 = target.commands
    assert run1 == run2
    assert install[1] == paths[2]['x86_64']
    assert 'mv -f "$t" "$f"' in install[0]
    assert act._target_arch == 'x86_64'


def test_a_miss_on_aarch64_installs_the_aarch64_build(paths):
    hashes, data = paths[1], paths[2]
    result, target, act = fast(paths, ['miss aarch64', 'installed aarch64', MODULE_OUT])
    assert result['observed'] == 'rpm-query'
    run1, install, run2 = target.commands
    assert run1 == run2
    assert install[1] == data['aarch64']
    assert '[ "$a" = aarch64 ] || m arch-changed' in install[0]
    assert 'f=$d/richt-modules-aarch64-%s\n' % hashes['aarch64'] in install[0]
    assert hashes['x86_64'] not in install[0]
    # The run script is the same for every architecture: it holds every build's sum.
    for arch, digest in hashes.items():
        assert '%s) x=%s ;;' % (arch, digest) in run1[0]
    assert act._target_arch == 'aarch64'


@pytest.mark.parametrize('arch', ['x86_64', 'aarch64'])
def test_a_tampered_cache_is_replaced(paths, monkeypatch, arch):
    warnings = []
    monkeypatch.setattr(fastpath.display, 'warning', lambda msg, *a, **k: warnings.append(msg))
    result, target, act = fast(paths, ['tampered', 'installed', MODULE_OUT], arch=arch)
    assert result['observed'] == 'rpm-query'
    assert len(target.commands) == 3
    assert target.commands[1][1] == paths[2][arch]
    assert '[ "$a" = %s ]' % arch in target.commands[1][0]
    assert act._target_arch == arch
    assert len(warnings) == 1 and 'cached %s binary on web1' % arch in warnings[0]


@pytest.mark.parametrize('arch, builds_msg', [
    ('riscv64', 'riscv64'),
    # A target whose uname -m failed: no architecture, and still no fallback.
    ('unknown', 'unknown'),
])
def test_an_arch_without_a_build_fails_in_one_command(paths, arch, builds_msg):
    """Ansible's normal path could not do better (it would upload a build the target cannot
    run): the task fails at once, with the target's architecture and the supported ones."""
    result, target, act = fast(paths, ['unsupported-arch'], arch=arch)
    assert result == {'failed': True, 'changed': False, 'msg': unsupported_msg(builds_msg)}
    assert 'aarch64, x86_64' in result['msg']
    assert len(target.commands) == 1
    assert act._target_arch == (None if arch == 'unknown' else arch)


@pytest.mark.parametrize('answers, want', [
    (['unusable-home'], 'cache unusable on the target (unusable-home)'),
    (['unusable-cache'], 'cache unusable on the target (unusable-cache)'),
    # A miss without an architecture the controller has a build for (a script that did not
    # say, or a name it would not pick a file by) cannot be installed.
    (['miss ppc64le'], 'cache unusable on the target (miss)'),
    (['miss unknown'], 'cache unusable on the target (miss)'),
    (['miss', 'cannot-execute'], 'cannot execute binaries in ~/.cache/richt.services (home mounted noexec?)'),
    (['miss', 'transfer-corrupt'], 'install failed (transfer-corrupt, rc=97): '),
    (['miss', 'arch-changed aarch64'], 'install failed (arch-changed, rc=97): '),
    (['miss', {'rc': 1, 'stdout': '', 'stderr': 'sh: 1: cat: Permission denied\n'}],
     'install failed (None, rc=1): sh: 1: cat: Permission denied'),
    (['miss', 'installed', 'miss'], 'cache unusable right after install (miss)'),
])
def test_fast_path_gives_up_with_a_reason(paths, answers, want):
    result, target = fast_result(paths, answers)
    assert result == want
    assert not target.answers


def test_a_binary_that_does_not_match_its_sum_is_never_sent(paths, tmp_path):
    (tmp_path / 'richt-modules-aarch64').write_bytes(b'rebuilt without make build')
    result, target = fast_result(paths, ['miss aarch64'])
    assert result == '%s does not match bin/SHA256SUMS (rebuild the collection)' % (tmp_path / 'richt-modules-aarch64')
    assert len(target.commands) == 1


def test_a_missing_build_is_never_sent(paths, tmp_path):
    (tmp_path / 'richt-modules-aarch64').unlink()
    result, target = fast_result(paths, ['miss aarch64'])
    assert result.startswith('cannot read %s: ' % (tmp_path / 'richt-modules-aarch64'))
    assert len(target.commands) == 1


@pytest.mark.parametrize('result, want', [
    ({'summary': 'demo.service: reload (config:env)'}, ['demo.service: reload (config:env)']),
    ({'summary': ['packages: demo 1.0-1 → 2.0-1', 'demo.service: restart (package:demo 1.0-1 → 2.0-1)']},
     ['packages: demo 1.0-1 → 2.0-1', 'demo.service: restart (package:demo 1.0-1 → 2.0-1)']),
    ({'summary': ['', None, 'demo.service: nothing (converged)']}, ['demo.service: nothing (converged)']),
    ({'summary': {'not': 'lines'}}, []),
    ({}, []),
    ('not a dict', []),
])
def test_summary_lines(result, want):
    assert fastpath.summary_lines(result) == want


def test_show_summary_prints_host_and_line_and_nothing_for_no_log(monkeypatch):
    shown = []
    monkeypatch.setattr(fastpath.display, 'display', lambda msg, *a, **k: shown.append(msg))
    result = {'summary': ['demo.service: reload (config:env)']}
    fastpath.show_summary(types.SimpleNamespace(no_log=False), 'web1', result)
    assert shown == ['[web1] demo.service: reload (config:env)']
    shown.clear()
    fastpath.show_summary(types.SimpleNamespace(no_log=True), 'web1', result)
    fastpath.show_summary(types.SimpleNamespace(no_log=False), 'web1', dict(result, _ansible_no_log=True))
    assert shown == []
