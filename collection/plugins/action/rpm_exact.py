# -*- coding: utf-8 -*-
"""Runs the rpm_exact binary through the collection's fast path (plugin_utils/fastpath.py)."""

from __future__ import annotations

from ansible_collections.richt.services.plugins.plugin_utils.fastpath import FastPathAction


class ActionModule(FastPathAction):
    """The module this action runs is named by this file's name."""
