# -*- coding: utf-8 -*-
"""Documentation shared by every module of the collection: the fast path's note."""

from __future__ import annotations


class ModuleDocFragment:
    DOCUMENTATION = r"""
options: {}
notes:
  - "With pipelining on, the collection's action plugin runs this module in one command on the
    target: the binary is cached under its sha256 in the effective user's
    C(~/.cache/richt.services) and verified before every run. Ansible's normal path runs it
    instead when that cannot be promised (async, C(become_method=su), a non-POSIX shell,
    C(keep_remote_files), a noexec home) or when C(richt_services_fast_path=false)."
"""
