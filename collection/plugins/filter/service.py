# -*- coding: utf-8 -*-
"""Filters used by the richt.services.service role (they run on the controller)."""

from __future__ import annotations

import re

from ansible.errors import AnsibleFilterError
from ansible.module_utils.parsing.convert_bool import boolean
from jinja2 import Undefined

_SUFFIXES = (".service", ".socket", ".timer", ".target", ".path", ".mount",
             ".automount", ".swap", ".slice", ".scope", ".device")


def _undefined(*values):
    """The first undefined input of a filter, or None. ansible-core 2.14 hands an undefined
    variable to a filter as it is (2.19 stops before calling the filter): returning it lets
    Ansible report the variable as undefined, as 2.19 does, instead of the filter reporting
    a value of the wrong type."""
    for value in values:
        if isinstance(value, Undefined):
            return value
    return None


def unit_name(name):
    """Normalise a unit name the way systemd_lifecycle does: no suffix means .service."""
    if _undefined(name) is not None:
        return name
    if not isinstance(name, str) or not name:
        raise AnsibleFilterError("unit_name: expected a unit name, got %r" % type(name).__name__)
    if name.endswith(_SUFFIXES) and not any(name == s for s in _SUFFIXES):
        return name
    return name + ".service"


def service_order(processes, reverse=False):
    """Order processes so that each comes after the units named in its `after` list
    (declared order otherwise); reverse for removal. Unknown names and cycles fail."""
    if _undefined(processes) is not None:
        return processes
    if not isinstance(processes, list):
        raise AnsibleFilterError("service_order: service_processes must be a list")
    by_unit = {}
    order = []
    for i, p in enumerate(processes):
        if not isinstance(p, dict) or "unit" not in p:
            raise AnsibleFilterError("service_processes[%d]: each process needs a unit" % i)
        u = unit_name(p["unit"])
        if u in by_unit:
            raise AnsibleFilterError("service_processes: %s is declared twice" % u)
        by_unit[u] = dict(p, unit=u)
        order.append(u)
    done, visiting, result = set(), set(), []

    def visit(u, path):
        if u in done:
            return
        if u in visiting:
            raise AnsibleFilterError("service_processes: 'after' forms a cycle: %s" % " -> ".join(path + [u]))
        visiting.add(u)
        for dep in by_unit[u].get("after") or []:
            d = unit_name(dep)
            if d not in by_unit:
                raise AnsibleFilterError("service_processes: %s is after %s, which is not a process of this service" % (u, d))
            visit(d, path + [u])
        visiting.discard(u)
        done.add(u)
        result.append(by_unit[u])

    for u in order:
        visit(u, [])
    return list(reversed(result)) if reverse else result


def _reload_flag(item):
    """A drop-in's `reload` by Ansible's own boolean rules: the string "false" is false
    (Python's bool() would call it true), and a value that is no boolean is an error."""
    value = item.get("reload", False)
    try:
        return boolean(value, strict=True)
    except TypeError:
        raise AnsibleFilterError("service_dropins: reload of the drop-in %r of %s must be a boolean, got %r"
                                 % (item.get("name"), item.get("unit"), value))


def _results(*registered):
    """The loop items of registered loop results (a missing or skipped result has none)."""
    out = []
    for result in registered:
        out.extend((result or {}).get("results") or [])
    return out


def _is_dropin(r):
    return (r.get("item") or {}).get("name") is not None


def _items_for(results, unit, want_reload=None):
    out = []
    for r in results:
        item = r.get("item") or {}
        if unit_name(item.get("unit", "")) != unit:
            continue
        if want_reload is not None and _reload_flag(item) != want_reload:
            continue
        out.append(r)
    return out


def service_package_set(packages, state="present"):
    """The service's packages as one richt.services.rpm_exact set: entries with name and
    version (state absent drops the versions), and the manager and timeout the whole set
    runs with. Entries that name different managers or timeouts cannot share one DNF
    transaction, so they fail here rather than split it."""
    if _undefined(packages) is not None:
        return packages
    if not isinstance(packages, list):
        raise AnsibleFilterError("service_packages must be a list")
    entries, shared = [], {"manager": None, "timeout": None}
    for i, p in enumerate(packages):
        if not isinstance(p, dict) or not p.get("name"):
            raise AnsibleFilterError("service_packages[%d]: each package needs a name" % i)
        entry = {"name": p["name"]}
        if state == "absent":
            entry["state"] = "absent"
        elif p.get("version") is not None:
            entry["version"] = p["version"]
        entries.append(entry)
        for key in shared:
            value = p.get(key)
            if value is None:
                continue
            if shared[key] is not None and shared[key] != value:
                raise AnsibleFilterError("service_packages[%d]: %s %r differs from %r; the service's packages move in one transaction, "
                                         "so give every package the same %s" % (i, key, value, shared[key], key))
            shared[key] = value
    return dict(packages=entries, **shared)


def service_triggers(process, packages=None, units=None, dropins=None, files=None):
    """The restart_on / reload_on triggers of one process: any package change restarts
    every process of the service; an owned unit file or a drop-in of this unit restarts it,
    or reloads it when the drop-in says reload: true. Unit files and drop-ins come as two
    registered loops (units, dropins) or as one (files, the role's: an item with a name is
    a drop-in). Unchanged results count for nothing, so passing them all is safe."""
    undefined = _undefined(process, packages, units, dropins, files)
    if undefined is not None:
        return undefined
    unit = unit_name(process["unit"])
    shared = _results(files)
    unit_results = _results(units) + [r for r in shared if not _is_dropin(r)]
    dropin_results = _results(dropins) + [r for r in shared if _is_dropin(r)]
    restart = [{"packages": packages or {"changed": False}},
               {"unit files": {"changed": False, "results": _items_for(unit_results, unit)}},
               {"drop-ins": {"changed": False, "results": _items_for(dropin_results, unit, False)}}]
    reload_items = _items_for(dropin_results, unit, True)
    reload = [{"reload drop-ins": {"changed": False, "results": reload_items}}] if reload_items else []
    return {"restart_on": restart, "reload_on": reload}


class FilterModule(object):
    def filters(self):
        return {
            "unit_name": unit_name,
            "service_order": service_order,
            "service_triggers": service_triggers,
            "service_package_set": service_package_set,
        }
