"""Owns the pluggy PluginManager: loading plugins and collecting what they offer.

Plugins come from entry points of group ``assay`` (built-ins are declared there too, so they
are found exactly as third-party ones are) and from modules named, comma-separated, in
``ASSAY_PLUGINS`` (so a test process can load a fake Harness without installing anything).
A plugin that fails to load is recorded with its error and left out; the rest still work.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterable
from typing import Any

import attrs
import pluggy
from assay.hooks import declared, hookspecs
from assay.hooks.loaded import OFFERINGS, PluginError, PluginInfo, Plugins

GROUP = hookspecs.PROJECT
ENV_VAR = declared.ENV_VAR


def load(*, entrypoints: bool = True, modules: Iterable[str] | None = None) -> Plugins:
    """Load every plugin: entry points of group ``assay``, then the ``ASSAY_PLUGINS`` modules."""
    pm = pluggy.PluginManager(GROUP)
    pm.add_hookspecs(hookspecs)
    infos: list[PluginInfo] = []
    if entrypoints:
        for ep in sorted(declared.entry_points().select(group=GROUP), key=lambda e: e.name):
            dist = ep.dist.name if ep.dist else None
            version = ep.dist.version if ep.dist else None
            infos.append(_register(pm, ep.name, ep.value, "entry point", ep.load, dist, version))
    if modules is None:
        modules = declared.env_modules()
    for module in modules:
        infos.append(
            _register(pm, module, module, ENV_VAR, lambda m=module: importlib.import_module(m))
        )
    return Plugins(pm, infos)


def _register(
    pm: pluggy.PluginManager,
    name: str,
    module: str,
    source: str,
    loader: Any,
    dist: str | None = None,
    version: str | None = None,
) -> PluginInfo:
    info = PluginInfo(name=name, source=source, module=module, distribution=dist, version=version)
    if pm.has_plugin(name):
        return attrs.evolve(info, error=f"a plugin named '{name}' is already loaded; this one was skipped")
    try:
        plugin = loader()
        pm.register(plugin, name=name)
    except Exception as e:
        return attrs.evolve(info, error=f"{type(e).__name__}: {e}")
    unknown = [hc.name for hc in pm.get_hookcallers(plugin) or () if not hc.has_spec()]
    if unknown:
        pm.unregister(plugin)
        return attrs.evolve(info, error=f"implements unknown hook(s): {', '.join(unknown)}")
    return info


def provides(plugins: Plugins, plugin_name: str) -> list[dict[str, Any]]:
    """What one plugin offers, for ``assay plugins``: kind, name and whether it is implemented."""
    out = []
    for hook, what in OFFERINGS.items():
        for impl in getattr(plugins.manager.hook, hook).get_hookimpls():
            if impl.plugin_name != plugin_name:
                continue
            try:
                values = list(impl.function() or ())
            except Exception as e:
                out.append({"kind": what, "name": None, "implemented": False, "error": str(e)})
                continue
            for v in values:
                entry = {"kind": what, "name": getattr(v, "name", None), "implemented": getattr(v, "implemented", True)}
                if hook == "assay_executors":  # an optional one (assay[ray]) says why it can't run here
                    check = v.check()
                    entry["works"], entry["reason"] = check.works, check.reason
                out.append(entry)
    plugin = plugins.manager.get_plugin(plugin_name)
    if plugin is not None and hasattr(plugin, "assay_commands"):
        out.append({"kind": "commands", "name": None, "implemented": True})
    module = next((i.module for i in plugins.infos if i.name == plugin_name), None)
    for name, ep in declared.commands().items():  # declared in its package (docs/plugins.md)
        if module and (ep.module == module or ep.module.startswith(module + ".")):
            out.append({"kind": "command", "name": name, "implemented": True})
    return out
