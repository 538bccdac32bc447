"""The loaded plugins, and what each offers by name (collected lazily, checked for clashes).

Kept apart from the loader (:mod:`assay.hooks.plugin_manager`) so hookspecs can name
:class:`Plugins` without importing the loader that imports them.
"""

from __future__ import annotations

from typing import Any, Generic, TypeVar

import attrs
import pluggy
from assay.hooks.protocols import Executor, Harness, Runner, SandboxBackend, SuiteKind

T = TypeVar("T")

# hook name → what users call what it offers (each satisfies a Protocol in assay.hooks.protocols)
OFFERINGS: dict[str, str] = {
    "assay_harnesses": "harness",
    "assay_suite_kinds": "suite kind",
    "assay_graders": "grader",
    "assay_runners": "runner",
    "assay_arm_kinds": "arm kind",
    "assay_sandbox_backends": "sandbox backend",
    "assay_executors": "executor",
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

    def executors(self) -> dict[str, Executor]:
        return {k: v.value for k, v in self.offered("assay_executors").items()}
