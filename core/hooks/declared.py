"""Plugins' commands, known from their distributions' metadata without importing any plugin.

A plugin declares each command in the entry-point group ``assay.commands``: the name is the
command's, the value the ``module:function`` that registers it (called as ``function(app,
plugins)``, like the ``assay_commands`` hook). ``assay --help`` lists the command with the summary
of that function's docstring, read from its module's source, so listing the commands
imports no plugin, no pluggy and nothing a plugin imports; the plugin loads when its command
runs (or its own ``--help`` is asked for). The entry points are scanned once per process.
"""

from __future__ import annotations

import functools
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from importlib.metadata import EntryPoint, EntryPoints

GROUP = "assay.commands"
ENV_VAR = "ASSAY_PLUGINS"


def env_modules() -> list[str]:
    """The plugin modules named, comma-separated, in ``ASSAY_PLUGINS`` (loaded without being installed)."""
    return [m.strip() for m in os.environ.get(ENV_VAR, "").split(",") if m.strip()]


@functools.cache
def entry_points() -> EntryPoints:
    """Every installed distribution's entry points, read once: plugins and commands share the scan."""
    import importlib.metadata

    return importlib.metadata.entry_points()


@functools.cache
def commands() -> dict[str, EntryPoint]:
    """The declared commands by name; of two distributions declaring one name, the first sorted wins."""
    found: dict[str, EntryPoint] = {}
    for ep in sorted(entry_points().select(group=GROUP), key=lambda e: (e.name, e.value)):
        found.setdefault(ep.name, ep)
    return found


@functools.cache
def help_line(value: str) -> str:
    """The summary (first paragraph, on one line) of the docstring of ``module:function``, read from
    the module's source without running it (or "" when it has none or the source can't be found)."""
    module, _, function = value.partition(":")
    source = _source_of(module.strip())
    if source is None or not function:
        return ""
    import ast

    try:
        tree = ast.parse(source.read_text(encoding="utf-8"), str(source))
    except (OSError, SyntaxError, ValueError):
        return ""
    name = function.split("[")[0].strip()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == name:
            doc = ast.get_docstring(node) or ""
            return doc.strip().split("\n\n")[0].replace("\n", " ")
    return ""


def _source_of(module: str) -> Path | None:
    """Where ``module``'s source is, found as the import system finds it but without running any
    package on the way (``importlib.util.find_spec`` imports the parents)."""
    spec: Any = None
    path = None
    parts = module.split(".")
    for i in range(len(parts)):
        name = ".".join(parts[: i + 1])
        loaded = sys.modules.get(name)
        spec = loaded.__spec__ if loaded is not None else _find(name, path)
        if spec is None:
            return None
        path = spec.submodule_search_locations
    origin = getattr(spec, "origin", None)
    return Path(origin) if origin and origin.endswith(".py") else None


def _find(name: str, path: Any) -> Any:
    for finder in sys.meta_path:
        find_spec = getattr(finder, "find_spec", None)
        if find_spec is not None:
            spec = find_spec(name, path)
            if spec is not None:
                return spec
    return None
