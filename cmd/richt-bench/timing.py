# -*- coding: utf-8 -*-
"""Callback for richt-bench: records how long each task took (first start to last host
result), grouped by the segment the latest "BENCH <segment>" marker task named. Written as
JSON to $RICHT_BENCH_OUT when the play ends."""

from __future__ import annotations

import json
import os
import time

from ansible.plugins.callback import CallbackBase


class CallbackModule(CallbackBase):
    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = 'aggregate'
    CALLBACK_NAME = 'richt_bench_timing'
    CALLBACK_NEEDS_ENABLED = True

    def __init__(self):
        super().__init__()
        self.segment = None
        # One record per task start; an included task object can start many times (the
        # same uuid), so results go to its latest record.
        self.records = []  # [segment, name, start, end, failure message or None]
        self.latest = {}  # task uuid -> index in records

    def _start(self, task):
        name = task.get_name()
        if name.startswith('BENCH '):
            self.segment = name[len('BENCH '):]
            return
        if self.segment is None:
            return
        now = time.monotonic()
        self.latest[task._uuid] = len(self.records)
        self.records.append([self.segment, name, now, now, None])

    def v2_playbook_on_task_start(self, task, is_conditional):
        self._start(task)

    def v2_playbook_on_handler_task_start(self, task):
        self._start(task)

    def _end(self, result, *args, **kwargs):
        i = self.latest.get(result._task._uuid)
        if i is not None:
            self.records[i][3] = time.monotonic()
        return i

    v2_runner_on_ok = v2_runner_on_skipped = _end

    def _failed(self, result, *args, **kwargs):
        # Measured plays ignore errors so that the other sides still run: the failure is
        # kept here and the report shows it instead of a time.
        i = self._end(result)
        if i is not None:
            r = result._result
            msg = str(r.get('msg') or 'failed')
            # "MODULE FAILURE" says little: the last line of the traceback says what failed.
            for key in ('exception', 'module_stderr', 'module_stdout', 'stderr'):
                lines = [l for l in str(r.get(key) or '').splitlines() if l.strip()]
                if lines:
                    msg += ': ' + lines[-1]
                    break
            self.records[i][4] = ' '.join(msg.split())[:300]

    v2_runner_on_failed = v2_runner_on_unreachable = _failed

    def v2_playbook_on_stats(self, stats):
        out = [{'segment': s, 'task': n, 'seconds': e - b, 'failed': f} for s, n, b, e, f in self.records]
        with open(os.environ['RICHT_BENCH_OUT'], 'w', encoding='utf-8') as f:
            json.dump(out, f)
