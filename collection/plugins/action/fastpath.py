# -*- coding: utf-8 -*-
"""The action of every binary module of the collection: meta/runtime.yml routes each module
to it (plugin_routing, action_plugin), and it runs the task's module through the fast path
(plugin_utils/fastpath.py)."""

from __future__ import annotations

from ansible_collections.richt.services.plugins.plugin_utils.fastpath import FastPathAction


class ActionModule(FastPathAction):
    """The module this action runs is the task's (richt.services.NAME)."""
