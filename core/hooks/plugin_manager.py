"""Owns the pluggy PluginManager: loading plugins and collecting what they offer.

Plugins come from entry points of group ``assay`` (built-ins are declared there too, so they
are found exactly as third-party ones are) and from modules named, comma-separated, in
``ASSAY_PLUGINS`` (so a test process can load a fake Harness without installing anything).
A plugin that fails to load is recorded with its error and left out; the rest still work.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import os
from collections.abc import Iterable
from typing import Any, Generic, TypeVar

import attrs
import pluggy

from assay import hookspecs
from assay.protocols import Harness, Runner, SandboxBackend, SuiteKind

T = TypeVar("T")
GROUP = hookspecs.PROJECT
ENV_VAR = "ASSAY_PLUGINS"

# hook name → what users call what it offers (each satisfies a Protocol in assay.protocols)
OFFERINGS: dict[str, str] = {
    "assay_harnesses": "harness",
    "assay_suite_kinds": "suite kind",
    "assay_graders": "grader",
    "assay_runners": "runner",
    "assay_arm_kinds": "arm kind",
    "assay_sandbox_backends": "sandbox backend",
}


class PluginError(RuntimeError):
    """Plugins that can't be used together, or a plugin that broke while registering."""


@attrs.frozen
class PluginInfo:
    """One plugin as ``assay plugins`` shows it."""

    name: str
    source: str  # "entry point" or "ASSAY_PLUGINS"
    module: str
    distribution: str | None = None
    version: str | None = None
    error: str | None = None


@attrs.frozen
class Offered(Generic[T]):
    """An object a plugin offers, and which plugin offered it."""

    value: T
    plugin: str


@attrs.define
class Plugins:
    """The loaded plugins and, collected lazily, what each offers by name."""

    manager: pluggy.PluginManager
    infos: list[PluginInfo]
    _offered: dict[str, dict[str, Offered[Any]]] = attrs.field(factory=dict, init=False)

    @property
    def errors(self) -> list[PluginInfo]:
        return [i for i in self.infos if i.error]

    def offered(self, hook: str) -> dict[str, Offered[Any]]:
        """Everything offered through ``hook``, by name; two plugins offering a name is an error."""
        if hook not in self._offered:
            what = OFFERINGS[hook]
            found: dict[str, Offered[Any]] = {}
            for impl in getattr(self.manager.hook, hook).get_hookimpls():
                try:
                    values = list(impl.function() or ())
                except Exception as e:
                    raise PluginError(
                        f"plugin '{impl.plugin_name}' failed while offering its {what}s: "
                        f"{type(e).__name__}: {e}"
                    ) from e
                for value in values:
                    name = getattr(value, "name", None)
                    if not isinstance(name, str) or not name:
                        raise PluginError(
                            f"plugin '{impl.plugin_name}' offered a {what} without a name: {value!r}"
                        )
                    if name in found:
                        raise PluginError(
                            f"two plugins offer the {what} '{name}': "
                            f"'{found[name].plugin}' and '{impl.plugin_name}'"
                        )
                    found[name] = Offered(value, impl.plugin_name)
            self._offered[hook] = found
        return self._offered[hook]

    def get(self, hook: str, name: str) -> Any:
        """The object named ``name`` offered through ``hook``, or a clear error listing the choices."""
        offered = self.offered(hook)
        if name not in offered:
            what = OFFERINGS[hook]
            known = ", ".join(sorted(offered)) or "none installed"
            raise PluginError(f"unknown {what} '{name}' (known: {known})")
        return offered[name].value

    def harnesses(self) -> dict[str, Harness]:
        return {k: v.value for k, v in self.offered("assay_harnesses").items()}

    def suite_kinds(self) -> dict[str, SuiteKind]:
        return {k: v.value for k, v in self.offered("assay_suite_kinds").items()}

    def runners(self) -> dict[str, Runner]:
        return {k: v.value for k, v in self.offered("assay_runners").items()}

    def sandbox_backends(self) -> dict[str, SandboxBackend]:
        return {k: v.value for k, v in self.offered("assay_sandbox_backends").items()}


def load(*, entrypoints: bool = True, modules: Iterable[str] | None = None) -> Plugins:
    """Load every plugin: entry points of group ``assay``, then the ``ASSAY_PLUGINS`` modules."""
    pm = pluggy.PluginManager(GROUP)
    pm.add_hookspecs(hookspecs)
    infos: list[PluginInfo] = []
    if entrypoints:
        for ep in sorted(importlib.metadata.entry_points(group=GROUP), key=lambda e: e.name):
            dist = ep.dist.name if ep.dist else None
            version = ep.dist.version if ep.dist else None
            infos.append(_register(pm, ep.name, ep.value, "entry point", ep.load, dist, version))
    if modules is None:
        modules = [m.strip() for m in os.environ.get(ENV_VAR, "").split(",") if m.strip()]
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
                out.append(
                    {"kind": what, "name": getattr(v, "name", None),
                     "implemented": getattr(v, "implemented", True)}
                )
    plugin = plugins.manager.get_plugin(plugin_name)
    if plugin is not None and hasattr(plugin, "assay_commands"):
        out.append({"kind": "commands", "name": None, "implemented": True})
    return out
