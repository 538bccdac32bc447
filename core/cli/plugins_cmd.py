"""``assay plugins``: what is installed, where it came from, what it offers, and what broke."""

from __future__ import annotations

import typer
from assay.cli.output import JsonOpt, emit_json, table
from assay.hooks import plugin_manager as plugin_loading


def register(app: typer.Typer, plugins: plugin_loading.Plugins) -> None:
    @app.command("plugins")
    def plugins_command(json_: bool = JsonOpt) -> None:
        """List the installed plugins: name, distribution, version, what each provides, any load error."""
        conflicts = _conflicts(plugins)
        rows = []
        for info in plugins.infos:
            provided = [] if info.error else plugin_loading.provides(plugins, info.name)
            rows.append({
                "name": info.name, "source": info.source, "module": info.module,
                "distribution": info.distribution, "version": info.version,
                "provides": provided, "error": info.error,
                "conflicts": [c for c in conflicts if f"'{info.name}'" in c],
            })
        if json_:
            emit_json(rows)
            return
        table(
            ["PLUGIN", "DISTRIBUTION", "PROVIDES", "STATE"],
            [
                (
                    r["name"],
                    f"{r['distribution']} {r['version']}" if r["distribution"] else r["source"],
                    ", ".join(
                        f"{p['kind']} {p['name']}" if p["name"] else p["kind"] for p in r["provides"]
                    ) or "-",
                    f"failed to load: {r['error']}" if r["error"]
                    else "; ".join(r["conflicts"]) or _state(r["provides"]),
                )
                for r in rows
            ],
            empty="No plugins installed.",
        )


def _conflicts(plugins: plugin_loading.Plugins) -> list[str]:
    """Name clashes between plugins, one message per kind of offering that clashes."""
    found = []
    for hook in plugin_loading.OFFERINGS:
        try:
            plugins.offered(hook)
        except plugin_loading.PluginError as e:
            found.append(str(e))
    return found


def _state(provided: list[dict]) -> str:
    unusable = [f"{p['kind']} {p['name']} can't run here: {p['reason']}" for p in provided if p.get("works") is False]
    if unusable:
        return "; ".join(unusable)
    pending = [p for p in provided if not p["implemented"]]
    if not pending:
        return "ready"
    return "not yet implemented" if len(pending) == len(provided) else f"{len(pending)} not yet implemented"
