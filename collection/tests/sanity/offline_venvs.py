# -*- coding: utf-8 -*-
"""Prepare ansible-test's sanity virtual environments without a package index.

ansible-test creates one virtual environment per sanity test and fills it from PyPI with
exact pins. Where PyPI cannot be reached (our CI), this creates each environment ahead of
time, with access to the system's site packages (Debian's yamllint, pycodestyle, pylint,
voluptuous, jinja2, PyYAML), at the path ansible-test computes for it and with the marker
files it checks, so ansible-test uses it as it is. An environment that exists is left alone.

Run from inside the collection tree (ansible-test reads its context from the working
directory) with the Python that ansible-test runs with:

    python3 tests/sanity/offline_venvs.py [TEST...]

where TEST is a sanity test name, or import.plugin for the import test's plugin environment;
without one, every test that has a requirements file in ansible-test's data. A test whose
packages Debian does not have (changelog: antsibull-changelog) still fails in its
environment: skip it. This relies on ansible-test's private functions (checked on 2.14).
"""

from __future__ import annotations

import glob
import json
import os
import subprocess
import sys


def main(names):
    # pylint: disable=import-outside-toplevel
    from ansible_test._internal.commands.sanity import hash_pip_commands
    from ansible_test._internal.host_configs import NativePythonConfig
    from ansible_test._internal.python_requirements import collect_requirements
    from ansible_test._internal.util import ANSIBLE_TEST_DATA_ROOT

    if not names:
        pattern = os.path.join(ANSIBLE_TEST_DATA_ROOT, 'requirements', 'sanity.*.txt')
        names = sorted(os.path.basename(path)[len('sanity.'):-len('.txt')] for path in glob.glob(pattern))

    version = '%d.%d' % sys.version_info[:2]
    python = NativePythonConfig(version=version, path=sys.executable)
    root = os.path.expanduser('~/.ansible/test/venv')
    for name in names:
        # The import test's module and plugin environments are minimized; the rest are not.
        minimize = name.startswith('import.')
        commands = collect_requirements(python=python, controller=True, ansible=False, cryptography=False,
                                        coverage=False, virtualenv=False, minimize=minimize, command=None,
                                        sanity=name)
        label = 'sanity.%s' % name if commands else 'sanity'
        path = os.path.join(root, label, version, hash_pip_commands(commands))
        if os.path.exists(os.path.join(path, 'marker.txt')):
            continue
        subprocess.run([sys.executable, '-m', 'venv', '--system-site-packages', '--without-pip', path], check=True)
        with open(os.path.join(path, 'meta.install.json'), 'w', encoding='utf-8') as f:
            json.dump({'offline': 'system site packages', 'test': name}, f)
        with open(os.path.join(path, 'meta.yaml.json'), 'w', encoding='utf-8') as f:
            # Whether PyYAML has libyaml, as ansible-test would have recorded it.
            json.dump(_libyaml(os.path.join(path, 'bin', 'python')), f)
        # ansible-test takes an environment with this marker as complete.
        with open(os.path.join(path, 'marker.txt'), 'w', encoding='utf-8'):
            pass
        print('offline_venvs: %s -> %s' % (name, path))


def _libyaml(python):
    code = 'import yaml, json; print(json.dumps(bool(getattr(yaml, "__with_libyaml__", False))))'
    out = subprocess.run([python, '-c', code], check=False, capture_output=True, text=True)
    return json.loads(out.stdout) if out.returncode == 0 else None


if __name__ == '__main__':
    main(sys.argv[1:])
